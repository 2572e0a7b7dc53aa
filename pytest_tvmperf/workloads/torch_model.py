"""PyTorch modules as workloads: exported with ``torch.export.export``, imported with
``tvm.relax.frontend.torch.from_exported_program``, checked against the eager module,
and timed side by side with it (the ``"torch"`` peer). Needs the optional ``torch`` extra
(``pip install 'pytest-tvmperf[torch]'``), imported lazily. A user's few lines::

    import torch
    from pytest_tvmperf.workloads import torch_workload

    def test_my_net(tvmperf):
        net = MyNet()  # any torch.nn.Module
        tvmperf.check(torch_workload(net, (torch.randn(4, 32),), dynamic_batch=True))
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pytest_tvmperf.measure.peer_tensors import outputs_to_numpy, tensor_from_numpy
from pytest_tvmperf.workload import Workload, WorkloadError, random_input
from pytest_tvmperf.workloads.mlp_weights import LAYERS, mlp_weights
from pytest_tvmperf.workloads.torch_layers import source_layers

TORCH_HINT = (
    "torch is not installed: pip install 'pytest-tvmperf[torch]' "
    "(CPU build: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
)


class TorchMissing(ImportError):
    """torch, which a PyTorch workload or peer needs, is not installed."""


def require_torch() -> Any:
    """``import torch``, or a :class:`TorchMissing` (an ImportError) saying how to install it."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise TorchMissing(TORCH_HINT) from exc


def torch_runner(module: Any) -> Callable[..., list[np.ndarray]]:
    """``run(*numpy arrays) -> [numpy arrays]`` (what the ``"torch"`` peer times): the eager
    ``module`` on zero-copy views under ``torch.inference_mode()``, outputs as NumPy views."""
    torch = require_torch()

    def run(*arrays: np.ndarray) -> list[np.ndarray]:
        with torch.inference_mode():
            out = module(*(tensor_from_numpy(torch, a) for a in arrays))
        return outputs_to_numpy(torch, out)

    run.torch_module = module  # type: ignore[attr-defined]  # its layers are timed by measure/peer_layers.py
    return run


def _example_arrays(torch: Any, example_inputs: Any) -> list[np.ndarray]:
    if isinstance(example_inputs, (torch.Tensor, np.ndarray)):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)) or not example_inputs:
        raise WorkloadError(
            "torch_workload: example_inputs must be a non-empty tuple of torch.Tensor or numpy arrays, "
            f"got {type(example_inputs).__name__}"
        )
    for i, x in enumerate(example_inputs):
        if not isinstance(x, (torch.Tensor, np.ndarray)):
            raise WorkloadError(
                f"torch_workload: example_inputs[{i}] is a {type(x).__name__}; "
                "only tensor inputs (torch.Tensor or numpy array) are supported"
            )
    return [x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x for x in example_inputs]


def torch_workload(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    name: str | None = None,
    dynamic_batch: bool | str = False,
    batch_range: tuple[int, int] = (1, 16),
    make_inputs: Callable[[np.random.Generator, Mapping[str, int]], Sequence[np.ndarray]] | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-4,
    seed: int = 0,
) -> Workload:
    """A ``torch.nn.Module`` as a Relax workload, checked against the eager module.

    module
        put in eval mode (``module.eval()``, in place): dropout and batch norm behave as
        in inference, in the export, the reference and the ``"torch"`` peer alike.
    example_inputs
        a tuple of ``torch.Tensor`` or NumPy arrays, one per ``forward`` argument: the
        shapes and dtypes of the seeded inputs, what ``torch.export`` traces with.
    dynamic_batch
        True (``"n"``) or a dim name: dim 0 of every input is one symbolic batch,
        ``torch.export.Dim(name, min=batch_range[0], max=batch_range[1])``, timed at the
        example batch and checked by Hypothesis on ``batch_range``. An example batch of 1
        is exported repeated to 2 (torch.export specializes a batch of 1 to a constant).
    name
        the workload's name (shown in reports, compared with the baseline's); by default
        the module's class name with the input shapes and dtypes.
    make_inputs
        ``make_inputs(rng, dims) -> [arrays]``; by default standard normal floats,
        integers in [0, 10) and random booleans of the example inputs' shapes.

    The weights are bound as constants (``keep_params_as_input=False``) and
    ``FoldConstant`` folds ``nn.Linear``'s weight transposes away, as
    ``mlp(bind_params=True)`` does. One output is returned unwrapped, several as a flat
    tuple in ``torch.utils._pytree`` order, as the reference does. ``peers["torch"]`` runs
    the eager module (:func:`torch_runner`). Each conv, linear and pool is kept with its
    module path (``Workload.layers``): a failure names the layer each kernel computes.
    """
    torch = require_torch()
    if not isinstance(module, torch.nn.Module):
        raise WorkloadError(f"torch_workload: module must be a torch.nn.Module, got {type(module).__name__}")
    arrays = _example_arrays(torch, example_inputs)
    specs = [(tuple(int(d) for d in a.shape), np.dtype(a.dtype)) for a in arrays]

    dim: str | None = None
    if dynamic_batch:
        dim = "n" if dynamic_batch is True else dynamic_batch
        if not (isinstance(dim, str) and dim.isidentifier()):
            raise WorkloadError(
                f"torch_workload: dynamic_batch must be a bool or a dim name like 'n', got {dynamic_batch!r}"
            )
        low, high = (int(b) for b in batch_range)
        if not 1 <= low <= high or high < 2:
            raise WorkloadError(
                f"torch_workload: batch_range must be (low, high) with 1 <= low <= high and high >= 2, "
                f"got {tuple(batch_range)}"
            )
        if any(len(shape) == 0 for shape, _ in specs):
            raise WorkloadError(
                "torch_workload: dynamic_batch needs every input to have a batch dim (dim 0); a scalar input has none"
            )
        batches = {shape[0] for shape, _ in specs}
        if len(batches) != 1:
            raise WorkloadError(
                f"torch_workload: dynamic_batch needs the same dim 0 in every input, got {sorted(batches)}"
            )
        (batch,) = batches
        if not low <= batch <= high:
            raise WorkloadError(f"torch_workload: the example batch {batch} is outside batch_range {(low, high)}")

    module.eval()
    export_args = tuple(torch.from_numpy(np.array(a)) for a in arrays)  # copies: export must not alias the caller's
    dynamic_shapes = None
    if dim is not None:
        batch_dim = torch.export.Dim(dim, min=low, max=high)
        dynamic_shapes = tuple({0: batch_dim} for _ in export_args)
        if batch == 1:  # torch.export specializes a size-1 dim: trace at batch 2, still valid for [low, high]
            export_args = tuple(torch.cat([x, x]) for x in export_args)
    try:
        exported = torch.export.export(module, export_args, dynamic_shapes=dynamic_shapes)
    except Exception as exc:  # torch raises UserError, GuardOnDataDependentSymNode, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorkloadError(f"torch_workload: torch.export.export failed for {type(module).__name__}: {first}") from exc

    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    try:
        with warnings.catch_warnings():  # torch 2.13 warns from its own deepcopy in run_decompositions
            warnings.filterwarnings(
                "ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning
            )
            mod = from_exported_program(exported, keep_params_as_input=False, unwrap_unit_return_tuple=True)
    except Exception as exc:  # an operator the frontend does not convert, ...
        raise WorkloadError(
            f"torch_workload: tvm.relax.frontend.torch.from_exported_program failed for "
            f"{type(module).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc!r}"
        ) from exc
    mod = relax.transform.FoldConstant()(mod)

    run = torch_runner(module)

    def reference(*inputs: np.ndarray) -> list[np.ndarray]:
        return [np.array(o) for o in run(*inputs)]  # copies: the next call may reuse torch's buffers

    def seeded_inputs(rng: np.random.Generator, dims: Mapping[str, int]) -> list[np.ndarray]:
        """Of the example inputs' shapes and dtypes; dim 0 from ``dims[dim]``."""
        return [
            random_input(rng, shape if dim is None else (dims[dim], *shape[1:]), dtype, f"torch_workload input {i}")
            for i, (shape, dtype) in enumerate(specs)
        ]

    if not name:
        shapes = ", ".join(f"{dtype}{list(shape)}" for shape, dtype in specs)
        dynamic = [] if dim is None else [f"dynamic_batch={dim!r} in {tuple(batch_range)}"]
        name = f"torch_workload({', '.join([repr(type(module).__name__), f'[{shapes}]', *dynamic])})"
    return Workload(
        name=name,
        program=mod,
        make_inputs=make_inputs or seeded_inputs,
        reference=reference,
        rtol=rtol,
        atol=atol,
        dims={dim: batch} if dim is not None else {},
        dim_ranges={dim: (low, high)} if dim is not None else {},
        seed=seed,
        peers={"torch": lambda: torch_runner(module)},
        reference_name="eager torch",
        made_by="torch_workload",
        layers=source_layers(exported),
    )


def mlp_module(seed: int = 0) -> Any:
    """The seed MLP, three ``nn.Linear`` with no activation between (as in the reports), ``mlp()``'s weights."""
    torch = require_torch()
    weights = dict(mlp_weights(seed))
    layers = [torch.nn.Linear(n_in, n_out) for n_in, n_out in zip(LAYERS, LAYERS[1:])]
    with torch.no_grad():
        for i, layer in enumerate(layers):
            layer.weight.copy_(torch.from_numpy(weights[f"fc{i}.weight"]))
            layer.bias.copy_(torch.from_numpy(weights[f"fc{i}.bias"]))
    return torch.nn.Sequential(*layers).eval()


def torch_mlp(batch: int | str = 1, seed: int = 0, example_batch: int = 4) -> Workload:
    """The seed MLP (``mlp()``'s network and weights) written in PyTorch, imported with
    ``from_exported_program``. ``batch``: an int, or a dim name (``"n"``) for a dynamic
    batch timed at ``example_batch`` and checked by Hypothesis on batches 1..16."""
    if isinstance(batch, bool) or not (isinstance(batch, int) or (isinstance(batch, str) and batch.isidentifier())):
        raise ValueError(f"torch_mlp(batch={batch!r}): batch must be an int or a dim name like 'n'")
    if isinstance(batch, int) and batch < 1:
        raise ValueError(f"torch_mlp(batch={batch}): batch must be >= 1 or a dim name like 'n'")
    dynamic = isinstance(batch, str)
    rows = example_batch if dynamic else batch
    example = (np.zeros((rows, LAYERS[0]), dtype="float32"),)
    name = f"torch_mlp(batch={batch!r}{f', example_batch={example_batch}' if dynamic else ''})"
    return torch_workload(mlp_module(seed), example, name=name, dynamic_batch=batch if dynamic else False, seed=seed)
