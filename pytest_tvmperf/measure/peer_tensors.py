"""NumPy arrays handed to PyTorch without a copy where it can be, and back (the ``"torch"``
peer, workloads/torch_model.py, and its per-layer profile, peer_layers.py)."""

from __future__ import annotations

from typing import Any

import numpy as np


def tensor_from_numpy(torch: Any, array: np.ndarray) -> Any:
    """A tensor sharing ``array``'s memory (a copy where not contiguous or read-only: torch warns)."""
    array = np.ascontiguousarray(array)
    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(array)


def outputs_to_numpy(torch: Any, out: Any) -> list[np.ndarray]:
    """A torch output's tensors as host NumPy arrays, in pytree order (as ``from_exported_program``'s)."""
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    return [leaf.detach().cpu().numpy() for leaf in leaves if isinstance(leaf, torch.Tensor)]
