"""An unchanged program is not timed against its baseline (--tvmperf-same-program,
default skip): the same code timed twice in one process measured 1.24x apart (CI, the
tuned DLA conv), which is where it landed in memory, not a regression."""

from __future__ import annotations

import json

TESTS = '''
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.rgb2yuv(schedule=os.environ.get("SCHEDULE", "default"), width=64, height=32))
'''


def _default(project):
    project.monkeypatch.delenv("TVMPERF_SAME_PROGRAM", raising=False)


def test_an_unchanged_program_passes_untimed_against_its_baseline_and_says_so(project):
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "2")  # the same code "measured" 2x slower: placement, not code
    result = project.run("-rA", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*same program, not timed against it*pass*"])
    assert "a/b, baseline rebuilt here" not in result.stdout.str()
    assert "regressed" not in result.stdout.str()


def test_same_program_time_times_it_side_by_side_all_the_same(project):
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    result = project.run("--tvmperf-same-program=time")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a/b ratio 2.0*", "*compared: a/b, baseline rebuilt here*"])
    project.set_env("TVMPERF_SAME_PROGRAM", "time")  # the environment variable does the same
    project.run().assert_outcomes(failed=1)
    project.pytester.makeini("[pytest]\ntvmperf_same_program = time\n")  # and the ini key
    _default(project)
    project.run().assert_outcomes(failed=1)


def test_a_changed_program_is_timed_side_by_side(project):
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("SCHEDULE", "parallel")  # another program: timed against the baseline's, and slower
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    result = project.run()
    result.stdout.fnmatch_lines(["*compared: a/b, baseline rebuilt here*"])
    assert "same program" not in result.stdout.str()


def test_a_baseline_of_another_tvm_version_is_timed_side_by_side(project):
    """Another TVM may generate other code from the same IR: not the same program."""
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    data = project.baselines()
    for entry in data["tests"].values():
        entry["tvm_version"] = "0.26.0"
    project.baseline_file().write_text(json.dumps(data))
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*compared: a/b, baseline rebuilt here*"])


def test_a_bad_same_program_value_is_a_usage_error_naming_the_choices(project):
    project.pytester.makepyfile(test_perf=TESTS)
    result = project.run("--tvmperf-same-program=sometimes")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*sometimes*not a same-program mode*skip*time*"])
