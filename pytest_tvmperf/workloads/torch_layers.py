"""The source layers of a ``torch.export`` program: each convolution, linear and pool node
with its innermost module's path and class and its shapes, so that a failure names the
layer a kernel computes (values/source_layer.py). Reads the graph only."""

from __future__ import annotations

from typing import Any

from pytest_tvmperf.judge.layer_match import PEER_ANCHORS
from pytest_tvmperf.values.source_layer import SourceLayer

#: aten ops (``aten.conv2d.default`` -> ``conv2d``) that are a layer's anchor
ANCHOR_OPS = {
    op: anchor
    for anchor, ops in (
        ("conv", "conv1d conv2d conv3d convolution conv_transpose1d conv_transpose2d conv_transpose3d"),
        ("matmul", "linear addmm matmul mm bmm"),
        ("max_pool", "max_pool1d max_pool2d max_pool3d max_pool2d_with_indices adaptive_max_pool2d"),
        ("avg_pool", "avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d"),
    )
    for op in ops.split()
}


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return "" if shape is None else "x".join(str(d) for d in shape) or "scalar"


def _innermost(node: Any) -> tuple[str, str]:
    """The module path and class name of the innermost module a node was traced in."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, kind = list(stack.values())[-1]
    kind = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
    for prefix in ("L['self'].", "L__self__."):
        path = path.removeprefix(prefix)
    return path, kind.rsplit(".", 1)[-1]


def _attrs(anchor: str, op: str, node: Any, inputs: list[str], output: str) -> str:
    """``5x5`` (``5x5 s2``, ``g8``) for a conv, ``512->256`` for a linear, the window of a pool."""
    if anchor == "conv" and len(inputs) > 1:
        weight = inputs[1].split("x")
        text = "x".join(weight[2:])
        stride = node.args[3] if len(node.args) > 3 else None  # (input, weight, bias, stride, padding, ...)
        if isinstance(stride, (list, tuple)) and any(int(s) != 1 for s in stride):
            text += " s" + "x".join(str(s) for s in sorted(set(stride)))
        at = 8 if op == "convolution" else 6  # ..., dilation, groups / ..., transposed, output_padding, groups
        groups = node.args[at] if len(node.args) > at else None
        if isinstance(groups, int) and groups != 1:
            text += f" g{groups}"
        return text
    if anchor == "matmul" and inputs and output:
        return f"{inputs[0].split('x')[-1]}->{output.split('x')[-1]}"
    if anchor in ("max_pool", "avg_pool") and len(node.args) > 1 and isinstance(node.args[1], (list, tuple)):
        return "x".join(str(k) for k in node.args[1])
    return ""


def source_layers(exported: Any) -> tuple[SourceLayer, ...]:
    """The anchor nodes of an ``ExportedProgram``, in order; one outside any module is named by its op."""
    layers = []
    for node in exported.graph.nodes:
        if node.op != "call_function":
            continue
        op = getattr(node.target, "__name__", str(node.target)).split(".")[0]  # aten.conv2d.default -> conv2d
        anchor = ANCHOR_OPS.get(op, "")
        if not anchor:
            continue
        path, kind = _innermost(node)
        if PEER_ANCHORS.get(kind) != anchor:  # a functional op inside a module: the op names it
            kind = op
        inputs = [_shape(a.meta.get("val")) for a in node.args if hasattr(a, "meta")]
        output = _shape(node.meta.get("val"))
        if op == "addmm" and len(inputs) == 3:  # addmm(bias, input, weight.t())
            inputs = inputs[1:]
        attrs = _attrs(anchor, op, node, inputs, output)
        layers.append(SourceLayer(path or op, kind, anchor, attrs, tuple(s for s in inputs if s), output))
    return tuple(layers)
