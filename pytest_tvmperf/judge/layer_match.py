"""Pure: which layer loses to the peer framework.

Each side of a test is a sequence of timed calls in execution order: TVM's kernel calls
(from the VM's instrument) and the peer's layers (torch leaf modules, onnxruntime nodes).
A call whose op is an *anchor* (convolution, matmul/dense/linear, pooling) starts a
*group*; the calls after it that are no anchor (bias adds, batch norm, relu, reshapes)
join its group, on both sides, because TVM fuses them into or next to the anchor's
kernel while the peer runs them as layers of their own. Groups are matched by anchor
kind and output shape (then input and weight shapes, then order); a group that matches
nothing, and the time of either side outside every call (the VM's builtins and dispatch,
torch's functional ops and Python), are rows of their own: no time is dropped. Each
side's calls, its whole run and its time outside come from the same runs
(judge/layer_rounds.py): the rows add up to the whole run; the time outside, shown with
its noise, is not ranked among the losers while within that noise of zero.

Nothing here imports TVM, torch or onnxruntime (``measure/peer_layers.py`` times them);
the table as text is result/layers_text.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping, Sequence

Shape = tuple[int, ...]

#: anchor kinds: what starts a layer on either side
CONV, MATMUL, MAX_POOL, AVG_POOL = "conv", "matmul", "max_pool", "avg_pool"

#: TVM kernel names (``fused_conv2d1_add1_relu``) -> anchor kind; the first anchor named wins
_TVM_ANCHORS = (
    (re.compile(r"(?:^|_)(conv[123]d_transpose|conv[123]d)\d*(?:_|$)"), CONV),
    (re.compile(r"(?:^|_)(matmul|dense|batch_matmul)\d*(?:_|$)"), MATMUL),
    (re.compile(r"(?:^|_)(adaptive_avg_pool[123]d|avg_pool[123]d|mean)\d*(?:_|$)"), AVG_POOL),
    (re.compile(r"(?:^|_)(max_pool[123]d|adaptive_max_pool[123]d)\d*(?:_|$)"), MAX_POOL),
)

#: peer op names (torch module classes, onnxruntime op types) -> anchor kind
PEER_ANCHORS: Mapping[str, str] = {
    op: kind
    for kind, ops in (
        (CONV, "Conv1d Conv2d Conv3d ConvTranspose2d Conv FusedConv ConvTranspose NchwcConv QLinearConv"),
        (MATMUL, "Linear Gemm MatMul FusedGemm FusedMatMul"),
        (MAX_POOL, "MaxPool1d MaxPool2d MaxPool3d MaxPool AdaptiveMaxPool2d GlobalMaxPool NchwcMaxPool"),
        (AVG_POOL, "AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool2d AveragePool GlobalAveragePool NchwcAveragePool"),
        (AVG_POOL, "NchwcGlobalAveragePool"),
    )
    for op in ops.split()
}


def tvm_anchor(kernel: str) -> str:
    """The anchor kind of a TVM kernel by its name, or "" (an elementwise or data-movement kernel)."""
    for pattern, kind in _TVM_ANCHORS:
        if pattern.search(kernel):
            return kind
    return ""


def fused_ops(kernel: str) -> tuple[str, ...]:
    """The ops a fused TVM kernel computes, from its name: ``fused_conv2d1_add1_relu`` ->
    (conv2d, add, relu) (the numbers TVM appends to tell kernels apart are dropped)."""
    known = (
        "conv2d_transpose adaptive_avg_pool2d adaptive_max_pool2d avg_pool2d max_pool2d batch_norm layer_norm "
        "batch_matmul conv1d conv2d conv3d strided_slice expand_dims concatenate transpose layout_transform"
    ).split()
    ops: list[str] = []
    rest = kernel.removeprefix("fused_")
    while rest:
        for op in known:
            m = re.match(rf"{op}\d*(?:_|$)", rest)
            if m:
                ops.append(op)
                rest = rest[m.end() :]
                break
        else:
            head, _, rest = rest.partition("_")
            ops.append(re.sub(r"\d+$", "", head) or head)
    return tuple(ops)


def conv_flops(out_shape: Shape, weight_shape: Shape) -> int | None:
    """2 x MACs of a convolution: each output element sums C/groups x kernel window
    products (``weight_shape`` is O x C/groups x k...)."""
    if len(weight_shape) < 3 or not out_shape:
        return None
    return 2 * _prod(out_shape) * math.prod(weight_shape[1:])


def matmul_flops(in_shape: Shape, out_shape: Shape) -> int | None:
    """2 x MACs of a matmul / dense / linear: each output element sums K products (K: the
    input's last dim)."""
    if not in_shape or not out_shape:
        return None
    return 2 * _prod(out_shape) * in_shape[-1]


def _prod(shape: Iterable[int]) -> int:
    return math.prod(int(d) for d in shape)


@dataclass(frozen=True)
class LayerCall:
    """One timed call on one side: a TVM kernel call or a peer layer."""

    #: the kernel's name (TVM) or the layer's name: module path (torch), node name (onnxruntime)
    name: str
    #: the op: the kernel's fused ops (``conv2d+add+relu``), the module class (``Conv2d``), the node's op type
    op: str
    #: anchor kind (:data:`CONV`, ...), "" for an elementwise / data-movement call
    kind: str
    #: median seconds of this call per run
    time_s: float
    inputs: tuple[Shape, ...] = ()
    output: Shape = ()
    #: the anchor's attributes in words: ``3x3 s2 p1``
    attrs: str = ""
    #: floating-point operations of one call, where known (conv, matmul)
    flops: int | None = None

    def describe(self) -> str:
        shapes = " ".join("x".join(map(str, s)) for s in self.inputs)
        out = "x".join(map(str, self.output))
        return " ".join(p for p in (self.op, self.attrs, f"{shapes} -> {out}" if out else shapes) if p)

    def to_json(self) -> dict[str, Any]:
        """Every field, in order, its shapes as lists."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**data, "inputs": [list(s) for s in self.inputs], "output": list(self.output)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LayerCall":
        return cls(
            name=str(data["name"]),
            op=str(data.get("op", "")),
            kind=str(data.get("kind", "")),
            time_s=float(data["time_s"]),
            inputs=tuple(tuple(int(d) for d in s) for s in data.get("inputs", ())),
            output=tuple(int(d) for d in data.get("output", ())),
            attrs=str(data.get("attrs", "")),
            flops=None if data.get("flops") is None else int(data["flops"]),
        )


@dataclass(frozen=True)
class SideProfile:
    """One side's timed calls in execution order, its whole run and its time outside
    every call with its noise, all from the same runs (judge/layer_rounds.py)."""

    label: str
    calls: tuple[LayerCall, ...]
    total_s: float
    #: how this side was timed, when it is not what the test ran (one line, or "")
    note: str = ""
    #: the time outside every call, measured run by run; None: ``total_s`` less the calls
    outside_s: float | None = None
    outside_noise_s: float = 0.0

    @property
    def outside(self) -> float:
        return self.total_s - sum(c.time_s for c in self.calls) if self.outside_s is None else self.outside_s


@dataclass(frozen=True)
class LayerRow:
    """One layer: the TVM calls and the peer calls that compute it (either may be empty:
    unmatched), or the time of a side outside every call (``outside``)."""

    label: str
    tvm: tuple[LayerCall, ...] = ()
    peer: tuple[LayerCall, ...] = ()
    #: FLOPs of the layer (the anchor's), the same on both sides
    flops: int | None = None
    #: "tvm" / "peer": the time of that side outside every call (dispatch, builtins, Python)
    outside: str = ""
    tvm_outside_s: float = 0.0
    peer_outside_s: float = 0.0
    #: how far the time outside (``outside``) can be off: a row within it of zero is not ranked
    noise_s: float = 0.0

    @property
    def tvm_s(self) -> float:
        return sum(c.time_s for c in self.tvm) + self.tvm_outside_s

    @property
    def peer_s(self) -> float:
        return sum(c.time_s for c in self.peer) + self.peer_outside_s

    @property
    def lost_s(self) -> float:
        """Seconds TVM spends on this layer beyond the peer (negative: TVM is faster)."""
        return self.tvm_s - self.peer_s

    @property
    def ranked(self) -> bool:
        """Can this row be among the layers that lose most? Not the time outside every
        call when it is within its noise of zero."""
        return not self.outside or abs(self.lost_s) > self.noise_s

    @property
    def matched(self) -> bool:
        return bool(self.tvm) and bool(self.peer)

    @property
    def ratio(self) -> float | None:
        return self.tvm_s / self.peer_s if self.matched and self.peer_s > 0 else None

    def gflops(self, side: str) -> float | None:
        t = self.tvm_s if side == "tvm" else self.peer_s
        return self.flops / t / 1e9 if self.flops and t > 0 else None

    def to_json(self) -> dict[str, Any]:
        """Every field, in order, then the sums."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(tvm=[c.to_json() for c in self.tvm], peer=[c.to_json() for c in self.peer])
        return {**data, "tvm_s": self.tvm_s, "peer_s": self.peer_s, "lost_s": self.lost_s}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LayerRow":
        return cls(
            label=str(data["label"]),
            tvm=tuple(LayerCall.from_json(c) for c in data.get("tvm", ())),
            peer=tuple(LayerCall.from_json(c) for c in data.get("peer", ())),
            flops=None if data.get("flops") is None else int(data["flops"]),
            outside=str(data.get("outside", "")),
            tvm_outside_s=float(data.get("tvm_outside_s", 0.0)),
            peer_outside_s=float(data.get("peer_outside_s", 0.0)),
            noise_s=float(data.get("noise_s", 0.0)),
        )


@dataclass(frozen=True)
class LayerTable:
    """TVM against one peer framework, layer by layer."""

    peer: str
    rows: tuple[LayerRow, ...]
    tvm_total_s: float
    peer_total_s: float
    #: how the two sides were matched, and what was not available (one line each)
    notes: tuple[str, ...] = ()

    def losers(self, n: int | None = None) -> list[LayerRow]:
        """The rows where TVM loses the most time to the peer, most first (ties: table
        order); the time outside every call only beyond its noise."""
        order = sorted(range(len(self.rows)), key=lambda i: (-self.rows[i].lost_s, i))
        losing = [self.rows[i] for i in order if self.rows[i].lost_s > 0 and self.rows[i].ranked]
        return losing if n is None else losing[:n]

    def to_json(self) -> dict[str, Any]:
        return {
            "peer": self.peer,
            "tvm_total_s": self.tvm_total_s,
            "peer_total_s": self.peer_total_s,
            "notes": list(self.notes),
            "rows": [r.to_json() for r in self.rows],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LayerTable":
        return cls(
            peer=str(data["peer"]),
            rows=tuple(LayerRow.from_json(r) for r in data.get("rows", ())),
            tvm_total_s=float(data["tvm_total_s"]),
            peer_total_s=float(data["peer_total_s"]),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )


# ---------------------------------------------------------------- matching


@dataclass
class _Group:
    calls: list[LayerCall] = field(default_factory=list)

    @property
    def anchor(self) -> LayerCall | None:
        return self.calls[0] if self.calls and self.calls[0].kind else None


def groups(calls: Sequence[LayerCall]) -> list[_Group]:
    """Calls cut into groups, each starting at an anchor (the calls before the first
    anchor are a group without one)."""
    out: list[_Group] = []
    for call in calls:
        if call.kind or not out:
            out.append(_Group())
        out[-1].calls.append(call)
    return out


def _group_score(tvm: LayerCall, peer: _Group) -> int | None:
    """:func:`_score` of the peer group's anchor, or 3 when only a later call of the group
    gives TVM's output shape (onnxruntime pads a convolution's channels to its block size,
    1008 for 1000, and a ReorderOutput node cuts them back)."""
    anchor = peer.anchor
    assert anchor is not None
    score = _score(tvm, anchor)
    if score is None and tvm.kind == anchor.kind and any(c.output == tvm.output for c in peer.calls[1:]):
        return 3
    return score


def _score(tvm: LayerCall, peer: LayerCall) -> int | None:
    """How well a TVM anchor call fits a peer anchor call: None when it cannot be the same
    layer (another kind, or outputs of another size); 4 for the same output shape, 2 for
    the same number of output elements in another layout (onnxruntime's blocked NCHWc),
    plus one for each peer input shape TVM's call has too (the input, the weight)."""
    if tvm.kind != peer.kind or not tvm.output or not peer.output:
        return None
    if tvm.output == peer.output:
        score = 4
    elif _prod(tvm.output) == _prod(peer.output):
        score = 2
    else:
        return None
    tvm_shapes = set(tvm.inputs)
    return score + sum(1 for s in peer.inputs if s in tvm_shapes)


def match(tvm: SideProfile, peer: SideProfile) -> LayerTable:
    """The layer table of ``tvm`` against ``peer``: groups matched by anchor kind and
    shapes (the best fit, the earliest first), every other group and the time outside the
    calls as rows of their own."""
    tvm_groups, peer_groups = groups(tvm.calls), groups(peer.calls)
    used: set[int] = set()
    pairs: dict[int, int] = {}  # peer group -> tvm group
    for pi, pg in enumerate(peer_groups):
        if pg.anchor is None:
            continue
        free = [(_group_score(tg.anchor, pg), ti) for ti, tg in enumerate(tvm_groups) if ti not in used and tg.anchor]
        best = max(((s, ti) for s, ti in free if s is not None), key=lambda f: f[0], default=None)
        if best is not None:
            used.add(best[1])
            pairs[pi] = best[1]
    rows: list[LayerRow] = []
    matched_tvm = {ti: pi for pi, ti in pairs.items()}
    # in TVM's execution order: matched groups, and unmatched TVM groups where they ran
    for ti, tg in enumerate(tvm_groups):
        if ti in matched_tvm:
            pg = peer_groups[matched_tvm[ti]]
            anchor = pg.anchor
            assert anchor is not None and tg.anchor is not None
            flops = anchor.flops if anchor.flops is not None else tg.anchor.flops
            label = f"{anchor.name} ({anchor.op}{' ' + anchor.attrs if anchor.attrs else ''})"
            rows.append(LayerRow(label=label, tvm=tuple(tg.calls), peer=tuple(pg.calls), flops=flops))
        else:
            first = tg.calls[0]
            flops = first.flops if tg.anchor is not None else None
            rows.append(LayerRow(label=f"(TVM only) {first.name}", tvm=tuple(tg.calls), flops=flops))
    for pi, pg in enumerate(peer_groups):
        if pi not in pairs:
            flops = pg.anchor.flops if pg.anchor is not None else None
            rows.append(LayerRow(label=f"({peer.label} only) {pg.calls[0].name}", peer=tuple(pg.calls), flops=flops))
    tvm_label = "(outside kernels) TVM: VM builtins, allocation, dispatch"
    rows.append(LayerRow(label=tvm_label, outside="tvm", tvm_outside_s=tvm.outside, noise_s=tvm.outside_noise_s))
    peer_label = f"(outside layers) {peer.label}: between its layers (functional ops, framework overhead)"
    rows.append(LayerRow(label=peer_label, outside="peer", peer_outside_s=peer.outside, noise_s=peer.outside_noise_s))
    notes = tuple(n for n in (tvm.note, peer.note) if n)
    return LayerTable(
        peer=peer.label, rows=tuple(rows), tvm_total_s=tvm.total_s, peer_total_s=peer.total_s, notes=notes
    )
