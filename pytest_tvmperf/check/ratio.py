"""The ratio mode, ``tvmperf.assert_ratio(a, b, at_most)``: judged by the time ratio of the two
programs (no baseline), confirmed and concluded as every mode is (decide.py)."""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Sequence

import pytest

from pytest_tvmperf.check import pipeline
from pytest_tvmperf.check.decide import Decision
from pytest_tvmperf.combos import Variant
from pytest_tvmperf.judge.ratios import RatioVerdict, relation_verdict, straddles
from pytest_tvmperf.judge.confirmation import confirm, confirmation_note, settle
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.plan import UNTIMED_NOTE
from pytest_tvmperf.builder.timer import TimeSamples, TimingTask
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.text import relation_message

if TYPE_CHECKING:
    from pytest_tvmperf.check.context import CheckContext


def assert_ratio(ctx: "CheckContext", sides: Sequence[Variant], at_most: float, number: int) -> RatioVerdict:
    """The ``number``-th ``assert_ratio`` of the test of ``ctx``: its outcome is named
    ``<test id> ratio [number]`` in the summary, and by its sides in the message and JSON."""
    __tracebackhide__ = True
    shown_id = f"{ctx.test_id} ratio" + (f" {number}" if number > 1 else "")
    fail = ctx.failing_as(shown_id)
    preparer = ctx.preparer_failing(fail)
    preps = []
    for side in sides:
        executor = side.executor or ctx.executor
        preps.append(preparer.prepare(side.workload, executor, f"{side.workload.name} on {ctx.target}/{executor}"))
        if not preps[-1].target.runnable:
            pytest.skip(f"target {ctx.target}: {preps[-1].target.not_run}: a time ratio needs the program run")
    label = f"{sides[0].describe(ctx.executor)} / {sides[1].describe(ctx.executor)}"
    if not ctx.settings.timing:  # both sides compiled and checked; the ratio is a time: not measured
        ctx.add_outcome(Outcome(ctx.nodeid, shown_id, ctx.executor, ctx.target, "not gated", note=UNTIMED_NOTE))
        return None  # type: ignore[return-value]
    session = ctx.session
    samplers = [ctx.sources.exported_sampler(p, "relation", side=f"ratio{number}.{i}")[1] for i, p in enumerate(preps)]
    task = TimingTask(workload=samplers[0], baseline=samplers[1])
    policy, rounds = session.time_policy(), session.settings.repeat

    def judge(samples: TimeSamples) -> RatioVerdict:
        if samples.baseline is None:
            fail(
                "error",
                f"tvmperf: {ctx.nodeid}: the timer returned no samples of the right side of "
                f"{label}: a tvmperf_timer must time TimingTask.baseline too",
            )
        return relation_verdict(label, samples, float(at_most), policy.alpha, policy.noise_ratio)

    def measure(n: int, fresh: bool = False) -> TimeSamples:
        with session.timing_lock(ctx.target):
            return ctx.timer(task.reloaded() if fresh else task, n)

    checked = confirm(
        measure(rounds), lambda s: {label: judge(s)}, lambda: measure(2 * rounds, fresh=True), session.settings.confirm
    )
    notes = [n for n in (confirmation_note(checked, label),) if n is not None]
    if session.settings.confirm:  # a ratio straddling its limit is measured on, as a time verdict is

        def judge_look(samples: TimeSamples, look: int, loads: int) -> dict[str, RatioVerdict]:
            at = policy.at_look(look, loads) if look else policy
            return {label: relation_verdict(label, samples, float(at_most), at.alpha, at.shrink(policy.noise_ratio))}

        batch = partial(measure, fresh=True)
        checked, settling = settle(
            checked, judge_look, batch, ctx.settings.decide_budget, rounds, time.monotonic, straddles, name=label
        )
        if settling is not None:
            notes.append(settling.note(checked.verdicts[label]))
    verdict = checked.verdicts[label]
    exact = [pipeline.counts(p) for p in preps]
    message = relation_message(label, verdict, exact[0], exact[1], notes)
    status = {"exceeded": "regressed"}.get(verdict.status, verdict.status)
    shown, fails, unclear = status != "pass", verdict.status == "exceeded", verdict.status == "inconclusive"
    decision = Decision(
        Verdict(status), message=message, shown=shown, relation=verdict, shown_id=shown_id, fails=fails, open=unclear
    )
    pipeline.finish(ctx, decision)
    return verdict
