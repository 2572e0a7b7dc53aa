"""The modes without time (measure/plan.py): ``untimed`` (``--tvmperf-timing=off``, marker
``timing=False``) and ``built only`` (a target built but not run here): the same record and
decision as the timed mode (pipeline.py), from the measurements the plan takes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_tvmperf.check import pipeline
from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.measure.plan import Plan, summary_line, with_baseline_calls

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.check.context import CheckContext
    from pytest_tvmperf.result.outcome import Outcome


def check(ctx: "CheckContext", prep: "Prepared", plan: Plan) -> "Outcome":
    """The rest of ``tvmperf.check`` for a mode without time."""
    __tracebackhide__ = True
    session = ctx.session
    baseline = ctx.stored_baselines().get(ctx.test_id)
    exact = pipeline.exact_metrics(ctx, prep, runs=plan.runs, baseline=baseline)
    if not plan.runs:
        exact = with_baseline_calls(exact, pipeline.in_build_entry(prep, baseline))  # the file keys kernels by identity
        ctx.note(summary_line(ctx.target, plan.why, "recorded" if session.settings.update else "gated"))
    record = pipeline.build_record(ctx.executor, prep, exact)
    if session.settings.update:
        return pipeline.record(ctx, record, plan.outcome_note(exact, None), plan)
    return pipeline.gate(ctx, record, BaselineSource(baseline), None, [], plan, prep=prep)
