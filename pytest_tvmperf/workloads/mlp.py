"""The 3-layer MLP (dense+bias 1024-512-256-128) of the VM reports: seeds
``vm-api-params-mismatch`` (weights bound as constants vs passed at run time: 22 vs 16
instructions, 1.65x time) and ``vm-dynamic-shape-slowdown`` (dynamic batch up to 4.5x
slower than static, 85 vs 22 instructions)."""

from __future__ import annotations

import numpy as np

from pytest_tvmperf.workload import Workload
from pytest_tvmperf.workloads.mlp_weights import LAYERS, mlp_weights


def mlp(batch: int | str = 1, bind_params: bool = True, run_batch: int = 1, seed: int = 0) -> Workload:
    """dense+bias 1024-512-256-128 as a Relax module from ``tvm.relax.frontend.nn``.

    batch
        an int, or a name (``"n"``) for a dynamic batch timed at ``run_batch`` and checked
        by Hypothesis on batches 1..16.
    bind_params
        True: weights bound as constants (``BindParams`` + ``FoldConstant``, folding the
        weight transposes away); False: weights passed at run time.
    """
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn

    if isinstance(batch, int):
        if batch < 1:
            raise ValueError(f"mlp(batch={batch}): batch must be >= 1 or a dim name like 'n'")
    elif not (isinstance(batch, str) and batch.isidentifier()):
        raise ValueError(f"mlp(batch={batch!r}): batch must be an int or a dim name like 'n'")

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc0 = nn.Linear(LAYERS[0], LAYERS[1])
            self.fc1 = nn.Linear(LAYERS[1], LAYERS[2])
            self.fc2 = nn.Linear(LAYERS[2], LAYERS[3])

        def forward(self, x):
            return self.fc2(self.fc1(self.fc0(x)))

    mod, _ = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((batch, LAYERS[0]), "float32")}})
    weights = mlp_weights(seed)
    if bind_params:
        mod = relax.transform.BindParams("forward", {k: tvm.runtime.tensor(v) for k, v in weights})(mod)
        mod = relax.transform.FoldConstant()(mod)
    w = dict(weights)

    def reference(x: np.ndarray) -> np.ndarray:
        h = x
        for i in range(3):
            h = h @ w[f"fc{i}.weight"].T + w[f"fc{i}.bias"]
        return h

    dynamic = isinstance(batch, str)

    def torch_peer():
        """The same layers in eager PyTorch (``nn.Linear`` x 3; on a GPU test, on the GPU)."""
        from pytest_tvmperf.workloads.torch_model import mlp_module, torch_runner

        return torch_runner(mlp_module(seed))  # the same weights

    def make_inputs(rng: np.random.Generator, dims) -> list[np.ndarray]:
        rows = dims[batch] if dynamic else batch
        return [rng.standard_normal((rows, LAYERS[0])).astype("float32")]

    return Workload(
        name=f"mlp(batch={batch!r}, bind_params={bind_params})",
        program=mod,
        make_inputs=make_inputs,
        reference=reference,
        params=() if bind_params else tuple(weights),
        entry="forward",
        rtol=1e-4,
        atol=1e-4,
        dims={batch: run_batch} if dynamic else {},
        dim_ranges={batch: (1, 16)} if dynamic else {},
        seed=seed,
        peers={"numpy": lambda: reference, "torch": torch_peer},
    )
