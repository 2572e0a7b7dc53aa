"""Workloads from the users' reports (``shared/seeds``), each with a NumPy reference."""

from .dla import DLA_LAYERS, dla_conv
from .mlp import mlp
from .multiply import multiply
from .onnx_model import bundled_onnx, onnx_workload, small_mlp_onnx
from .rgb2yuv import rgb2yuv
from .torch_model import torch_mlp, torch_workload

__all__ = ["DLA_LAYERS", "bundled_onnx", "dla_conv", "mlp", "multiply", "onnx_workload", "rgb2yuv", "small_mlp_onnx", "torch_mlp",
           "torch_workload"]
