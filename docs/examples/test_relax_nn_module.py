# docs/examples/test_relax_nn_module.py: a Relax model written with tvm.relax.frontend.nn
import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend import nn

from pytest_tvmperf import Workload


class TinyMLP(nn.Module):
    def __init__(self):
        self.fc0 = nn.Linear(64, 32)
        self.fc1 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc1(nn.relu(self.fc0(x)))


def tiny_mlp(batch=4, bind_weights=False):
    # export_tvm names the Relax function after the key of the spec ("forward"): that is the
    # workload's entry; it returns the module and its weights as (name, parameter) pairs, in
    # the order the function takes them after its inputs
    mod, named_params = TinyMLP().export_tvm({"forward": {"x": nn.spec.Tensor((batch, 64), "float32")}})
    rng = np.random.default_rng(0)
    weights = [(name, rng.standard_normal(p.shape).astype(p.dtype) * 0.1) for name, p in named_params]
    w = dict(weights)

    def reference(x):  # nn.Linear stores its weight as (out_features, in_features)
        h = np.maximum(x @ w["fc0.weight"].T + w["fc0.bias"], 0)
        return h @ w["fc1.weight"].T + w["fc1.bias"]

    if bind_weights:  # weights as constants of the module: none are passed at run time
        mod = relax.transform.BindParams("forward", {k: tvm.runtime.tensor(v) for k, v in weights})(mod)
        mod = relax.transform.FoldConstant()(mod)
    return Workload(
        name=f"tiny_mlp(batch={batch}, bind_weights={bind_weights})",
        program=mod,
        entry="forward",
        make_inputs=lambda rng, dims: [rng.standard_normal((batch, 64)).astype("float32")],
        reference=reference,
        params=() if bind_weights else weights,  # run-time weights follow the inputs
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_tiny_mlp(tvmperf):
    tvmperf.check(tiny_mlp())


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_tiny_mlp_bound_weights(tvmperf):
    tvmperf.check(tiny_mlp(bind_weights=True))
