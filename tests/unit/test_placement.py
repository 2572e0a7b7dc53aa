"""build/executors.placed_sampler: copies of one artifact, reloadable after it is gone."""

from __future__ import annotations

import numpy as np

from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.executors import placed_sampler
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.workload import Workload


def scale_workload() -> Workload:
    from tvm import te

    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    return Workload(
        name="scale2",
        program=te.create_prim_func([a, b]),
        make_inputs=lambda rng, dims: [np.ones(64, "float32")],
        reference=lambda x: x * np.float32(2),
    )


def test_a_reloaded_sampler_loads_new_copies_after_the_artifact_is_gone(tmp_path):
    target = resolve_target("llvm")
    workload = scale_workload()
    compiled = get_executor("prim").compile(workload, target)
    artifact = tmp_path / "a.so"
    compiled.export(str(artifact))
    args = [np.ones(64, "float32")]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    sampler = placed_sampler(
        artifact, "prim", workload.entry, target, args, [((64,), "float32")], 1, scratch, placements=2
    )
    artifact.unlink()  # the run discards its temporary export before a confirming re-measure
    before = set(scratch.iterdir())
    again = sampler.reloaded()
    assert again() > 0 and sampler() > 0
    assert len(set(scratch.iterdir()) - before) == 2  # two new copies: new placements
