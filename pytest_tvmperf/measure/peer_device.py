"""Where a peer framework runs: on the test's device where it can. A test on a GPU
(``cuda``) times its ``"torch"`` peer's module on that GPU, the inputs uploaded once and
the GPU waited for, as TVM's time is taken (a CPU torch time beside a GPU one would say
nothing of either). Plain-function peers (NumPy, onnxruntime's CPU session) run where
they are, as the users' reports ask (the RGB->YUV operator on the GPU against NumPy)."""

from __future__ import annotations

import copy
import importlib
from typing import Any, Callable, Sequence

import numpy as np

from pytest_tvmperf.measure.peer_tensors import outputs_to_numpy, tensor_from_numpy
from pytest_tvmperf.workload import PeerUnavailable


def peer_for_device(run: Callable[..., Any], device_type: str, torch: Any = None) -> Callable[..., Any]:
    """``run`` (a peer's runner) for a test on ``device_type``: a torch module's runner moved
    (a copy) to the GPU for ``cuda``, PeerUnavailable where torch sees no CUDA device;
    anything else unchanged. ``torch``: the module (tests give a stand-in)."""
    module = getattr(run, "torch_module", None)
    if device_type != "cuda" or module is None or getattr(run, "device", "cpu") == "cuda":
        return run
    torch = torch if torch is not None else importlib.import_module("torch")
    if not torch.cuda.is_available():
        raise PeerUnavailable(
            f"the test runs on cuda and torch {torch.__version__} sees no CUDA device here (built for CUDA: "
            f"{torch.version.cuda or 'no'}): a CPU torch time would not compare with TVM's GPU time"
        )
    return cuda_runner(torch, copy.deepcopy(module).to("cuda").eval())


def cuda_runner(torch: Any, module: Any) -> Callable[..., Any]:
    """``run(*arrays) -> [arrays]`` (the check); timed: ``run(*run.device_inputs(arrays))``, all on the GPU."""

    def run(*arrays: Any) -> Any:
        on_device = bool(arrays) and all(isinstance(a, torch.Tensor) for a in arrays)
        with torch.inference_mode():
            out = module(*(arrays if on_device else upload(arrays)))
        torch.cuda.synchronize()
        return out if on_device else outputs_to_numpy(torch, out)

    def upload(arrays: Sequence[np.ndarray]) -> list[Any]:
        return [tensor_from_numpy(torch, a).to("cuda") for a in arrays]

    run.torch_module = module  # type: ignore[attr-defined]  # its layers, timed on the GPU (peer_layers.py)
    run.device = "cuda"  # type: ignore[attr-defined]
    run.device_inputs = upload  # type: ignore[attr-defined]
    return run


def timing_args(run: Callable[..., Any], inputs: Sequence[np.ndarray]) -> Sequence[Any]:
    """The arguments ``run`` is timed on: the inputs uploaded once to its device, or as they are."""
    upload = getattr(run, "device_inputs", None)
    return upload(inputs) if upload is not None else inputs
