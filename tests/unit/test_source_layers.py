"""Each kernel is named by the source layers it computes (torch module paths, ONNX node
names), matched by anchor kind and shapes, never by TVM's numbering; the name is shown,
never matched by."""

from __future__ import annotations

import json
from dataclasses import replace

from pytest_tvmperf.judge.source_layers import assign, call_order, kernel_layers, layers_text
from pytest_tvmperf.result.kernel_match import match_kernels
from pytest_tvmperf.result.regression import kernel_set_line
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.source_layer import SourceLayer

STEM = SourceLayer("stem", "Conv2d", "conv", "3x3", ("1x3x16x16", "8x3x3x3", "8"), "1x8x16x16")
A5 = SourceLayer("convs.1", "Conv2d", "conv", "5x5", ("1x8x16x16", "8x8x5x5", "8"), "1x8x16x16")
B3 = SourceLayer("convs.2", "Conv2d", "conv", "3x3", ("1x8x16x16", "8x8x3x3", "8"), "1x8x16x16")
C3 = SourceLayer("convs.3", "Conv2d", "conv", "3x3", ("1x8x16x16", "8x8x3x3", "8"), "1x8x16x16")
FC = SourceLayer("head.fc", "Linear", "matmul", "2048->10", ("1x2048", "10x2048", "10"), "1x10")
LAYERS = (STEM, A5, B3, C3, FC)

K_STEM = KernelId("a" * 16, "conv2d_add_relu", "1x3x16x16,8x3x3x3,1x8x1x1,1x8x16x16")
K5 = KernelId("c" * 16, "conv2d_add_relu", "1x8x16x16,8x8x5x5,1x8x1x1,1x8x16x16")
K3 = KernelId("b" * 16, "conv2d_add_relu", "1x8x16x16,8x8x3x3,1x8x1x1,1x8x16x16")
K_FC = KernelId("d" * 16, "matmul_add", "1x2048,2048x10,10,1x10")  # the weight transposed by the importer
RESHAPE = KernelId("e" * 16, "reshape", "1x8x16x16,1x2048")
KERNELS = {
    "fused_conv2d_add_relu": K_STEM,
    "fused_conv2d1_add_relu": K5,
    "fused_conv2d2_add_relu": K3,
    "fused_matmul_add": K_FC,
    "reshape": RESHAPE,
}


def test_each_kernel_is_named_by_the_layers_it_computes():
    assert kernel_layers(KERNELS, LAYERS) == {
        "fused_conv2d_add_relu": "stem (Conv2d 3x3)",
        "fused_conv2d1_add_relu": "convs.1 (Conv2d 5x5)",
        "fused_conv2d2_add_relu": "convs.2, convs.3 (Conv2d 3x3)",  # one kernel, two layers alike
        "fused_matmul_add": "head.fc (Linear 2048->10)",
    }


def test_a_symbolic_batch_fits_any():
    dynamic = {
        name: replace(k, shapes=k.shapes.replace("1x", "nx", 1)) for name, k in KERNELS.items() if name != "reshape"
    }
    torch_dims = tuple(replace(l, output=l.output.replace("1x", "s77x", 1)) for l in LAYERS)
    assert kernel_layers(dynamic, torch_dims)["fused_conv2d1_add_relu"] == "convs.1 (Conv2d 5x5)"


def test_kernels_of_one_shape_take_the_layers_in_call_order():
    """A conv with a relu after it and one without: two kernels of the same shapes; the
    layers go to them in the order the VM calls them, not in TVM's numbering."""
    plain = KernelId("f" * 16, "conv2d_add", K3.shapes)
    kernels = {"fused_conv2d_add": plain, "fused_conv2d1_add_relu": K3}
    listing = {"main": "call fused_conv2d1_add_relu in: %0 dst: %1\ncall fused_conv2d_add in: %1 dst: %2\nret %2"}
    assert call_order(listing) == ("fused_conv2d1_add_relu", "fused_conv2d_add")
    assert assign(kernels, (B3, C3), call_order(listing)) == {
        "fused_conv2d1_add_relu": (B3,),
        "fused_conv2d_add": (C3,),
    }


def test_a_layer_of_another_kind_or_shape_names_nothing():
    assert kernel_layers({"fused_conv2d_add_relu": K_STEM}, (A5, FC)) == {}
    assert kernel_layers({"reshape": RESHAPE}, LAYERS) == {}


def test_many_layers_of_one_kernel_are_cut_and_unlike_ones_described_each():
    many = tuple(replace(B3, path=f"blocks.{i}") for i in range(5))
    assert layers_text(many) == "blocks.0, blocks.1, blocks.2, +2 more (Conv2d 3x3)"
    assert layers_text((B3, replace(C3, attrs="3x3 s2"))) == "convs.2 (Conv2d 3x3), convs.3 (Conv2d 3x3 s2)"
    assert layers_text((B3, B3)) == "convs.2 (Conv2d 3x3)"  # one module called twice


def test_the_label_names_the_layer_and_keeps_the_shapes_where_none_is_known():
    named = replace(K5, layer="convs.1 (Conv2d 5x5)")
    match = match_kernels({"fused_conv2d1_add_relu": K3}, {"fused_conv2d1_add_relu": named, "reshape": RESHAPE})
    assert match.label("fused_conv2d1_add_relu") == "convs.1 (Conv2d 5x5) [fused_conv2d1_add_relu]"
    assert match.label("reshape") == "reshape(1x8x16x16) -> 1x2048 [reshape]"
    line = kernel_set_line(match)
    assert "changed: convs.1 (Conv2d 5x5) [fused_conv2d1_add_relu] (was conv2d_add_relu(1x8x16x16, 8x8x3x3" in line


def test_the_layer_is_shown_never_matched_by():
    """A kernel whose layer was renamed is the same kernel; a recoded one in the same
    layer says its code changed, not what it was; a baseline without layers still reads."""
    before = replace(K3, layer="convs.2 (Conv2d 3x3)")
    renamed = replace(K3, layer="body.conv (Conv2d 3x3)")
    match = match_kernels({"k": before}, {"k": renamed})
    assert str(match.status["k"]) == "same"
    recoded = replace(before, key="9" * 16)
    assert kernel_set_line(match_kernels({"k": before}, {"k": recoded})) == (
        "changed: convs.2 (Conv2d 3x3) [k] (its code changed)"
    )
    old = K3.as_json()
    assert "layer" not in old and KernelId.from_json(json.loads(json.dumps(old))) == K3
    assert KernelId.from_json(before.as_json()) == before


def test_a_layer_whose_channels_changed_shows_its_shapes():
    """Its label reads as it did (``Conv2d 3x3``): what it computes tells the change."""
    before = replace(K3, layer="convs.2 (Conv2d 3x3)")
    wider = KernelId("9" * 16, "conv2d_add_relu", "1x8x16x16,16x8x3x3,1x16x1x1,1x16x16x16", "convs.2 (Conv2d 3x3)")
    assert kernel_set_line(match_kernels({"k": before}, {"k": wider})) == (
        "changed: convs.2 (Conv2d 3x3) [k] (computes conv2d_add_relu(1x8x16x16, 16x8x3x3, ...) -> 1x16x16x16, "
        "was conv2d_add_relu(1x8x16x16, 8x8x3x3, ...) -> 1x8x16x16)"
    )
