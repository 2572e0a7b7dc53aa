"""--tvmperf-time-budget (issue 32): a program whose rounds would take longer than the
test's budget is timed in fewer rounds, and the summary says how many and the precision
they reached. No timing asserts: a budget far below one round cuts any program to the
sequential verdict's first look (6 rounds)."""

from __future__ import annotations

import pytest

TEST = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["vm-bytecode"]{marker})
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""
ARGS = ("--tvmperf-peers=none", "--tvmperf-repeat=15")


def rounds(project) -> int:
    (timing,) = project.baselines()["tests"]["test_mlp[llvm-vm-bytecode]"]["timings"].values()
    return timing["stats"]["rounds"]


def test_a_budget_below_one_round_times_the_first_look_only_and_says_so(project):
    project.pytester.makepyfile(test_perf=TEST.format(marker=', time_budget="0.001s"'))
    result = project.run("--tvmperf-update", *ARGS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["1 test(s): *timed in 6 of 15 rounds (~* s each) within the 0.001 s time budget (--tvmperf-time-budget)*"]
    )
    assert rounds(project) <= 6
    gate = project.run(*ARGS)
    gate.assert_outcomes(passed=1)
    gate.stdout.fnmatch_lines(
        [
            "1 test(s): timed in 6 of 15 rounds (~* s each) within the 0.001 s time budget; "
            "precision reached: +-*% (--tvmperf-time-budget)*"
        ]
    )


def test_the_default_budget_keeps_every_round_of_a_fast_kernel(project):
    project.pytester.makepyfile(test_perf=TEST.format(marker=""))
    result = project.run("--tvmperf-update", *ARGS)
    result.assert_outcomes(passed=1)
    assert "time budget" not in result.stdout.str()


def test_a_budget_that_cannot_be_parsed_is_a_usage_error_listing_the_forms(project):
    project.pytester.makepyfile(test_perf=TEST.format(marker=""))
    result = project.run("--tvmperf-time-budget=soon", *ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--tvmperf-time-budget*'soon' is not a duration; accepted forms: 90s, 30m, 1.5h, 1h30m*"]
    )
