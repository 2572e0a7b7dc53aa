"""Workloads from the users' reports (``shared/seeds``), each with a NumPy reference."""

from .mlp import mlp
from .multiply import multiply
from .rgb2yuv import rgb2yuv

__all__ = ["mlp", "multiply", "rgb2yuv"]
