"""The seed MLP's layer sizes and seeded weights, shared by ``mlp()`` (Relax) and
``torch_mlp()`` (PyTorch) so that both build the same network."""

from __future__ import annotations

import numpy as np

LAYERS = (1024, 512, 256, 128)


def mlp_weights(seed: int) -> list[tuple[str, np.ndarray]]:
    """``(name, array)`` of each layer's weight and bias: ``fc<i>.weight`` (out x in) and
    ``fc<i>.bias``, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    params = []
    for i, (n_in, n_out) in enumerate(zip(LAYERS, LAYERS[1:])):
        scale = 1.0 / np.sqrt(n_in)
        params.append((f"fc{i}.weight", (rng.standard_normal((n_out, n_in)) * scale).astype("float32")))
        params.append((f"fc{i}.bias", (rng.standard_normal(n_out) * 0.1).astype("float32")))
    return params
