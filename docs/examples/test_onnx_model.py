# docs/examples/test_onnx_model.py: an ONNX model (pip install 'pytest-tvmperf[onnx]')
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_tvmperf import workloads


def gemm_relu_model():
    """Y = relu(X @ W + B), built here so the example needs no file; a path works the same."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((16, 8)).astype("float32"), "W")
    bias = numpy_helper.from_array(rng.standard_normal(8).astype("float32"), "B")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["H"]), helper.make_node("Add", ["H", "B"], ["S"]),
         helper.make_node("Relu", ["S"], ["Y"])],
        "gemm_relu",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 8])],
        initializer=[weight, bias],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_gemm_relu(tvmperf):
    # shapes= fixes the symbolic "batch"; checked against onnxruntime, which is also its peer
    tvmperf.check(workloads.onnx_workload(gemm_relu_model(), shapes={"X": [4, 16]}))
