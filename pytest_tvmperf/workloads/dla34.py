"""The DLA-34 backbone of CenterNet (seed ``slower-than-pytorch-after-tuning``), written
by this project from the architecture (Yu et al., "Deep Layer Aggregation", as CenterNet's
``dla.py`` builds it) as a ``torch.nn.Module``, imported through :func:`torch_workload`.

A 7x7 base layer, levels 0-1 of 3x3 convs, levels 2-5 of ``Tree`` aggregation nodes;
channels 16-32-64-128-256-512, levels 1-1-1-2-2-1; every level's output returned (6
tensors). Weights are seeded by NumPy (the same on every torch version), batch-norm
statistics not the identity, so the check means something. No timm or torchvision
(which does not install beside a CPU torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_tvmperf.workload import Workload
from pytest_tvmperf.workloads.torch_model import require_torch, torch_workload

#: DLA-34's levels (blocks per level) and channels (per level), as in CenterNet's ``dla34``
LEVELS = (1, 1, 1, 2, 2, 1)
CHANNELS = (16, 32, 64, 128, 256, 512)


def _modules(torch: Any):
    """The DLA-34 classes (defined here so torch is imported only when one is built)."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes: int, planes: int, stride: int = 1):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)

        def forward(self, x, residual=None):
            residual = x if residual is None else residual
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + residual)

    class Root(nn.Module):  # DLA-34's roots: 1x1 convs, no residual
        def __init__(self, in_channels: int, out_channels: int):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, 1, stride=1, bias=False, padding=0)
            self.bn = nn.BatchNorm2d(out_channels)
            self.relu = nn.ReLU()

        def forward(self, *children):
            return self.relu(self.bn(self.conv(torch.cat(children, 1))))

    class Tree(nn.Module):
        def __init__(self, levels: int, in_channels: int, out_channels: int, stride=1, level_root=False, root_dim=0):
            super().__init__()
            root_dim = (root_dim or 2 * out_channels) + (in_channels if level_root else 0)
            if levels == 1:
                self.tree1 = BasicBlock(in_channels, out_channels, stride)
                self.tree2 = BasicBlock(out_channels, out_channels, 1)
                self.root = Root(root_dim, out_channels)
            else:
                self.tree1 = Tree(levels - 1, in_channels, out_channels, stride, root_dim=0)
                self.tree2 = Tree(levels - 1, out_channels, out_channels, root_dim=root_dim + out_channels)
            self.level_root = level_root
            self.levels = levels
            self.downsample = nn.MaxPool2d(stride, stride=stride) if stride > 1 else None
            # CenterNet's also builds one at levels > 1 that forward never uses (timm drops it too)
            self.project = None
            if levels == 1 and in_channels != out_channels:
                conv = nn.Conv2d(in_channels, out_channels, 1, stride=1, bias=False)
                self.project = nn.Sequential(conv, nn.BatchNorm2d(out_channels))

        def forward(self, x, residual=None, children=None):
            children = [] if children is None else children
            bottom = self.downsample(x) if self.downsample is not None else x
            residual = self.project(bottom) if self.project is not None else bottom  # tree1 of levels > 1 ignores it
            if self.level_root:
                children.append(bottom)
            x1 = self.tree1(x, residual)
            if self.levels == 1:
                x2 = self.tree2(x1)
                return self.root(x2, x1, *children)
            children.append(x1)
            return self.tree2(x1, children=children)

    class DLA(nn.Module):
        def __init__(self, levels, channels):
            super().__init__()
            self.base_layer = nn.Sequential(
                nn.Conv2d(3, channels[0], 7, stride=1, padding=3, bias=False), nn.BatchNorm2d(channels[0]), nn.ReLU()
            )
            self.level0 = self._conv_level(channels[0], channels[0], levels[0])
            self.level1 = self._conv_level(channels[0], channels[1], levels[1], stride=2)
            self.level2 = Tree(levels[2], channels[1], channels[2], 2, level_root=False)
            self.level3 = Tree(levels[3], channels[2], channels[3], 2, level_root=True)
            self.level4 = Tree(levels[4], channels[3], channels[4], 2, level_root=True)
            self.level5 = Tree(levels[5], channels[4], channels[5], 2, level_root=True)

        @staticmethod
        def _conv_level(inplanes: int, planes: int, convs: int, stride: int = 1):
            layers = []
            for i in range(convs):
                layers += [
                    nn.Conv2d(inplanes, planes, 3, stride=stride if i == 0 else 1, padding=1, bias=False),
                    nn.BatchNorm2d(planes),
                    nn.ReLU(),
                ]
                inplanes = planes
            return nn.Sequential(*layers)

        def forward(self, x):
            outs = []
            x = self.base_layer(x)
            for i in range(6):
                x = getattr(self, f"level{i}")(x)
                outs.append(x)
            return tuple(outs)

    return DLA


def dla34_module(width: float = 1.0, seed: int = 0) -> Any:
    """DLA-34 as an eval-mode ``torch.nn.Module``, channels ``CHANNELS`` times ``width``, seeded."""
    if not width > 0:
        raise ValueError(f"dla34(width={width!r}): width must be > 0 (1.0: the full network)")
    torch = require_torch()
    channels = tuple(max(1, round(c * width)) for c in CHANNELS)
    net = _modules(torch)(LEVELS, channels)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, torch.nn.Conv2d):
                fan_in = int(np.prod(mod.weight.shape[1:]))
                w = rng.standard_normal(tuple(mod.weight.shape)) * np.sqrt(2.0 / fan_in)
                mod.weight.copy_(torch.from_numpy(w.astype("float32")))
            elif isinstance(mod, torch.nn.BatchNorm2d):
                stats = (mod.weight, mod.bias, mod.running_mean, mod.running_var)
                for tensor, (low, high) in zip(stats, ((0.5, 1.0), (-0.1, 0.1), (-0.1, 0.1), (0.5, 1.5))):
                    tensor.copy_(torch.from_numpy(rng.uniform(low, high, mod.num_features).astype("float32")))
    return net.eval()


def dla34(size: int = 224, width: float = 1.0, batch: int = 1, seed: int = 0) -> Workload:
    """The DLA-34 backbone on a ``batch x 3 x size x size`` float32 image.

    size
        the image's height and width, a multiple of 32 for exact pooling (``224``: the
        report's; ``32`` with ``width=0.25``: the project's CI size).
    width
        multiplies every level's channels (``1.0``: 16-32-64-128-256-512, the report's
        network; ``0.25``: 4-8-16-32-64-128, for fast tests).

    Checked against the eager module (rtol/atol 1e-4), the ``"torch"`` peer for ``vs_torch``.
    A full-size run takes 0.1-10 s untuned on a CPU (see ``--tvmperf-time-budget``).
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 32:
        raise ValueError(f"dla34(size={size!r}): size must be an int >= 32 (the network downsamples 32x)")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"dla34(batch={batch!r}): batch must be an int >= 1")
    torch = require_torch()
    net = dla34_module(width, seed)
    example = (torch.zeros(batch, 3, size, size),)
    return torch_workload(
        net, example, name=f"dla34(size={size}, width={width}, batch={batch}, seed={seed})", seed=seed
    )
