"""Baselines without the weights' values (the default): the baseline's
program is rebuilt with seeded tensors of the stored dtypes and shapes.

Why that times the same: a compiled kernel's run time does not depend on the values it
reads, as long as they are finite and normal floating-point numbers. The exceptions
(docs/gate.md names them too): data-dependent control flow (a loop or branch on a
weight's value), kernels that skip zeros (sparse formats, zero-skipping), denormal
numbers (slow on many CPUs), NaN and Inf (slow paths on some), and shapes that depend
on values (``nonzero``, ``argwhere``, ``unique``). A test with such a program records
its weights bit-exactly: ``--tvmperf-baseline-weights=exact`` or marker
``baseline_weights="exact"``.

What is seeded: each floating-point tensor (float16/32/64) of at least :data:`MIN_BYTES`
bound into the IR. Integer tensors may be indices or shapes: they keep their values
(stored apart as weight files, store/weights.py, when large). The stored IR keeps each
seeded tensor's header (dtype, shape) with no data; the entry lists each one's dtype,
shape and the sha256 of its bytes (``ir.seeded``, values/seeded_weight.py), so a changed
weight is still seen and reported.

The values (:func:`seeded_values`, rule ``seeded-v1``): a fixed-seed generator per
tensor (its position), magnitudes uniform in [0.5, 1.5] (never zero, never denormal);
a tensor of two or more dimensions (a conv or dense weight) gets random signs and is
scaled by 1/sqrt(its fan-in: the elements per output channel, at least 2^-10), so
activations keep their magnitude through a deep network instead of growing to Inf or
shrinking to denormals; a vector (a bias, a batch norm's scale or variance) stays
positive, so a square root or a logarithm of it is no NaN.

The entry and the IR come from the repository: each description is parsed against the
allowlist (values/seeded_weight.py), matched against the IR's header, and the total is
bounded by ``$TVMPERF_MAX_IR_MB`` before anything is allocated.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_tvmperf.store.weights import MIN_BYTES as FILE_MIN_BYTES
from pytest_tvmperf.store.weights import (
    Weight,
    WeightError,
    encode_weight,
    parse_header,
    parse_header_only,
)
from pytest_tvmperf.values.seeded_weight import DTYPES, SeededWeight

#: floating-point tensors from this size on are seeded (smaller ones: scalars, a few
#: channels' parameters, stay in the IR with their values)
MIN_BYTES = 64
#: the seed of every generator (with the tensor's position)
SEED = 47
#: the smallest scale of a weight: float16's smallest normal number is 2^-14
MIN_SCALE = 2.0**-10
_NAMES = {f"f{size}": name for name, size in DTYPES.items()}


def digest(raw: bytes) -> str:
    """The sha256 of a tensor's little-endian bytes (as TVM serializes them)."""
    return hashlib.sha256(raw).hexdigest()


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
    """Take the weights out of a ``save_json`` graph (in place): each floating-point
    tensor of at least :data:`MIN_BYTES` keeps its header and no data, described by a
    SeededWeight; each other tensor of at least store/weights.py's ``MIN_BYTES`` is
    taken out whole, as a weight file (zeros in its place). Both in node order."""
    files: list[Weight] = []
    seeded: list[SeededWeight] = []
    for index, node in enumerate(graph.get("nodes", ())):
        if not isinstance(node, dict) or node.get("type") != "ffi.Tensor" or not isinstance(node.get("data"), str):
            continue
        if len(node["data"]) * 3 // 4 < MIN_BYTES:
            continue
        raw = base64.b64decode(node["data"])
        head = parse_header(raw)
        if head is None:
            continue
        payload = raw[head.size :]
        if head.dtype in _NAMES and head.nbytes >= MIN_BYTES:
            seeded.append(SeededWeight(_NAMES[head.dtype], head.shape, digest(payload)))
            node["data"] = base64.b64encode(raw[: head.size]).decode("ascii")
        elif head.nbytes >= FILE_MIN_BYTES:
            array = np.frombuffer(payload, dtype=np.dtype(head.dtype).newbyteorder("<")).reshape(head.shape)
            data = encode_weight(array)
            files.append(Weight(index, data, hashlib.sha256(data).hexdigest()))
            node["data"] = base64.b64encode(raw[: head.size] + bytes(head.nbytes)).decode("ascii")
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
        head = parse_header_only(raw)
        if head is not None:
            out.append((index, _NAMES.get(head.dtype, head.dtype), head.shape, head.nbytes))
    return out


def mismatch(graph: dict[str, Any], seeded: Sequence[SeededWeight], max_bytes: int) -> str | None:
    """Why the graph's data-less tensors cannot be filled from ``seeded`` (the entry's
    ``ir.seeded``), or None: the same number, each of the described dtype and shape, and
    all together no more than ``max_bytes``. Pure: nothing is allocated."""
    tensors = unfilled(graph)
    if len(tensors) != len(seeded):
        shown = ", ".join(f"{d}[{','.join(map(str, s))}]" for _, d, s, _ in tensors[:4])
        more = f" and {len(tensors) - 4} more" if len(tensors) > 4 else ""
        return (
            f"the IR holds {len(tensors)} weight(s) stored without their values ({shown}{more}), the entry "
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
    problem = mismatch(graph, seeded, max_bytes)
    if problem is not None:
        raise WeightError(problem)
    nodes = graph["nodes"]
    for position, ((node, _, _, _), weight) in enumerate(zip(unfilled(graph), seeded)):
        raw = base64.b64decode(nodes[node]["data"])
        nodes[node]["data"] = base64.b64encode(raw + seeded_values(weight, position).tobytes()).decode("ascii")
