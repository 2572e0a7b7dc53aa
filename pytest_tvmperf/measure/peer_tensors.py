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
