"""The GPU seeds on ``cuda``: run with ``--tvmperf-targets=cuda`` (README "CUDA"). On a
machine without a GPU they are built (nvcc, ptxas) and gated on their exact metrics:
VM instructions, kernels, planned bytes, and per kernel registers, shared/local/spill
bytes and PTX instructions; with a GPU they are also checked and timed."""

import pytest

from pytest_tvmperf import workloads
from pytest_tvmperf.workloads.dla import DLA_LAYERS

CUDA = pytest.mark.tvmperf(targets=["cuda"])


@CUDA
@pytest.mark.tvmperf(executors=["prim"])
def test_rgb2yuv_gpu(tvmperf):
    """Seed rgb2yuv-te-schedule-tuning, GPU side: one pixel per thread, 256 threads a block."""
    tvmperf.check(workloads.rgb2yuv(schedule="gpu"))


@CUDA
@pytest.mark.tvmperf(executors=["vm-bytecode"])
@pytest.mark.parametrize("layer", list(DLA_LAYERS))
def test_dla_conv_cuda(tvmperf, layer):
    """The DLA-34 conv layers of the CUDA tuning log, default GPU schedules (dlight)."""
    tvmperf.check(workloads.dla_conv(layer=layer))


@CUDA
@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_mlp_cuda(tvmperf):
    """The MLP of the first report on the GPU."""
    tvmperf.check(workloads.mlp(batch=1))
