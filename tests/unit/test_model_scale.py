"""Model-scale cost (issue 32): the rounds a time budget allows, the precision they reach,
the budget's parsing and precedence, and the simulated cost's prediction (all pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tvmperf.config.options import DEFAULT_TIME_BUDGET_S
from pytest_tvmperf.config.markers import MarkerSettings
from pytest_tvmperf.config.per_test import settings_for_test
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.config.parsing import parse_duration
from pytest_tvmperf.measure import simulate
from pytest_tvmperf.measure.budget import MIN_ROUNDS, plan_rounds, precision


def test_a_kernel_of_milliseconds_keeps_every_asked_round():
    plan = plan_rounds(0.002, heavy=3, light=1, asked=15, budget_s=60, min_sample_s=0.02)
    assert (plan.rounds, plan.cut, plan.note()) == (15, False, "")


def test_a_network_of_seconds_is_timed_in_the_rounds_its_budget_holds():
    # workload + baseline + torch at 1 s each, the reference at 20 ms: 3.02 s a round, 19 fit
    # in 60 s (18 after the warm-up): all 15 asked
    assert not plan_rounds(1.0, heavy=3, light=1, asked=15, budget_s=60, min_sample_s=0.02).cut
    # 4 s each: 12.02 s a round, 4 fit: never fewer than the sequential verdict's first look
    slow = plan_rounds(4.0, heavy=3, light=1, asked=15, budget_s=60, min_sample_s=0.02)
    assert slow.rounds == MIN_ROUNDS == 6 and slow.cut
    # 0.5 s each, workload and baseline: 1.02 s a round, 11 fit in 12 s, 10 after the warm-up
    mid = plan_rounds(0.5, heavy=2, light=1, asked=15, budget_s=12, min_sample_s=0.02)
    assert mid.rounds == 10 and mid.cut
    assert mid.note(0.031) == (
        "timed in 10 of 15 rounds (~1.02 s each) within the 12 s time budget; "
        "precision reached: +-3.1% (--tvmperf-time-budget)"
    )


def test_an_unknown_run_time_keeps_the_asked_rounds():
    assert plan_rounds(None, 1, 1, 15, 60, 0.02).rounds == 15


def test_precision_is_the_half_width_of_the_interval():
    assert precision(0.9, 1.1, 1.0) == pytest.approx(0.1)
    assert precision(None, 1.1, 1.0) is None


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("1.5s", 1.5), ("2m", 120.0), ("1h", 3600.0), (" 30S ", 30.0)]
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "fast", "-5s", "0", "2 days", True])
def test_a_budget_that_cannot_be_parsed_lists_the_accepted_forms(text):
    with pytest.raises(ValueError, match=r"accepted forms: 90s, 30m, 1\.5h, 1h30m"):
        parse_duration(text)


def test_the_budget_comes_from_the_command_line_then_the_marker_then_the_ini():
    from_ini, from_cli = Settings(time_budget=30.0), Settings(time_budget=10.0, pinned=frozenset({"time_budget"}))
    assert settings_for_test(Settings()).time_budget_s == DEFAULT_TIME_BUDGET_S
    assert settings_for_test(from_ini).time_budget_s == 30.0
    assert settings_for_test(from_ini, MarkerSettings(time_budget=120.0)).time_budget_s == 120.0
    assert settings_for_test(from_cli, MarkerSettings(time_budget=120.0)).time_budget_s == 10.0


def test_the_simulated_cost_predicts_its_duration_and_says_what_to_do_past_its_budget():
    assert simulate.predicted_s(0.5) == 0.5 * simulate.SLOWDOWN
    assert simulate.too_long("mlp", 0.001) is None and simulate.too_long("mlp", None) is None
    line = simulate.too_long("dla34(size=224, width=1.0, batch=1, seed=0)", 5.91)
    assert line == (
        "skipped dla34(size=224, width=1.0, batch=1, seed=0) up front (not waited for): one run takes "
        "5.91 s here, so ~591 s under valgrind (~100x), past its 120 s budget; give the workload a "
        "scaled-down simulate_as=smaller_workload (counted in its place), or --tvmperf-simulate=off "
        "(marker simulate='off')"
    )


def test_a_failed_simulations_log_is_kept_where_the_next_run_leaves_it(tmp_path: Path):
    log = tmp_path / "scratch" / "valgrind.log"
    log.parent.mkdir()
    log.write_text("==1== Callgrind, a call-graph generating cache profiler\n")
    kept = simulate.keep_log(log, root=tmp_path / "cache")
    assert kept is not None and kept.parent == tmp_path / "cache" / "simulate-logs"
    assert kept.read_text() == log.read_text()
    assert simulate.keep_log(tmp_path / "missing.log", root=tmp_path / "cache") is None


def test_the_prediction_rests_on_a_warm_run_not_the_first():
    """The checking run is a program's first call (one-time costs): a warm call decides."""
    from types import SimpleNamespace

    calls = []
    ok = SimpleNamespace(
        compiled=SimpleNamespace(run=lambda args, specs: calls.append((args, specs))),
        args=["x"],
        out_specs=[((1,), "float32")],
    )
    assert simulate.warm_run_s(ok) >= 0 and calls == [(["x"], [((1,), "float32")])]

    def broken(args, specs):
        raise RuntimeError("device gone")

    assert simulate.warm_run_s(SimpleNamespace(compiled=SimpleNamespace(run=broken), args=[], out_specs=[])) is None
