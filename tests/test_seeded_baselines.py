"""Baselines without the weights' values, by default (issue 47), as a user runs pytest: a
workload with bound weights records its IR and each weight's dtype, shape and sha256 only;
the gate rebuilds the baseline's program with seeded weights and times it a/b; a changed
weight is named in the failure; ``baseline_weights="exact"`` stores them as before, and such
a baseline still gates; an entry whose weights have neither files nor digests fails naming
the file, the test and the fix."""

from __future__ import annotations

import json

TESTS = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"]{marker})
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, seed=int(os.environ.get("WEIGHT_SEED", "0"))))
"""


def _stored(project, pattern):
    return sorted((project.pytester.path / "baselines").rglob(pattern))


def test_a_bound_weights_baseline_stores_no_values_gates_a_b_and_names_a_changed_weight(project):
    project.pytester.makepyfile(test_perf=TESTS.format(marker=""))
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    (entry,) = project.baselines()["tests"].values()
    assert "weights" not in entry["ir"] and _stored(project, "*.npy.gz") == []  # no weight value stored
    # mlp's three weight matrices (2.6 MB of float32) and biases: dtype, shape and digest only
    assert [line.split()[0] for line in entry["ir"]["seeded"]][:2] == ["float32[1024,512]", "float32[512]"]
    # the IR and each kernel in a file of its own, all small
    stored = {str(p.relative_to(project.pytester.path / "baselines")) for p in _stored(project, "*.json.gz")}
    kernels = {f"artifacts/ir/{line.split()[1][:24]}.json.gz" for line in entry["ir"]["functions"]}
    assert stored == {entry["ir"]["path"]} | kernels and len(kernels) >= 3
    assert sum(p.stat().st_size for p in _stored(project, "*.json.gz")) < 30_000

    result = project.run("-rA")  # rebuilt with seeded weights, timed side by side
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_mlp[[]llvm-vm-bytecode[]]*a/b, baseline rebuilt here*"])

    project.set_env("WEIGHT_SEED", "1")  # the same program, other weights ...
    project.set_env("TVMPERF_FAKE_SCALE", "2")  # ... and slower: the failure says the weights changed
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*note: the program's weights differ from the baseline's: * of * weight(s) changed (by sha256): "
            "#1 float32[[]1024,512[]]*timed with seeded values of its weights' dtypes and shapes*"
        ]
    )

    data = project.baselines()
    del next(iter(data["tests"].values()))["ir"]["seeded"]  # the digests lost, no weight files either
    project.baseline_file().write_text(json.dumps(data))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*baseline IR baselines/artifacts/ir/*.json.gz (named by field ir.path of entry "
            "'test_mlp[[]llvm-vm-bytecode[]]' in baselines/test_perf.json) holds 6 weight(s) stored "
            "without their values (float32[[]1024,512[]], *), and the entry has neither their files (field ir.weights) "
            "nor their digests (field ir.seeded)*Restore baselines/test_perf.json from version control, or re-record "
            "the test with `pytest --tvmperf-update`*"
        ]
    )


def test_exact_weights_are_stored_as_before_and_still_gate(project):
    project.pytester.makepyfile(test_perf=TESTS.format(marker=', baseline_weights="exact"'))
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    (entry,) = project.baselines()["tests"].values()
    assert "seeded" not in entry["ir"] and len(entry["ir"]["weights"]) >= 3  # the values, bit for bit
    assert sum(p.stat().st_size for p in _stored(project, "*.npy.gz")) > 2_000_000
    result = project.run("-rA")  # a baseline with stored weights gates as it did
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_mlp[[]llvm-vm-bytecode[]]*a/b, baseline rebuilt here*"])
    # the command line wins over the marker
    project.run("--tvmperf-update", "--tvmperf-baseline-weights=seeded", "--tvmperf-prune").assert_outcomes(passed=1)
    (entry,) = project.baselines()["tests"].values()
    assert "weights" not in entry["ir"] and entry["ir"]["seeded"] and _stored(project, "*.npy.gz") == []
