"""check.fixture.Tvmperf and its check.context.CheckContext without TVM: what a test's
outcome, failure and queued baseline are for made-up records, timings and baselines (the
check pipeline's decision wiring around judge/confirmation.py: check/pipeline.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from _factories import exact, machine, record

from pytest_tvmperf.check import pipeline
from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.decide import Measured
from pytest_tvmperf.check.context import CheckContext, for_test
from pytest_tvmperf.check.fixture import Tvmperf
from pytest_tvmperf.combos import Combo, TvmperfInconclusive
from pytest_tvmperf.config.per_test import settings_for_test
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.builder.timer import TimeSamples
from pytest_tvmperf.session import TvmperfSession
from pytest_tvmperf.values.record import Record, Timing

FAST = tuple(1e-3 * (1 + 0.001 * (i % 5)) for i in range(20))
SLOW = tuple(1.3 * s for s in FAST)


def check_context(tmp_path: Path, user_properties: list | None = None, **settings) -> CheckContext:
    session = TvmperfSession(Settings(baseline_dir=tmp_path / "baselines", **settings), rootpath=tmp_path)
    return for_test(
        session,
        Combo("llvm", "vm-bytecode"),
        "tests/t.py::test_a[llvm-vm-bytecode]",
        "test_a[llvm-vm-bytecode]",
        tmp_path / "baselines" / "tests" / "t.json",
        settings_for_test(session.settings),
        timer=None,
        user_properties=user_properties,
    )


def make_record(metrics=None):
    """``make_record(samples)`` as a timed check builds it: today's build timed a/b against
    the baseline's artifact (``samples.baseline``)."""
    mach = machine()

    def make(samples: TimeSamples) -> Record:
        base = record(None, metrics=metrics or exact())
        return replace(base, timings={mach.fingerprint: Timing(mach, samples)})

    return make


def verdict_of(tv: CheckContext) -> str:
    """The verdict the run report keeps for the test (its summary row and JSON entry)."""
    (outcome,) = tv.session.report.outcomes.values()
    return outcome.verdict


def ab(now, base) -> TimeSamples:
    return TimeSamples(tuple(now), baseline=tuple(base))


class Remeasure:
    def __init__(self, samples: TimeSamples):
        self.samples, self.calls = samples, 0

    def __call__(self) -> TimeSamples:
        self.calls += 1
        return self.samples


def decide(tv: CheckContext, first: TimeSamples, again: TimeSamples | None = None, metrics=None, base_metrics=None):
    remeasure = Remeasure(again or first)
    make = make_record(metrics)
    baseline = record(FAST, metrics=base_metrics or exact())
    outcome = pipeline.gate(tv, make(first), BaselineSource(baseline), Measured(first, make, remeasure), [])
    return outcome, remeasure


def test_identical_code_passes_without_a_remeasure(tmp_path):
    user_properties: list = []
    tv = check_context(tmp_path, user_properties)
    outcome, remeasure = decide(tv, ab(FAST, FAST))
    assert outcome.verdict == Verdict.PASS and remeasure.calls == 0
    assert verdict_of(tv) == Verdict.PASS
    assert ("tvmperf_verdict", "pass") in user_properties


def test_a_confirmed_slowdown_fails_with_the_accept_command(tmp_path):
    tv = check_context(tmp_path)
    with pytest.raises(pytest.fail.Exception) as failed:
        decide(tv, ab(SLOW, FAST))
    message = str(failed.value)
    assert "time regressed against the baseline" in message
    assert "--tvmperf-update" in message and "test_a[llvm-vm-bytecode]" in message
    assert verdict_of(tv) == Verdict.REGRESSED


def test_a_slowdown_the_remeasure_does_not_bear_out_does_not_fail(tmp_path):
    tv = check_context(tmp_path, inconclusive="pass")
    outcome, remeasure = decide(tv, ab(SLOW, FAST), again=ab(FAST, FAST))
    assert remeasure.calls == 1
    assert outcome.verdict != Verdict.REGRESSED


def test_without_confirmation_one_slow_measurement_fails(tmp_path):
    tv = check_context(tmp_path, confirm=False)
    with pytest.raises(pytest.fail.Exception):
        decide(tv, ab(SLOW, FAST), again=ab(FAST, FAST))


def test_an_exact_metric_regression_fails_even_when_time_passes(tmp_path):
    tv = check_context(tmp_path)
    with pytest.raises(pytest.fail.Exception, match="instructions regressed"):
        decide(tv, ab(FAST, FAST), metrics=exact(instructions=12), base_metrics=exact(instructions=10))


def test_an_inconclusive_time_warns_by_default(tmp_path):
    factors = (0.8, 1.45, 0.9, 1.3, 1.0, 1.2)  # today over the baseline's artifact, round by round
    tv = check_context(tmp_path)
    with pytest.warns(TvmperfInconclusive):
        outcome, _ = decide(tv, ab(tuple(f * s for f, s in zip(factors, FAST)), FAST[:6]))
    assert outcome.verdict == Verdict.INCONCLUSIVE


def test_missing_baseline_fails_naming_the_command(tmp_path):
    tv = check_context(tmp_path)
    make = make_record()
    with pytest.raises(pytest.fail.Exception, match="--tvmperf-update"):
        pipeline.gate(
            tv,
            make(ab(FAST, FAST)),
            BaselineSource(None),
            Measured(ab(FAST, FAST), make, Remeasure(ab(FAST, FAST))),
            [],
        )
    assert verdict_of(tv) == Verdict.NO_BASELINE


def test_recording_queues_the_update_and_writes_nothing_yet(tmp_path):
    tv = check_context(tmp_path, update=True)
    rec = make_record()(TimeSamples(FAST))
    outcome = pipeline.record(tv, rec)
    assert outcome.verdict == Verdict.RECORDED
    assert tv.session.store.updates == {tv.baseline_file: {"test_a[llvm-vm-bytecode]": rec}}
    assert not tv.baseline_file.exists()


def test_check_twice_and_a_wrong_argument_are_clear_errors(tmp_path):
    tv = Tvmperf(check_context(tmp_path))
    with pytest.raises(TypeError, match="takes a pytest_tvmperf.Workload, got str"):
        tv.check("mlp")
    with pytest.raises(RuntimeError, match="already called"):
        tv.check("mlp")


def test_a_broken_baseline_file_fails_naming_it(tmp_path):
    tv = check_context(tmp_path)
    tv.baseline_file.parent.mkdir(parents=True)
    tv.baseline_file.write_text("{not json")
    with pytest.raises(pytest.fail.Exception, match="t.json"):
        tv.stored_baselines()
    assert verdict_of(tv) == Verdict.ERROR


def test_assert_ratio_validates_its_limit(tmp_path):
    tv = Tvmperf(check_context(tmp_path))
    for bad in (0, -1, float("inf"), "2"):
        with pytest.raises(ValueError, match="at_most"):
            tv.assert_ratio(None, None, bad)


def test_a_reloaded_task_loads_fresh_copies_of_what_can_be_reloaded():
    from pytest_tvmperf.builder.executors import PlacedSampler
    from pytest_tvmperf.builder.timer import TimingTask

    loads = []

    def load():
        loads.append(len(loads))
        return [lambda n=len(loads): float(n)]  # noqa: B008 (binds the count at this call)

    task = TimingTask(workload=PlacedSampler(load), reference=lambda: 9.0, baseline=PlacedSampler(load))
    assert (task.workload(), task.baseline(), len(loads)) == (1.0, 2.0, 2)
    again = task.reloaded()
    assert (again.workload(), again.baseline(), len(loads)) == (3.0, 4.0, 4)
    assert again.reference is task.reference and task.workload() == 1.0  # the first task is untouched
