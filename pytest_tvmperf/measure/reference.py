"""The reference kernel timed next to every workload, to cancel machine and process drift:
a fixed, compute-bound TE matmul (128x128x128, float32, default schedule, ~2 ms on the CI
machines). Its name is stored with every timing: normalized times are only compared
between measurements that used the same reference."""

from __future__ import annotations

import numpy as np

from pytest_tvmperf.workload import Workload

REFERENCE_NAME = "matmul128-te-default/v1"


def reference_workload(n: int = 128) -> Workload:
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")

    def make_inputs(rng: np.random.Generator, dims) -> list[np.ndarray]:
        return [rng.standard_normal((n, n)).astype("float32"), rng.standard_normal((n, n)).astype("float32")]

    return Workload(
        name=REFERENCE_NAME,
        program=te.create_prim_func([a, b, c]),
        make_inputs=make_inputs,
        reference=lambda x, y: x @ y,
        rtol=1e-3,
        atol=1e-3,
    )
