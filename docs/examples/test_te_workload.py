# docs/examples/test_te_workload.py: a TE kernel, run directly by the prim executor
import pytest
from tvm import te

from pytest_tvmperf import Workload


def scale2(n=4096):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    return Workload(
        name=f"scale2(n={n})",
        program=te.create_prim_func([a, b]),  # outputs come after inputs (destination passing)
        make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
        reference=lambda x: x * 2.0,  # what the program must compute, in NumPy
        rtol=1e-6,
        atol=1e-6,
    )


@pytest.mark.tvmperf(executors=["prim"])  # a PrimFunc runs under prim only
def test_scale2(tvmperf):
    tvmperf.check(scale2())
