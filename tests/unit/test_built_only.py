"""A target built but not run here (cuda without a GPU): the pure parts of its mode (measure/plan.py),
and a CPU-only record sharing a baseline with a GPU machine's."""

from __future__ import annotations

from dataclasses import replace

from _factories import exact, record

from pytest_tvmperf.measure.plan import measured_count, summary_line, with_baseline_calls
from pytest_tvmperf.judge.compare import compare
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS
from pytest_tvmperf.judge.verdict import Verdict


def test_the_baselines_calls_stand_when_everything_else_matches():
    gpu_baseline = record(metrics=exact(calls=4))
    built = exact(calls=None)
    assert with_baseline_calls(built, gpu_baseline).calls == {"fused_add": 4}
    changed = exact(instructions=11, calls=None)
    assert with_baseline_calls(changed, gpu_baseline) == changed  # new code: its own metrics
    assert with_baseline_calls(built, None) == built


def test_a_cpu_only_update_keeps_the_gpu_machines_timings():
    gpu_baseline = record(metrics=exact(calls=4))
    cpu_only = replace(record(samples=None), exact=with_baseline_calls(exact(calls=None), gpu_baseline))
    merged = cpu_only.merged_over(gpu_baseline)
    assert merged.timings == gpu_baseline.timings


def test_a_record_without_timings_is_gated_on_exact_metrics_and_time_is_na():
    now = replace(record(samples=None), exact=exact(instructions=12, calls=None))
    comparison = compare(now, record(metrics=exact()), DEFAULT_THRESHOLDS)
    assert comparison.get("time").status == Verdict.NA and comparison.get("calls").status == Verdict.NA
    assert [v.metric for v in comparison.regressions] == ["instructions"]


def test_the_counts_and_words_of_the_summary():
    assert measured_count(exact(calls=None)) == 3  # instructions, kernels, storage_bytes; calls need a run
    line = summary_line("cuda", "no GPU")
    assert line.startswith("target cuda: no GPU on this machine: built and gated the exact metrics only")
    assert line.endswith("correctness, executed calls and time were not checked")
    assert "built and recorded" in summary_line("cuda", "no GPU", "recorded")


def test_a_mode_is_a_choice_of_measurements():
    from pytest_tvmperf.measure.plan import UNTIMED_NOTE, Mode, plan_for

    timed, untimed, built = plan_for(True, None, True), plan_for(True, None, False), plan_for(False, "no GPU", True)
    assert (timed.mode, untimed.mode, built.mode) == (Mode.TIMED, Mode.UNTIMED, Mode.BUILT_ONLY)
    assert [p.time for p in (timed, untimed, built)] == [True, False, False]
    assert [p.runs for p in (timed, untimed, built)] == [True, True, False]
    assert untimed.outcome_note(exact(), 3) == UNTIMED_NOTE and timed.outcome_note(exact(), 3) == ""
    assert built.outcome_note(exact(calls=None), 4) == "no GPU: built and gated 4 exact metrics, not run"
    assert built.outcome_note(exact(calls=None), None) == "no GPU: built and recorded 3 exact metrics, not run"
    assert built.message_note("x") == "x (correctness and time not checked)"
    assert untimed.message_note("") == "timing off: time was not measured"
