"""Pure: each kernel of a build named by the source layers it computes.

A layer (values/source_layer.py: a torch module or an ONNX node, with its shapes) fits a
kernel (values/kernel_id.py) of the same anchor kind (judge/layer_match.py: a convolution, a
matmul, a pool) whose output has the layer's output shape and whose inputs hold the
layer's weight (a matmul's may be transposed: the importer folds ``nn.Linear``'s
transpose into it), or, for a layer without a weight, its input. A symbolic dim (a
dynamic batch) fits any. Where several kernels fit the same layers (two kernels of one
shape: a conv with a relu after it and one without), the layers go to the kernels in
program order: the VM's calls in the order of the bytecode where it is known.

Nothing here imports TVM or torch; the label text is :func:`layers_text`.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from pytest_tvmperf.judge.layer_match import tvm_anchor
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.source_layer import SourceLayer

#: the layers a label names before ``+N more``
SHOWN_LAYERS = 3

Dims = tuple[str, ...]


def _dims(shape: str) -> Dims:
    return tuple(shape.split("x")) if shape and shape != "scalar" else ()


def _fits(a: Dims, b: Dims) -> bool:
    """Equal dims, a symbolic one (not a number) fitting any."""
    return len(a) == len(b) and all(x == y or not x.isdigit() or not y.isdigit() for x, y in zip(a, b))


def fits(kernel: KernelId, layer: SourceLayer) -> bool:
    """Whether ``kernel`` can compute ``layer``: same anchor kind, the layer's output, and
    its weight (else its input) among the kernel's inputs."""
    if not layer.anchor or tvm_anchor(kernel.op) != layer.anchor:
        return False
    *inputs, out = [_dims(s) for s in kernel.shapes.split(",")] or [()]
    if not _fits(out, _dims(layer.output)):
        return False
    wanted = _dims(layer.inputs[1] if len(layer.inputs) > 1 else layer.inputs[0]) if layer.inputs else ()
    if not wanted:
        return True
    turned = {wanted, tuple(reversed(wanted))} if layer.anchor == "matmul" else {wanted}
    return any(_fits(have, w) for have in inputs for w in turned)


def call_order(listing: Mapping[str, str] | None) -> tuple[str, ...]:
    """The kernels a VM bytecode listing calls, in order, a kernel called twice twice."""
    return tuple(name for text in (listing or {}).values() for name in re.findall(r"^call (\S+)", text, re.MULTILINE))


def _numbered(name: str) -> tuple[str, int]:
    """``fused_conv2d12_add3`` -> (``conv2d_add``, 12): TVM numbers kernels as it meets them."""
    first = re.search(r"(\d+)(?=_|$)", name.removeprefix("fused_"))
    return re.sub(r"\d+(?=_|$)", "", name), int(first.group(1)) + 1 if first else 0


def assign(
    kernels: Mapping[str, KernelId], layers: Sequence[SourceLayer], calls: Sequence[str] = ()
) -> dict[str, tuple[SourceLayer, ...]]:
    """{kernel name: the layers it computes, in program order}; a kernel no layer fits is
    left out. ``calls``: the kernels called, in order (:func:`call_order`)."""
    first_call = {}
    for i, name in enumerate(calls):
        first_call.setdefault(name, i)
    order = sorted(kernels, key=lambda n: (first_call.get(n, len(calls)), _numbered(n)))
    groups: dict[tuple[str, ...], list[SourceLayer]] = {}
    for layer in layers:
        fitting = tuple(n for n in order if fits(kernels[n], layer))
        if fitting:
            groups.setdefault(fitting, []).append(layer)
    out: dict[str, list[SourceLayer]] = {}
    for fitting, group in groups.items():
        if len(fitting) == 1:
            out.setdefault(fitting[0], []).extend(group)
            continue
        called = [n for n in calls if n in fitting]
        for name, layer in zip(called if len(called) == len(group) else fitting, group):
            out.setdefault(name, []).append(layer)
    return {name: tuple(sorted(found, key=list(layers).index)) for name, found in out.items()}


def layers_text(layers: Sequence[SourceLayer]) -> str:
    """``convs.0 (Conv2d 3x3)``; ``a, b (Conv2d 3x3)`` for one kernel of two layers alike;
    ``a (Conv2d 3x3), b (Conv2d 3x3 s2)`` otherwise; past :data:`SHOWN_LAYERS`, ``+N more``;
    a module called twice once."""
    layers = list(dict.fromkeys(layers))
    shown, more = layers[:SHOWN_LAYERS], len(layers) - SHOWN_LAYERS
    tail = f", +{more} more" if more > 0 else ""
    if len({(l.kind, l.attrs) for l in layers}) == 1:
        what = " ".join(p for p in (layers[0].kind, layers[0].attrs) if p)
        paths = ", ".join(l.path for l in shown) + tail
        return f"{paths} ({what})" if what else paths
    return ", ".join(l.describe() for l in shown) + tail


def kernel_layers(
    kernels: Mapping[str, KernelId], layers: Sequence[SourceLayer], calls: Sequence[str] = ()
) -> dict[str, str]:
    """{kernel name: ``layer3.0.conv2 (Conv2d 5x5)``}: what :func:`~pytest_tvmperf.measure.
    kernel_identity.kernel_identities` takes as ``layers``."""
    return {name: layers_text(found) for name, found in assign(kernels, layers, calls).items()}
