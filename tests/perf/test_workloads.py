"""The project's own perf suite: the workloads of the users' reports, gated against
the committed baselines in baselines/ (README: the main command)."""

import pytest

from pytest_tvmperf import workloads

VM = ["vm-bytecode", "vm-compiled"]


@pytest.mark.tvmperf(executors=VM)
@pytest.mark.parametrize("bind_params", [True, False], ids=["bound", "runtime-weights"])
def test_mlp_static(tvmperf, bind_params):
    """Seed vm-api-params-mismatch: weights bound as constants vs passed at run time."""
    tvmperf.check(workloads.mlp(batch=1, bind_params=bind_params))


@pytest.mark.tvmperf(executors=VM)
@pytest.mark.parametrize("bind_params", [True, False], ids=["bound", "runtime-weights"])
def test_mlp_dynamic_batch(tvmperf, bind_params):
    """Seed vm-dynamic-shape-slowdown: a symbolic batch, timed at batch 1."""
    tvmperf.check(workloads.mlp(batch="n", bind_params=bind_params))


@pytest.mark.tvmperf(executors=["prim"])
@pytest.mark.parametrize("schedule", ["default", "parallel"])
def test_rgb2yuv(tvmperf, schedule):
    """Seed rgb2yuv-te-schedule-tuning: the plain vs the parallel/vectorized schedule."""
    tvmperf.check(workloads.rgb2yuv(schedule=schedule))


@pytest.mark.tvmperf(executors=["prim"])
def test_multiply(tvmperf):
    """The TE tutorial's A*B over symbolic (m, n)."""
    tvmperf.check(workloads.multiply())
