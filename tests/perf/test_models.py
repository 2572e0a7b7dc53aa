"""The project's perf suite, models: the reported scenarios end to end. Tuned builds
(the committed tuning database, baselines/tuning), peer frameworks timed side by side,
and the relations the reports were about. Peers are timed when --tvmperf-peers asks
(the ini of this project asks for all) or a vs_<peer> limit gates them."""

import pytest

from pytest_tvmperf import workloads

PIPELINES = ["default", "dlight", "tuned"]


@pytest.mark.tvmperf(executors=["vm-bytecode"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_mlp_pipelines(tvmperf, pipeline):
    """Seed mlp: the 1024-512-256-128 MLP at batch 1 under each pipeline, against NumPy
    and eager PyTorch. Tuning takes it from ~20x PyTorch's time to about PyTorch's."""
    tvmperf.check(workloads.mlp(batch=1).with_pipeline(pipeline))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
@pytest.mark.parametrize(
    "layer",
    [
        # the 7x7 stem the report singled out: tuned (32 trials) it takes ~0.5x PyTorch's time
        pytest.param("stem", marks=pytest.mark.tvmperf(vs_torch=1.0)),
        # a 1x1 layer: tuned with 32 trials it still takes ~4x PyTorch's (mkldnn) time on the
        # CPU its records were tuned on (znver4, AVX-512); on one without AVX-512 the same
        # records read 7.0-9.7x (Zen 3, 2026-11-27), so the limit holds on either
        pytest.param("level4_1x1", marks=pytest.mark.tvmperf(vs_torch=15.0)),
    ],
)
def test_dla_conv_tuned(tvmperf, layer):
    """Seed slower-than-pytorch-after-tuning: full-size DLA conv2d layers, tuned, gated
    against eager PyTorch (the ratio table shows where each layer stands)."""
    tvmperf.check(workloads.dla_conv(layer).with_pipeline("tuned"))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_torch_mlp_dynamic_batch(tvmperf):
    """The MLP as a PyTorch module through torch.export with a dynamic batch."""
    tvmperf.check(workloads.torch_mlp(batch="n"))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_onnx_small_mlp(tvmperf):
    """A model imported with relax.frontend.onnx, against onnxruntime and NumPy."""
    tvmperf.check(workloads.small_mlp_onnx())


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_dynamic_batch_at_most_1_5x_static(tvmperf):
    """Seed vm-dynamic-shape-slowdown: the dynamic-batch build, run at batch 4, takes at
    most 1.5x the static batch-4 build's time (the report saw up to 4.5x)."""
    tvmperf.assert_ratio(workloads.mlp(batch="n", run_batch=4), workloads.mlp(batch=4), at_most=1.5)


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_compiled_not_slower_than_bytecode(tvmperf):
    """VM compiled mode is not clearly slower than bytecode: at most 1.15x (equal
    programs measure 1.00x; with the 7% ratio noise allowance a limit closer to 1 would
    be inconclusive)."""
    w = workloads.mlp(batch=1)
    tvmperf.assert_ratio(tvmperf.variant(w, executor="vm-compiled"), w, at_most=1.15)


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_bound_weights_not_slower_than_runtime_weights(tvmperf):
    """Seed vm-api-params-mismatch: weights bound as constants are not slower than the
    same weights passed at run time (the report saw 1.65x the other way)."""
    tvmperf.assert_ratio(workloads.mlp(bind_params=True), workloads.mlp(bind_params=False), at_most=1.0)


@pytest.mark.tvmperf(executors=["vm-bytecode"], vs_torch=3.0)
@pytest.mark.parametrize("pipeline", ["default", "tuned"])
def test_dla34(tvmperf, pipeline):
    """Seed slower-than-pytorch-after-tuning end to end: the DLA-34 backbone (CenterNet's,
    written here as a torch module) at the CI size (32x32, a quarter of the channels),
    gated against eager PyTorch, untuned and tuned (the committed database: `tvmperf tune
    --budget 10m tests/perf/test_models.py -k "dla34 and tuned"`; its schedules apply on
    every x86 CPU, issue 32); the full 224x224 network is benchmarks/dla34.py's."""
    tvmperf.check(workloads.dla34(size=32, width=0.25).with_pipeline(pipeline))
