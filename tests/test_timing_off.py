"""--tvmperf-timing=off (ini tvmperf_timing, marker timing=False): correctness and exact
metrics only, no timing, no time verdict; the summary says so in one line."""

from __future__ import annotations

import os
import shutil

import pytest

TESTS = """
import os
import os
import shutil

import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, bind_params=os.environ.get("MLP_BIND", "1") == "1"))

@pytest.mark.tvmperf(executors=["prim"], timing=False)
def test_untimed(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""

#: a timer that fails the test when called: nothing may be timed with timing off
NO_TIMER = """

@pytest.fixture
def tvmperf_timer(tvmperf_timer):
    def timer(task, rounds):
        if os.environ.get("TVMPERF_NO_TIMING") == "1":
            raise AssertionError("timed although timing is off")
        return tvmperf_timer(task, rounds)
    return timer
"""


def test_timing_off_checks_exact_metrics_only(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    entry = project.baselines()["tests"]["test_untimed[llvm-prim]"]
    assert entry["timings"] == {}  # the marker keeps it untimed even while recording
    assert project.baselines()["tests"]["test_mlp[llvm-vm-bytecode]"]["timings"]

    project.set_env("TVMPERF_FAKE_SCALE", "3")  # a 3x slowdown that timing would catch
    timed = project.run()
    timed.assert_outcomes(passed=1, failed=1)
    timed.stdout.fnmatch_lines(["*time*regressed*"])

    off = project.run("--tvmperf-timing=off")
    off.assert_outcomes(passed=2)
    off.stdout.fnmatch_lines(
        ["*tvmperf summary*", "2 test(s): timing off: correctness and exact metrics only, time not measured*"]
    )
    assert "regressed" not in off.stdout.str()

    # exact metrics are still gated with timing off
    project.set_env("MLP_BIND", "0")
    exact = project.run("--tvmperf-timing=off")
    exact.assert_outcomes(passed=1, failed=1)
    exact.stdout.fnmatch_lines(["*instructions 17 -> 28*", "*note: timing off: time was not measured*"])


def test_timing_off_times_nothing_and_precedence(project):
    project.pytester.makepyfile(test_perf=TESTS + NO_TIMER)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.set_env("TVMPERF_NO_TIMING", "1")
    # ini off: nothing is timed (the timer would fail the test)
    project.pytester.makeini("[pytest]\ntvmperf_timing = off\n")
    project.run().assert_outcomes(passed=2)
    # the command line beats the ini and the marker: both timed (and the timer fails them)
    on = project.run("--tvmperf-timing=on")
    on.assert_outcomes(failed=2)
    on.stdout.fnmatch_lines(["*timed although timing is off*"])
    # ini on, marker off: the marker wins for its test
    project.pytester.makeini("[pytest]\ntvmperf_timing = on\n")
    project.run("-k", "untimed").assert_outcomes(passed=1)


def test_timing_off_with_update_is_a_usage_error(project):
    project.pytester.makepyfile(test_perf=TESTS)
    result = project.run("--tvmperf-update", "--tvmperf-timing=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tvmperf-update records time baselines: drop --tvmperf-timing=off*"])


def test_bad_timing_value_names_the_option(project):
    project.pytester.makepyfile(test_perf=TESTS.replace("timing=False", "timing='sometimes'"))
    result = project.run()
    assert result.ret != 0
    assert "timing='sometimes'" in result.stdout.str() + result.stderr.str()


ONE_SMALL = """
import os
import shutil

import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_small(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


@pytest.mark.skipif(
    shutil.which("valgrind") is None or os.uname().machine not in ("x86_64", "amd64"),
    reason="valgrind is not installed on this x86-64 host (apt-get install valgrind)",
)
def test_timing_off_says_what_the_simulated_cost_did(project, simulated_cost):
    """issue 26: a timing-off run printed no line about the simulated cost, the gate that holds without time."""
    project.pytester.makepyfile(test_perf=ONE_SMALL)
    project.run("--tvmperf-update", "--tvmperf-simulate=on", "--tvmperf-repeat=3").assert_outcomes(passed=1)
    off = project.run("--tvmperf-timing=off", "--tvmperf-simulate=on")
    off.assert_outcomes(passed=1)
    off.stdout.fnmatch_lines(
        [
            "1 test(s): timing off: correctness and exact metrics only, time not measured "
            "(--tvmperf-timing=off); simulated cost gated (cpu_instructions, est_cycles)"
        ]
    )
    not_simulated = project.run("--tvmperf-timing=off", "--tvmperf-simulate=off")
    not_simulated.assert_outcomes(passed=1)
    not_simulated.stdout.fnmatch_lines(
        [
            "1 test(s): timing off: correctness and exact metrics only, time not measured (--tvmperf-timing=off)",
            "tvmperf: simulated cost: switched off (--tvmperf-simulate=off)",
        ]
    )
