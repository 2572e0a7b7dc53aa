"""Workloads from the users' reports (``shared/seeds``), each with a NumPy reference."""

from pytest_tvmperf.workloads.dla import DLA_LAYERS, dla_conv
from pytest_tvmperf.workloads.dla34 import dla34, dla34_module
from pytest_tvmperf.workloads.mlp import mlp
from pytest_tvmperf.workloads.multiply import multiply
from pytest_tvmperf.workloads.onnx_model import bundled_onnx, onnx_workload, small_mlp_onnx
from pytest_tvmperf.workloads.rgb2yuv import rgb2yuv
from pytest_tvmperf.workloads.torch_model import torch_mlp, torch_workload

__all__ = [
    "DLA_LAYERS",
    "bundled_onnx",
    "dla34",
    "dla34_module",
    "dla_conv",
    "mlp",
    "multiply",
    "onnx_workload",
    "rgb2yuv",
    "small_mlp_onnx",
    "torch_mlp",
    "torch_workload",
]
