"""The peers' inputs: NumPy arrays handed to PyTorch without a copy where it can be
(the ``"torch"`` peer, workloads/torch_model.py, and its per-layer profile,
peer_layers.py)."""

from __future__ import annotations

from typing import Any

import numpy as np


def tensor_from_numpy(torch: Any, array: np.ndarray) -> Any:
    """A tensor sharing ``array``'s memory (a copy only when it is not contiguous or is
    read-only, which torch.from_numpy does not accept without a warning)."""
    array = np.ascontiguousarray(array)
    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(array)


def outputs_to_numpy(torch: Any, out: Any) -> list[np.ndarray]:
    """The tensors of a torch module's output (a tensor, or nested tuples/lists/dicts of
    them) as NumPy arrays, in the order ``from_exported_program`` returns them (pytree
    order), copied to the host from wherever they are."""
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    return [leaf.detach().cpu().numpy() for leaf in leaves if isinstance(leaf, torch.Tensor)]
