"""Measuring a borderline time verdict until it is decided (issue 60), on the injected timer:
a ratio whose interval straddles its limit after the confirmation gets more rounds, in fresh
measurements, until its interval lies wholly on one side; the budget bounds it and says so."""

from __future__ import annotations

ONE_TEST = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"]{marker})
def test_k(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


def _borderline(project, marker: str = "") -> None:
    project.pytester.makepyfile(test_perf=ONE_TEST.format(marker=marker))
    project.set_env("TVMPERF_FAKE_SCALE", "1")
    project.set_env("TVMPERF_FAKE_SPREAD", "0")
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    # today's rounds 1.07x the baseline program's, -10%, 0, +10% in turn: an interval around 1.07x whose
    # first 15 rounds reach under 1.0 and whose confirmation's 45 still reach under the 5% limit
    project.set_env("TVMPERF_FAKE_SCALE", "1.07")
    project.set_env("TVMPERF_FAKE_SPREAD", "0.1")


def test_a_borderline_slowdown_gets_more_rounds_and_fails(project):
    _borderline(project)
    result = project.run("-v", "--tvmperf-threshold=time=5%")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*first measurement inconclusive at 1.07x*re-measured with 45 samples in all*"
            "measured until decided: * more rounds in * fresh measurements, * more look(s), * s "
            "(budget 60 s or 1000 rounds, --tvmperf-decide-budget): regressed at 1.07x*",
            "*1 test(s): decided after 135 more rounds*",
        ]
    )


def test_the_same_slowdown_is_inconclusive_with_the_budget_off_or_spent(project):
    _borderline(project)
    off = project.run("-v", "--tvmperf-threshold=time=5%", "--tvmperf-decide-budget=off")
    off.assert_outcomes(passed=1, warnings=1)
    assert "measured until decided" not in off.stdout.str()
    # a marker's budget of 15 rounds: one more measurement of 15, then inconclusive, and it says why
    _borderline(project, marker=', decide_budget="60s,15"')
    spent = project.run("-v", "--tvmperf-threshold=time=5%", "--tvmperf-json=results.json")
    spent.assert_outcomes(passed=1, warnings=1)
    # the results file says it too, and reads back as it was written
    from pytest_tvmperf.result.entry import load_results

    (entry,) = load_results(project.pytester.path / "results.json")
    settled = entry.time.settled
    assert (settled.rounds, settled.batches, settled.looks, settled.stopped) == (
        15,
        1,
        1,
        "its budget's 15 rounds spent",
    )
    assert settled.seconds > 0 and settled.budget == "60 s or 15 rounds" and not settled.decided
    spent.stdout.fnmatch_lines(
        [
            "*measured until decided: 15 more rounds in 1 fresh measurements, 1 more look(s)*"
            "still inconclusive at 1.07x*: its budget's 15 rounds spent*",
            "*1 test(s): undecided after 15 more rounds (its budget's 15 rounds spent)*",
        ]
    )


def test_the_budget_in_seconds_is_the_wall_clock_the_measurements_took(project):
    """The injected timer's samples take no time, but loading both programs anew does (and a
    microsecond of wall clock passes in any batch): one batch spends a budget of 1 us."""
    _borderline(project)
    result = project.run("-v", "--tvmperf-threshold=time=5%", "--tvmperf-decide-budget=0.000001s")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*measured until decided: 15 more rounds in 1 fresh*still inconclusive at 1.07x*: its budget's 1e-06 s spent*"]
    )


def test_an_unchanged_program_spends_no_budget(project):
    _borderline(project)
    project.set_env("TVMPERF_FAKE_SCALE", "1.0")
    project.set_env("TVMPERF_FAKE_SPREAD", "0")
    result = project.run("-v", "--tvmperf-threshold=time=5%")
    result.assert_outcomes(passed=1)
    assert "measured until decided" not in result.stdout.str()


def test_a_bad_budget_is_a_usage_error_naming_the_option_or_the_keyword(project):
    project.pytester.makepyfile(test_perf=ONE_TEST.format(marker=""))
    result = project.run("--tvmperf-decide-budget=0")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--tvmperf-decide-budget*a duration must be more than 0*"])
    result = project.run("--tvmperf-decide-budget=60s,0.5")
    result.stderr.fnmatch_lines(["*--tvmperf-decide-budget*the rounds must be a whole number of at least 1*"])
    project.pytester.makepyfile(test_perf=ONE_TEST.format(marker=', decide_budget="soon"'))
    result = project.run()
    assert result.ret == 4
    combined = "\n".join(result.stdout.lines + result.stderr.lines)
    assert "test_perf.py::test_k: @pytest.mark.tvmperf: decide_budget='soon': 'soon' is not a duration" in combined
