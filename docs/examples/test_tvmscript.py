# docs/examples/test_tvmscript.py: a Relax function written in TVMScript
import numpy as np
import pytest
from tvm.script import ir as I
from tvm.script import relax as R

from pytest_tvmperf import Workload


@I.ir_module
class AddRelu:
    @R.function
    def main(x: R.Tensor((128, 128), "float32"), y: R.Tensor((128, 128), "float32")) -> R.Tensor((128, 128), "float32"):
        with R.dataflow():
            z = R.nn.relu(R.add(x, y))
            R.output(z)
        return z


def add_relu():
    return Workload(
        name="add_relu(128x128)",
        program=AddRelu,  # entry "main", the default
        make_inputs=lambda rng, dims: [rng.standard_normal((128, 128)).astype("float32") for _ in range(2)],
        reference=lambda x, y: np.maximum(x + y, 0),
    )


@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_add_relu(tvmperf):
    tvmperf.check(add_relu())
