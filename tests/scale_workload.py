"""The small TE workload the pytester projects of several test files share: ``scale(k)``
multiplies 64 floats by ``k`` (a program change is a new ``k``)."""

SCALE_WORKLOAD = """
import os
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload

def scale(k: float, n: int = 64):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * k, name="B")
    return Workload(name=f"scale{k:g}", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(n, "float32")], reference=lambda x: x * np.float32(k))

"""
