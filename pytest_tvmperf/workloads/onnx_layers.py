"""The source layers of an ONNX graph: each Conv, Gemm/MatMul and pool node with its name
(or its first output's), op type and inferred shapes, so that a failure names the node a
kernel computes (values/source_layer.py)."""

from __future__ import annotations

from typing import Any

from pytest_tvmperf.judge.layer_match import PEER_ANCHORS
from pytest_tvmperf.values.source_layer import SourceLayer


def _dims(value_type: Any) -> str:
    tensor = value_type.tensor_type
    if not tensor.HasField("shape"):
        return ""
    dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]
    return "x".join(dims) or "scalar"


def _shapes(model: Any) -> dict[str, str]:
    """{value name: shape} of every value of the graph shape inference can tell."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # onnx raises InferenceError, ValidationError, ...; the graph's own shapes then
        inferred = model
    graph = inferred.graph
    out = {t.name: "x".join(str(d) for d in t.dims) or "scalar" for t in graph.initializer}
    for value in (*graph.input, *graph.value_info, *graph.output):
        shape = _dims(value.type)
        if shape:
            out[value.name] = shape
    return out


def _attrs(node: Any, anchor: str, inputs: list[str], output: str) -> str:
    """``5x5`` (``5x5 s2``, ``g8``) for a Conv, ``512->256`` for a Gemm/MatMul, a pool's window."""
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if anchor == "conv":
        kernel = list(attrs.get("kernel_shape", ())) or (inputs[1].split("x")[2:] if len(inputs) > 1 else [])
        text = "x".join(str(k) for k in kernel)
        strides = attrs.get("strides", ())
        if any(int(s) != 1 for s in strides):
            text += " s" + "x".join(str(s) for s in sorted(set(strides)))
        if int(attrs.get("group", 1)) != 1:
            text += f" g{attrs['group']}"
        return text
    if anchor == "matmul" and inputs and output:
        return f"{inputs[0].split('x')[-1]}->{output.split('x')[-1]}"
    return "x".join(str(k) for k in attrs.get("kernel_shape", ()))


def source_layers(model: Any) -> tuple[SourceLayer, ...]:
    """The anchor nodes of ``model``'s graph, in graph order, as layers."""
    shapes = _shapes(model)
    layers = []
    for node in model.graph.node:
        anchor = PEER_ANCHORS.get(node.op_type, "")
        if not anchor or not node.output:
            continue
        inputs = [shapes.get(name, "") for name in node.input if name]
        output = shapes.get(node.output[0], "")
        attrs, shown = _attrs(node, anchor, inputs, output), tuple(s for s in inputs[:2] if s)
        layers.append(SourceLayer(node.name or node.output[0], node.op_type, anchor, attrs, shown, output))
    return tuple(layers)
