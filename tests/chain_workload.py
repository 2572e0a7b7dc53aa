"""The Relax model the pytester projects of test_resources.py and test_peak_memory.py
share: ``chain(hidden)``, x (n, 16) -> (n, hidden) -> (n, 4) with its weights bound. A
wider hidden layer allocates more at run time (and holds more during the call), with the
same instructions, calls, kernels and planned storage (none: n is dynamic)."""

CHAIN_WORKLOAD = """
import os

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend import nn

from pytest_tvmperf import Workload


def chain(hidden, n=3, tol=1e-4):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((hidden, 16)).astype("float32")
    w2 = rng.standard_normal((4, hidden)).astype("float32")

    class Chain(nn.Module):
        def __init__(self):
            self.fc0 = nn.Linear(16, hidden, bias=False)
            self.fc1 = nn.Linear(hidden, 4, bias=False)

        def forward(self, x):
            return self.fc1(self.fc0(x))

    mod, _ = Chain().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 16), "float32")}})
    weights = {"fc0.weight": tvm.runtime.tensor(w1), "fc1.weight": tvm.runtime.tensor(w2)}
    return Workload(name="chain", program=relax.transform.BindParams("forward", weights)(mod), entry="forward",
                    make_inputs=lambda rng, d: [rng.standard_normal((d["n"], 16)).astype("float32")],
                    reference=lambda x: x @ w1.T @ w2.T, dims={"n": n}, rtol=tol, atol=tol)

"""
