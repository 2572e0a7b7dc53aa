"""The weights of a baseline's IR, stored apart from it: once, content-addressed and
compressed, shared by every test and re-record that has the same tensor.

Bound weights are nearly all of an IR (61 MB of a DLA-34's). ``--tvmperf-update`` takes each
``ffi.Tensor`` of at least :data:`MIN_BYTES` out of the ``save_json`` graph: the IR keeps its
header and zeros (a graph TVM still loads), the data goes to
``<artifact dir>/weights/<sha256>.npy.gz`` (gzip with a fixed header: the same tensor is the
same file), named by the entry's ``ir.weights`` (node, file, sha256); the gate puts them
back before the IR is built. Weight files are data from the repository: read with
``np.load(allow_pickle=False)``, their sha256 checked first, their size bounded by the IR's
header before they are decompressed, their dtype and shape checked against it.
"""

from __future__ import annotations

import math
import base64
import gzip
import hashlib
import io
import struct
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

WEIGHTS_DIR = "weights"
WEIGHT_SUFFIX = ".npy.gz"
#: tensors smaller than this stay in the IR (shapes, scalars, small biases)
MIN_BYTES = 4096
#: ``tvm::runtime::Tensor`` serialization: magic, reserved, device, ndim, dtype, shape, byte size
_MAGIC = 0xDD5E40F096B4A13F
_HEAD = struct.Struct("<QQiiiBBH")
#: DLPack type codes -> NumPy kinds (int, uint, float); other dtypes stay in the IR
_KINDS = {0: "i", 1: "u", 2: "f"}
#: the most a ``.npy`` header adds to the data
_NPY_HEADER_MAX = 4096


class WeightError(Exception):
    """A weight file does not match what the IR's header says (or cannot be read)."""


@dataclass(frozen=True)
class TensorHeader:
    """The header of one serialized tensor: what its data must be."""

    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    size: int  # bytes of the header itself

    def describe(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


def parse_header(raw: bytes, with_data: bool = True) -> TensorHeader | None:
    """The header of a serialized tensor, or None for one kept in the IR (another dtype, a
    vector type, a size that does not add up); ``with_data`` False: the header alone (a
    tensor stored without its data, a seeded weight: store/seeded.py)."""
    if len(raw) < _HEAD.size:
        return None
    magic, _, _, _, ndim, code, bits, lanes = _HEAD.unpack_from(raw)
    if magic != _MAGIC or not 0 <= ndim <= 32 or lanes != 1 or code not in _KINDS or bits not in (8, 16, 32, 64):
        return None
    end = _HEAD.size + 8 * ndim + 8
    if len(raw) < end:
        return None
    shape = struct.unpack_from(f"<{ndim}q", raw, _HEAD.size)
    (nbytes,) = struct.unpack_from("<q", raw, _HEAD.size + 8 * ndim)
    count = math.prod(shape)
    if any(d < 0 for d in shape) or nbytes != count * bits // 8 or len(raw) != end + (nbytes if with_data else 0):
        return None
    return TensorHeader(f"{_KINDS[code]}{bits // 8}", tuple(shape), nbytes, end)


@dataclass(frozen=True)
class Weight:
    """One tensor taken out of the IR: the index of its node in the graph, and its file's bytes."""

    node: int
    data: bytes  # the compressed .npy file
    sha256: str


def encode_weight(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return gzip.compress(buf.getvalue(), compresslevel=6, mtime=0)


def tensors(graph: dict[str, Any], min_bytes: int) -> Iterator[tuple[int, dict, bytes, TensorHeader]]:
    """The tensor nodes of a ``save_json`` graph that :func:`parse_header` reads, of at least
    ``min_bytes`` of base64 text's worth: (index, node, its bytes, its header), in node order."""
    for index, node in enumerate(graph.get("nodes", ())):
        if not isinstance(node, dict) or node.get("type") != "ffi.Tensor" or not isinstance(node.get("data"), str):
            continue
        if len(node["data"]) * 3 // 4 < min_bytes:
            continue
        raw = base64.b64decode(node["data"])
        head = parse_header(raw)
        if head is not None:
            yield index, node, raw, head


def take(index: int, node: dict, raw: bytes, head: TensorHeader) -> Weight:
    """Take the tensor of ``node`` (node ``index``) out as a weight file: its data becomes zeros."""
    array = np.frombuffer(raw, dtype=np.dtype(head.dtype).newbyteorder("<"), offset=head.size).reshape(head.shape)
    data = encode_weight(array)
    node["data"] = base64.b64encode(raw[: head.size] + bytes(head.nbytes)).decode("ascii")
    return Weight(index, data, hashlib.sha256(data).hexdigest())


def read_weight(data: bytes, head: TensorHeader, what: str) -> bytes:
    """The tensor's data from a weight file's bytes, checked against the IR's header:
    decompressed no further than the header's size allows, loaded without pickle, of the
    header's dtype and shape. Raises WeightError naming ``what``."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            npy = f.read(head.nbytes + _NPY_HEADER_MAX + 1)
    except (OSError, EOFError) as exc:
        raise WeightError(f"{what} is not gzip-compressed ({exc})") from None
    if len(npy) > head.nbytes + _NPY_HEADER_MAX:
        raise WeightError(f"{what} holds more than the {head.describe()} tensor the IR expects")
    try:
        array = np.load(io.BytesIO(npy), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise WeightError(f"{what} is not a NumPy .npy array ({exc})") from None
    if (
        not isinstance(array, np.ndarray)
        or array.dtype.newbyteorder("<") != np.dtype(head.dtype).newbyteorder("<")
        or tuple(array.shape) != head.shape
    ):
        raise WeightError(
            f"{what} holds {array.dtype}{list(getattr(array, 'shape', ()))}, the IR expects {head.describe()}"
        )
    return np.ascontiguousarray(array, dtype=np.dtype(head.dtype).newbyteorder("<")).tobytes()


def join(graph: dict[str, Any], node: int, data: bytes, what: str) -> None:
    """Put a weight back into node ``node`` of the graph (in place), checked against the
    header the IR kept there."""
    nodes = graph.get("nodes", ())
    if not 0 <= node < len(nodes) or not isinstance(nodes[node], dict) or nodes[node].get("type") != "ffi.Tensor":
        raise WeightError(f"{what}: node {node} of the IR is no tensor")
    raw = base64.b64decode(nodes[node].get("data", ""))
    head = parse_header(raw)
    if head is None:
        raise WeightError(f"{what}: node {node} of the IR is no tensor this plugin takes weights out of")
    nodes[node]["data"] = base64.b64encode(raw[: head.size] + read_weight(data, head, what)).decode("ascii")
