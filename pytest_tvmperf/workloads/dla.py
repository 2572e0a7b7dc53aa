"""conv2d layers of the CenterNet/DLA network from the ``slower-than-pytorch-after-tuning`` report.

The user's AutoTVM log (CUDA, 500 trials) had one 7x7 layer, the stem ``[1, 3, 608, 608]
x [16, 3, 7, 7]`` stride 1 pad 3, far below LibTorch (108 ms vs 30 ms end to end); the
others are 3x3 and 1x1 convolutions from the same log. Each workload is one
``relax.op.nn.conv2d`` (NCHW/OIHW, float32), its weight passed at run time as the log's
``conv2d_nchw`` tasks measured it (which also keeps the exported artifacts small).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pytest_tvmperf.workload import Workload


class ConvLayer(NamedTuple):
    """One conv2d of the log: NCHW input, OIHW weight, stride, symmetric padding."""

    data: tuple[int, int, int, int]
    weight: tuple[int, int, int, int]
    stride: int
    pad: int


DLA_LAYERS: dict[str, ConvLayer] = {
    # the 7x7 layer the report singles out (direct vs Winograd: 0.00067 s vs 0.07 s)
    "stem": ConvLayer((1, 3, 608, 608), (16, 3, 7, 7), 1, 3),
    "level0_3x3": ConvLayer((1, 16, 608, 608), (16, 16, 3, 3), 1, 1),
    "level1_3x3_s2": ConvLayer((1, 16, 608, 608), (32, 16, 3, 3), 2, 1),
    "level2_3x3": ConvLayer((1, 64, 152, 152), (64, 64, 3, 3), 1, 1),
    "level3_3x3_s2": ConvLayer((1, 128, 76, 76), (256, 128, 3, 3), 2, 1),
    "level4_1x1": ConvLayer((1, 256, 38, 38), (128, 256, 1, 1), 1, 0),
    "level5_3x3": ConvLayer((1, 512, 19, 19), (512, 512, 3, 3), 1, 1),
    "head_1x1": ConvLayer((1, 256, 152, 152), (2, 256, 1, 1), 1, 0),
}


def scaled_layer(layer: str, scale: float = 1.0) -> ConvLayer:
    """The layer with its spatial size multiplied by ``scale`` (rounded, at least 1)."""
    if layer not in DLA_LAYERS:
        raise ValueError(f"dla_conv(layer={layer!r}): unknown layer; choose one of {', '.join(DLA_LAYERS)}")
    if not scale > 0:
        raise ValueError(f"dla_conv(scale={scale!r}): scale must be > 0")
    conv = DLA_LAYERS[layer]
    n, c, h, w = conv.data
    return conv._replace(data=(n, c, max(1, round(h * scale)), max(1, round(w * scale))))


def conv2d_nchw_reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """conv2d NCHW x OIHW in NumPy: im2col windows (a strided view) contracted with the weight."""
    kh, kw = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    # windows: (N, C, Ho, Wo, kh, kw); contract C, kh, kw -> (N, Ho, Wo, O)
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)).astype(x.dtype, copy=False)


#: the largest spatial scale whose simulated cost is counted as it is (the stem at 0.25: ~40 ms native)
SIMULATE_SCALE = 0.25


def dla_conv(layer: str = "stem", scale: float = 1.0, seed: int = 0) -> Workload:
    """One DLA conv2d layer (see :data:`DLA_LAYERS`) as a Relax module.

    layer
        a key of :data:`DLA_LAYERS`; ``"stem"`` is the report's 7x7 layer.
    scale
        multiplies the spatial size (``0.125``: the stem at 76x76, for fast tests; ``1.0``:
        the log's shape). Above :data:`SIMULATE_SCALE` the simulated cost is counted at that
        scale (``simulate_as``): the full stem (679 ms untuned) takes ~1 min under valgrind.
    """
    from tvm import relax

    conv = scaled_layer(layer, scale)
    # TVM 0.26 renamed relax.TensorStructInfo to TensorType (0.25's TensorType takes an ndim):
    # either name, so --tvmperf-against-tvm=0.25.0 builds it too
    tensor = getattr(relax, "TensorStructInfo", None) or relax.TensorType
    x = relax.Var("x", tensor(conv.data, "float32"))
    weight = relax.Var("weight", tensor(conv.weight, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, weight]):
        with bb.dataflow():
            layouts = dict(data_layout="NCHW", kernel_layout="OIHW", out_dtype="float32")
            y = bb.emit(relax.op.nn.conv2d(x, weight, strides=conv.stride, padding=conv.pad, **layouts))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    mod = bb.get()

    fan_in = int(np.prod(conv.weight[1:]))
    w = (np.random.default_rng(seed + 1).standard_normal(conv.weight) / np.sqrt(fan_in)).astype("float32")

    def make_inputs(rng: np.random.Generator, dims) -> list[np.ndarray]:
        return [rng.standard_normal(conv.data).astype("float32")]

    def reference(data: np.ndarray) -> np.ndarray:
        return conv2d_nchw_reference(data, w, conv.stride, conv.pad)

    def torch_peer():
        """The same convolution in eager PyTorch (``nn.Conv2d``, no bias; on a GPU test, on the GPU)."""
        from pytest_tvmperf.workloads.torch_model import require_torch, torch_runner

        torch = require_torch()
        module = torch.nn.Conv2d(
            conv.weight[1], conv.weight[0], conv.weight[2:], stride=conv.stride, padding=conv.pad, bias=False
        )
        with torch.no_grad():
            module.weight.copy_(torch.from_numpy(w))
        return torch_runner(module.eval())

    return Workload(
        name=f"dla_conv(layer={layer!r}, scale={scale})",
        program=mod,
        make_inputs=make_inputs,
        reference=reference,
        params=(("weight", w),),
        rtol=1e-4,
        atol=1e-4,
        seed=seed,
        peers={"numpy": lambda: reference, "torch": torch_peer},
        simulate_as=dla_conv(layer, SIMULATE_SCALE, seed) if scale > SIMULATE_SCALE else None,
    )
