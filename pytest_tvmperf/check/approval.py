"""A pull request's re-recorded baselines under ``--tvmperf-baselines-ref``: the test is
judged against the ref's baseline as always (pipeline.py); where the work tree's entry
differs from the ref's, this decides what that change does. Without
``--tvmperf-approved-change`` it fails, showing the change and how to approve it (the
pull request's own baselines decide nothing). With it, the same test is judged again by
the same gate against the work tree's entry: where that entry is what this code measures
(no metric regressed or improved against it, the time within its noise) the test passes,
naming the approved change; else it fails naming the entry and why."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.decide import Decision, Measured, confirm_time, decide
from pytest_tvmperf.judge.compare import Comparison
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.plan import Plan
from pytest_tvmperf.result.baseline_change import (
    ON_A_PULL_REQUEST,
    STATE_NOTE,
    ChangeState,
    change_lines,
    entries_differ,
    mismatch_message,
    unapproved_message,
    verified_message,
)
from pytest_tvmperf.result.text import fmt_number, fmt_time
from pytest_tvmperf.store.files import BaselineError

if TYPE_CHECKING:
    from pytest_tvmperf.check.context import CheckContext
    from pytest_tvmperf.values.record import Record

#: the verdicts of a metric that say the change's entry is not what was measured
_OFF = (Verdict.REGRESSED, Verdict.IMPROVED)


def mismatches(comparison: Comparison) -> list[str]:
    """Pure: one line per metric of a comparison against the change's own entry whose
    number is not what was measured (past its limit either way; a time beyond its noise)."""
    out = []
    for v in comparison.verdicts:
        if v.status not in _OFF:
            continue
        show = fmt_time if v.metric == "time" else fmt_number
        word = "higher" if v.status == Verdict.REGRESSED else "lower"
        out.append(
            f"  {v.metric}: the entry says {show(v.baseline)}, this code measures {show(v.current)} "
            f"({word}; limit {v.limit}, both ways for a re-recorded entry)"
        )
    return out


def with_change(
    ctx: "CheckContext",
    record: "Record",
    source: BaselineSource,
    decision: Decision,
    measured: Measured | None,
    plan: Plan,
) -> Decision:
    """``decision`` (against the ref) as the change's own entry makes it (module doc)."""
    __tracebackhide__ = True
    session = ctx.session
    pr_file = session.pr_baseline_file(ctx.baseline_file)
    if pr_file is None:
        return decision
    try:
        pr_record = session.pr_store.baselines(pr_file).get(ctx.test_id)
        problem = None
    except BaselineError as exc:  # the change's own file: the same errors as without a ref
        pr_record, problem = None, str(exc)
    if problem is not None:
        ctx.fail("error", f"tvmperf: {problem}")
    ref_record = source.record
    if not entries_differ(ref_record, pr_record):
        return decision
    shown = session.shown(pr_file)
    ref_name = str(session.settings.baselines_ref)
    changes = change_lines(ref_record, pr_record)
    who = ctx.identity
    if not session.settings.approved_change:
        before = (
            decision.message.replace("\n" + ON_A_PULL_REQUEST, "")
            if decision.fails
            else (f"tvmperf: {who.nodeid}: {decision.verdict} against {who.shown_file}")
        )
        message = before + "\n" + unapproved_message(ctx.test_id, shown, ref_name, changes)
        return replace(
            decision,
            verdict=Verdict.UNAPPROVED_CHANGE,
            message=message,
            fails=True,
            open=False,
            shown=True,
            note=_note(ChangeState.UNAPPROVED, decision.note),
        )
    if pr_record is None:  # the change removed the entry: nothing to verify the test with
        message = "\n".join(
            [
                f"tvmperf: {who.nodeid}: the approved change removes the baseline of {ctx.test_id} "
                f"from {shown}, and the test still runs: it would have no baseline",
                *changes,
            ]
        )
        return replace(
            decision,
            verdict=Verdict.UNVERIFIED_CHANGE,
            message=message,
            fails=True,
            open=False,
            shown=True,
            note=_note(ChangeState.MISMATCH, ""),
        )
    # the same gate, against the change's own entry: its numbers, no program of it timed
    own = BaselineSource(pr_record)
    time = None
    if plan.time:
        assert measured is not None
        time = confirm_time(
            measured, own, ctx.settings.thresholds["time"], session.time_policy(), session.settings.confirm
        )
    against = decide(
        record,
        pr_record,
        time,
        ctx.settings.thresholds,
        session.time_policy(),
        replace(who, shown_file=shown),
        (),
        plan,
        (),
        "",
        measured.rounds if measured else None,
    )
    off = mismatches(against.comparison) if against.comparison is not None else []
    if off:
        return replace(
            decision,
            verdict=Verdict.UNVERIFIED_CHANGE,
            baseline=pr_record,
            comparison=against.comparison,
            message=mismatch_message(who.nodeid, ctx.test_id, shown, off, changes),
            fails=True,
            open=False,
            shown=True,
            note=_note(ChangeState.MISMATCH, ""),
        )
    if against.open:  # the time against the entry is unclear: as any inconclusive verdict
        return replace(
            against,
            note=_note(ChangeState.VERIFIED, against.note),
            peers=decision.peers,
            message=against.message + "\n" + "\n".join(changes),
        )
    return replace(
        decision,
        verdict=Verdict.PASS,
        baseline=pr_record,
        comparison=against.comparison,
        message=verified_message(ctx.test_id, shown, ref_name, changes),
        fails=any(p.status == Verdict.EXCEEDED for p in decision.peers),
        open=False,
        shown=True,
        note=_note(ChangeState.VERIFIED, ""),
    )


def _note(state: ChangeState, note: str) -> str:
    return "; ".join(n for n in (STATE_NOTE[state], note) if n)
