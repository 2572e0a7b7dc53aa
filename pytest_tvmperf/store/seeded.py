"""Baselines without the weights' values (the default): the baseline's program is rebuilt
with seeded tensors of the stored dtypes and shapes.

Why that times the same: a kernel's run time does not depend on the values it reads, as
long as they are finite and normal. The exceptions (docs/gate.md): data-dependent control
flow, kernels that skip zeros, denormals (slow on many CPUs), NaN and Inf, and shapes that
depend on values (``nonzero``, ``argwhere``, ``unique``). Such a program records its weights
bit-exactly: ``--tvmperf-baseline-weights=exact`` or marker ``baseline_weights="exact"``.

Seeded: each floating-point tensor (float16/32/64) of at least :data:`MIN_BYTES` bound into
the IR; integer tensors (maybe indices or shapes) keep their values (weight files,
store/weights.py, when large). The IR keeps a seeded tensor's header with no data; the
entry lists its dtype, shape and the sha256 of its bytes (``ir.seeded``,
values/seeded_weight.py), so a changed weight is still seen.

The values (:func:`seeded_values`, rule ``seeded-v1``): a fixed-seed generator per tensor
(its position), magnitudes uniform in [0.5, 1.5] (never zero, never denormal); a tensor of
two or more dimensions (a conv or dense weight) gets random signs and is scaled by
1/sqrt(its fan-in, the elements per output channel; at least 2^-10), so activations keep
their magnitude through a deep network; a vector (a bias, a batch norm's scale or
variance) stays positive, so its square root or logarithm is no NaN.

The entry and the IR come from the repository: each description is parsed against the
allowlist, matched against the IR's header, and the total bounded by ``$TVMPERF_MAX_IR_MB``
before anything is allocated.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_tvmperf.store.weights import MIN_BYTES as FILE_MIN_BYTES
from pytest_tvmperf.store.weights import Weight, WeightError, parse_header, take, tensors
from pytest_tvmperf.values.seeded_weight import DTYPES, SeededWeight

#: floating-point tensors from this size on are seeded (smaller ones: scalars, a few
#: channels' parameters, stay in the IR with their values)
MIN_BYTES = 64
#: the seed of every generator (with the tensor's position)
SEED = 47
#: the smallest scale of a weight: float16's smallest normal number is 2^-14
MIN_SCALE = 2.0**-10
_NAMES = {f"f{size}": name for name, size in DTYPES.items()}


def seeded_values(weight: SeededWeight, position: int) -> np.ndarray:
    """The seeded tensor of ``weight``'s dtype and shape (rule ``seeded-v1``, see above)."""
    rng = np.random.default_rng([SEED, position])
    count = weight.nbytes // DTYPES[weight.dtype]
    values = rng.uniform(0.5, 1.5, count)
    if len(weight.shape) >= 2 and weight.shape[0] > 0:
        fan_in = max(1, count // weight.shape[0])
        values *= max(fan_in**-0.5, MIN_SCALE)
        values *= rng.integers(0, 2, count) * 2 - 1
    return values.astype(np.dtype(weight.dtype).newbyteorder("<")).reshape(weight.shape)


def split_seeded(graph: dict[str, Any]) -> tuple[list[Weight], list[SeededWeight]]:
    """Take the weights out of a ``save_json`` graph (in place), in node order: a float
    tensor of at least :data:`MIN_BYTES` keeps its header only, described by a SeededWeight;
    another of at least store/weights.py's ``MIN_BYTES`` becomes a weight file."""
    files: list[Weight] = []
    seeded: list[SeededWeight] = []
    for index, node, raw, head in tensors(graph, MIN_BYTES):
        if head.dtype in _NAMES and head.nbytes >= MIN_BYTES:
            sha = hashlib.sha256(raw[head.size :]).hexdigest()  # of its little-endian bytes, as TVM serializes them
            seeded.append(SeededWeight(_NAMES[head.dtype], head.shape, sha))
            node["data"] = base64.b64encode(raw[: head.size]).decode("ascii")
        elif head.nbytes >= FILE_MIN_BYTES:
            files.append(take(index, node, raw, head))
    return files, seeded


def unfilled(graph: dict[str, Any]) -> list[tuple[int, str, tuple[int, ...], int]]:
    """The tensors of the graph stored with their header and no data: (node, dtype
    name or the header's kind code, shape, bytes), in node order. Nothing is allocated."""
    out = []
    for index, node in enumerate(graph.get("nodes", ()) if isinstance(graph, dict) else ()):
        if not isinstance(node, dict) or node.get("type") != "ffi.Tensor" or not isinstance(node.get("data"), str):
            continue
        if len(node["data"]) > 4 * 1024:  # a header is at most a few hundred bytes: this one holds data
            continue
        try:
            raw = base64.b64decode(node["data"], validate=True)
        except ValueError:
            continue
        head = parse_header(raw, with_data=False)
        if head is not None and head.nbytes > 0:
            out.append((index, _NAMES.get(head.dtype, head.dtype), head.shape, head.nbytes))
    return out


def listed(tensors: list[tuple[int, str, tuple[int, ...], int]]) -> str:
    """The first four of :func:`unfilled`'s tensors, ``float32[256,64], ... and 3 more``."""
    more = f" and {len(tensors) - 4} more" if len(tensors) > 4 else ""
    return ", ".join(f"{d}[{','.join(map(str, s))}]" for _, d, s, _ in tensors[:4]) + more


def mismatch(graph: dict[str, Any], seeded: Sequence[SeededWeight], max_bytes: int) -> str | None:
    """Why the graph's data-less tensors cannot be filled from ``seeded`` (the entry's
    ``ir.seeded``), or None: the same number, each of the described dtype and shape, and
    all together no more than ``max_bytes``. Pure: nothing is allocated."""
    tensors = unfilled(graph)
    if len(tensors) != len(seeded):
        return (
            f"the IR holds {len(tensors)} weight(s) stored without their values ({listed(tensors)}), the entry "
            f"describes {len(seeded)} (field ir.seeded)"
        )
    for i, ((node, dtype, shape, _), weight) in enumerate(zip(tensors, seeded)):
        if (dtype, tuple(shape)) != (weight.dtype, weight.shape):
            return (
                f"field ir.seeded[{i}] describes {weight.describe()}, the IR's weight at node {node} is "
                f"{dtype}[{','.join(map(str, shape))}]"
            )
    total = sum(n for _, _, _, n in tensors)
    if total > max_bytes:
        return (
            f"its seeded weights would take {total / 2**20:.1f} MiB, more than the {max_bytes / 2**20:g} MiB a "
            f"stored program may (raise $TVMPERF_MAX_IR_MB if this is your own network)"
        )
    return None


def fill(graph: dict[str, Any], seeded: Sequence[SeededWeight], max_bytes: int) -> None:
    """Put seeded values into the graph's data-less tensors (in place), after
    :func:`mismatch` says they match; raises WeightError saying why not."""
    if (problem := mismatch(graph, seeded, max_bytes)) is not None:
        raise WeightError(problem)
    nodes = graph["nodes"]
    for position, ((node, _, _, _), weight) in enumerate(zip(unfilled(graph), seeded)):
        raw = base64.b64decode(nodes[node]["data"])
        nodes[node]["data"] = base64.b64encode(raw + seeded_values(weight, position).tobytes()).decode("ascii")
