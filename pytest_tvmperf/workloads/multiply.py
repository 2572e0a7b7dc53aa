"""Element-wise A*B over symbolic (m, n), from the TE tutorial (seed ``tvm-workflow-notes``)."""

from __future__ import annotations

import numpy as np

from pytest_tvmperf.workload import Workload


def multiply(m: int = 1024, n: int = 1024) -> Workload:
    """``C = A * B`` for symbolic m, n, timed at (m, n), checked by Hypothesis up to 64x64."""
    from tvm import te

    dim_m, dim_n = te.var("m"), te.var("n")
    a = te.placeholder((dim_m, dim_n), name="A")
    b = te.placeholder((dim_m, dim_n), name="B")
    c = te.compute((dim_m, dim_n), lambda i, j: a[i, j] * b[i, j], name="C")

    def make_inputs(rng: np.random.Generator, dims) -> list[np.ndarray]:
        shape = (dims["m"], dims["n"])
        return [rng.standard_normal(shape).astype("float32"), rng.standard_normal(shape).astype("float32")]

    return Workload(
        name="multiply()",
        program=te.create_prim_func([a, b, c]),
        make_inputs=make_inputs,
        reference=lambda x, y: x * y,
        dims={"m": m, "n": n},
        dim_ranges={"m": (1, 64), "n": (1, 64)},
    )
