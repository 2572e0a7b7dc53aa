"""The anchor ops of a Relax program before fusion, with their shapes, attributes and FLOPs:
what names the kernel that computes each in the per-layer table (peer_layers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pytest_tvmperf.judge.layer_match import conv_flops, matmul_flops, tvm_anchor


@dataclass(frozen=True)
class RelaxAnchor:
    op: str
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    attrs: str
    flops: int | None


def _type_of(expr: Any) -> Any:
    """An expression's type: ``struct_info`` before TVM 0.27, ``ty`` since."""
    return getattr(expr, "struct_info", None) if hasattr(type(expr), "struct_info") else getattr(expr, "ty", None)


def static_shape(sinfo: Any) -> tuple[int, ...] | None:
    """The static shape of ``sinfo`` (a type, a tensor); None when it has none."""
    shape = getattr(sinfo, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(int(d) for d in shape)
    except (TypeError, ValueError):  # a symbolic dim
        return None


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values] if values is not None else []


def window(
    kernel: Sequence[int], strides: Sequence[int], padding: Sequence[int], groups: int = 1, dilation: Sequence[int] = ()
) -> str:
    parts = ["x".join(map(str, kernel))]
    if strides:
        parts.append("s" + "x".join(map(str, sorted(set(strides)))))
    if padding:
        parts.append("p" + "x".join(map(str, sorted(set(padding)))))
    if dilation and set(dilation) != {1}:
        parts.append("d" + "x".join(map(str, sorted(set(dilation)))))
    if groups != 1:
        parts.append(f"g{groups}")
    return " ".join(parts)


def relax_anchors(program: Any, entry: str = "main") -> list[RelaxAnchor]:
    """The anchor ops (convolutions, matmuls, pools) of ``program``'s ``entry`` before any
    pass, with the strides, padding and shapes a fused kernel's name does not say."""
    from tvm import relax

    func = program[entry] if entry in [gv.name_hint for gv in program.get_global_vars()] else None
    if not isinstance(func, relax.Function):
        return []
    out: list[RelaxAnchor] = []
    for block in getattr(func.body, "blocks", ()):
        for binding in block.bindings:
            call = getattr(binding, "value", None)
            if not isinstance(call, relax.Call) or not hasattr(call.op, "name"):
                continue
            op = str(call.op.name).removeprefix("relax.").removeprefix("nn.")
            if not tvm_anchor(op):
                continue
            shapes = tuple(s for s in (static_shape(_type_of(a)) for a in call.args) if s is not None)
            result = static_shape(_type_of(binding.var))
            if result is None:
                continue
            attrs, flops = "", None
            a = call.attrs
            strides, padding = _ints(getattr(a, "strides", None)), _ints(getattr(a, "padding", None))
            if op.startswith("conv") and len(shapes) >= 2:
                groups, dilation = int(getattr(a, "groups", 1) or 1), _ints(getattr(a, "dilation", None))
                attrs = window(shapes[1][2:], strides, padding, groups, dilation)
                flops = conv_flops(result, shapes[1])
            elif op in ("matmul", "dense") and shapes:
                flops = matmul_flops(shapes[0], result)
            elif "pool" in op and hasattr(a, "pool_size"):
                attrs = window(_ints(a.pool_size), strides, padding)
            out.append(RelaxAnchor(op, shapes, result, attrs, flops))
    return out
