"""check/decide.py without the fixture, TVM or files: what a test's decision is for made-up
records, a confirmation that does or does not bear a slowdown out, peers, modes without
time, and the outcome-then-fail tail every mode (and --tvmperf-against-tvm) ends with."""

from __future__ import annotations

from dataclasses import replace

import pytest
from _factories import exact, machine, record

from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.decide import (
    Decision,
    Identity,
    Measured,
    conclude,
    confirm_time,
    decide,
    no_baseline,
    recorded,
)
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.judge.compare import TimePolicy
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.judge.timestats import TimeDecision
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.plan import Mode, Plan
from pytest_tvmperf.builder.timer import TimeSamples
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.values.record import Record, Timing

FAST = tuple(1e-3 * (1 + 0.001 * (i % 5)) for i in range(20))
SLOW = tuple(1.3 * s for s in FAST)
WHO = Identity(
    "tests/t.py::test_a[llvm-vm-bytecode]",
    "test_a[llvm-vm-bytecode]",
    "vm-bytecode",
    "llvm",
    "baselines/tests/t.json",
    "pytest --tvmperf-update tests/t.py::test_a[llvm-vm-bytecode]",
)
THRESHOLDS = Settings().thresholds
POLICY = TimePolicy()


def make(samples: TimeSamples, metrics=None) -> Record:
    mach = machine()
    return replace(record(None, metrics=metrics or exact()), timings={mach.fingerprint: Timing(mach, samples)})


def slower_peer() -> RatioVerdict:
    """TVM 2x the peer's time, the whole interval above a limit of 1.5x."""
    return RatioVerdict(
        "torch", 1.5, TimeDecision(Verdict.REGRESSED, 2.0 / 1.5, 1.9 / 1.5, 2.1 / 1.5, 0.95, "a/b", 0.0), 2e-3, 1e-3
    )


def ab(now, base) -> TimeSamples:
    return TimeSamples(tuple(now), baseline=tuple(base))


def measured(first: TimeSamples, again: TimeSamples | None = None, metrics=None) -> tuple[Measured, list]:
    calls: list = []

    def remeasure() -> TimeSamples:
        calls.append(1)
        return again or first

    return Measured(first, lambda s, *_: make(s, metrics), remeasure), calls


def timed_decision(first, again=None, metrics=None, base_metrics=None, confirm=True, **kw) -> tuple[Decision, list]:
    m, calls = measured(first, again, metrics)
    baseline = record(FAST, metrics=base_metrics or exact())
    source = BaselineSource(baseline, ab="rebuilt")
    time = confirm_time(m, source, THRESHOLDS["time"], POLICY, confirm)
    return decide(m.make_record(first), baseline, time, THRESHOLDS, POLICY, WHO, ab=source.ab, **kw), calls


def test_the_same_time_passes_without_a_remeasure_and_shows_no_message():
    decision, calls = timed_decision(ab(FAST, FAST))
    assert decision.verdict == Verdict.PASS and not decision.fails and not decision.open and not calls
    assert not decision.shown and decision.outcome(WHO).message == ""


def test_a_confirmed_slowdown_fails_naming_the_test_and_the_accept_command():
    decision, calls = timed_decision(ab(SLOW, FAST))
    assert decision.verdict == Verdict.REGRESSED and decision.fails and calls == [1]
    assert "time regressed against the baseline" in decision.message
    assert WHO.accept_command in decision.message and decision.shown


def test_a_slowdown_the_remeasure_does_not_bear_out_does_not_fail():
    decision, calls = timed_decision(ab(SLOW, FAST), again=ab(FAST, FAST))
    assert calls == [1] and not decision.fails and decision.verdict != Verdict.REGRESSED


def test_without_confirmation_one_slow_measurement_fails():
    decision, calls = timed_decision(ab(SLOW, FAST), again=ab(FAST, FAST), confirm=False)
    assert decision.fails and not calls


def test_an_exact_metric_regression_fails_even_when_time_passes():
    decision, _ = timed_decision(ab(FAST, FAST), metrics=exact(instructions=12), base_metrics=exact(instructions=10))
    assert decision.fails and "instructions regressed" in decision.message


def test_a_peer_past_its_limit_fails_a_test_whose_comparison_passed():
    peer = slower_peer()
    decision, _ = timed_decision(ab(FAST, FAST), peers=(peer,))
    assert decision.verdict == Verdict.SLOWER_THAN_PEER and decision.fails
    assert decision.message.startswith(f"tvmperf: {WHO.nodeid}: TVM is slower than its limit against a peer")


def test_a_mode_without_time_compares_the_rest_and_says_time_was_not_measured():
    now = record(None, metrics=exact(kernels=4))
    decision = decide(
        now, record(FAST, metrics=exact(kernels=3)), None, THRESHOLDS, POLICY, WHO, plan=Plan(Mode.UNTIMED)
    )
    assert decision.fails and "timing off: time was not measured" in decision.message
    assert decision.comparison.get("time").status == Verdict.NA
    assert decision.note.startswith("timing off")


def test_no_baseline_fails_naming_the_command():
    decision = no_baseline(record(None), WHO)
    assert decision.verdict == Verdict.NO_BASELINE and decision.fails and WHO.accept_command in decision.message


def test_a_recorded_baseline_passes_unless_a_gated_peer_fails():
    assert recorded(record(FAST), WHO).verdict == Verdict.RECORDED
    peer = slower_peer()
    decision = recorded(record(FAST), WHO, (peer,))
    assert decision.verdict == Verdict.RECORDED and decision.fails and "recorded all the same" in decision.message


def test_conclude_keeps_the_outcome_before_failing_or_leaving_it_open():
    kept: list[Outcome] = []
    opened: list[str] = []
    passed = Decision(Verdict.PASS, message="hidden", shown=False)
    conclude(passed, WHO, lambda o: kept.append(o) or o, opened.append)
    assert kept[-1].verdict == Verdict.PASS and kept[-1].message == "" and not opened
    conclude(
        Decision(Verdict.INCONCLUSIVE, message="unclear", open=True), WHO, lambda o: kept.append(o) or o, opened.append
    )
    assert opened == ["unclear"]
    with pytest.raises(pytest.fail.Exception, match="slower"):
        conclude(
            Decision(Verdict.REGRESSED, message="slower", fails=True), WHO, lambda o: kept.append(o) or o, opened.append
        )
    assert kept[-1].verdict == Verdict.REGRESSED and kept[-1].test_id == WHO.test_id


def test_another_versions_build_words_the_time_decision_as_its_source_says():
    source = BaselineSource(record(FAST), ab="rebuilt", mode="a/b vs TVM 0.26.0", note="side by side")
    verdict = source.judge_time(make(ab(FAST, FAST)), THRESHOLDS["time"], POLICY)
    assert verdict.decision.mode == "a/b vs TVM 0.26.0" and verdict.note == "side by side"
