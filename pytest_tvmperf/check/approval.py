"""A pull request's re-recorded baselines under ``--tvmperf-baselines-ref``: where the work tree's entry
differs from the ref's, without ``--tvmperf-approved-change`` the test fails, showing the change and how
to approve it (the pull request's own baselines decide nothing). With it, the same gate judges the test
again against the work tree's entry: it passes where that entry is what this code measures (no metric
regressed or improved, the time within its noise), else fails naming the entry and why."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.context import stored_baselines
from pytest_tvmperf.check.decide import Decision, Measured, confirm_time, decide
from pytest_tvmperf.judge.metric_verdict import Comparison
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.plan import Plan
from pytest_tvmperf.result.baseline_change import ON_A_PULL_REQUEST, STATE_NOTE, ChangeState, change_lines
from pytest_tvmperf.result.baseline_change import entries_differ, mismatch_message, unapproved_message, verified_message
from pytest_tvmperf.result.baseline_change import time_unverified_message
from pytest_tvmperf.result.text import fmt_number, fmt_time

if TYPE_CHECKING:
    from pytest_tvmperf.check.context import CheckContext
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.values.record import Record


def own_times(measured: Measured) -> Measured:
    """``measured`` as judged against the change's own entry: the a/b samples it holds timed the base
    branch's program, not the entry's, so they are left out, and today's time is compared with the
    entry's stored time for this machine (the entry's program is this code's when it is honest)."""
    make = measured.make_record

    def without_base(samples, *args, **kwargs):
        return make(replace(samples, baseline=None), *args, **kwargs)

    return replace(measured, make_record=without_base)


def program_mismatch(prep: "Prepared | None", pr_record: "Record") -> str | None:
    """Why the change's entry is not this code's program (its stored IR is not what this code builds
    here, or another TVM version recorded it), or None when it is, or nothing is known to check
    (no build, an entry without IR). Its stored times are this code's only when its program is."""
    if prep is None or pr_record.ir is None:
        return None
    import tvm

    from pytest_tvmperf.check.sources import program_check

    if program_check(prep.compiled, pr_record).same:
        return None
    if str(pr_record.tvm_version) != str(tvm.__version__):
        return (
            f"  program: the entry was recorded by TVM {pr_record.tvm_version}, this is TVM {tvm.__version__} "
            f"(field tvm_version): its numbers cannot be verified here"
        )
    return (
        f"  program: the entry's IR ({pr_record.ir.path}, field ir.sha256 {pr_record.ir.sha256[:16]}...) is not "
        f"the program this code builds here: its numbers were recorded from other code"
    )


def mismatches(comparison: Comparison) -> list[str]:
    """Pure: one line per metric of a comparison against the change's own entry whose
    number is not what was measured (past its limit either way; a time beyond its noise)."""
    out = []
    for v in comparison.verdicts:
        if v.status not in (Verdict.REGRESSED, Verdict.IMPROVED):
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
    prep: "Prepared | None" = None,
) -> Decision:
    """``decision`` (against the ref) as the change's own entry makes it (module doc)."""
    __tracebackhide__ = True
    session = ctx.session
    pr_file = session.pr_baseline_file(ctx.baseline_file)
    if pr_file is None:
        return decision
    # the change's own file: the same errors as without a ref
    pr_record = stored_baselines(session.pr_store, pr_file, ctx.fail).get(ctx.test_id)
    ref_record = source.record
    if not entries_differ(ref_record, pr_record):
        return decision
    shown = session.shown(pr_file)
    ref_name = str(session.settings.baselines_ref)
    changes = change_lines(ref_record, pr_record)
    who = ctx.identity
    if not session.settings.approved_change:
        before = f"tvmperf: {who.nodeid}: {decision.verdict} against {who.shown_file}"
        if decision.fails:
            before = decision.message.replace("\n" + ON_A_PULL_REQUEST, "")
        message = before + "\n" + unapproved_message(ctx.test_id, shown, ref_name, changes)
        return _settled(decision, Verdict.UNAPPROVED_CHANGE, message, ChangeState.UNAPPROVED, decision.note)
    if pr_record is None:  # the change removed the entry: nothing to verify the test with
        head = (
            f"tvmperf: {who.nodeid}: the approved change removes the baseline of {ctx.test_id} "
            f"from {shown}, and the test still runs: it would have no baseline"
        )
        message = "\n".join([head, *changes])
        return _settled(decision, Verdict.UNVERIFIED_CHANGE, message, ChangeState.MISMATCH)
    # the same gate, against the change's own entry: its numbers, no program of it timed
    policy, thresholds = session.time_policy(), ctx.settings.thresholds
    time = None
    if plan.time:
        assert measured is not None
        time = confirm_time(
            own_times(measured), BaselineSource(pr_record), thresholds["time"], policy, session.settings.confirm
        )
    rounds = measured.rounds if measured else None
    against = decide(
        record, pr_record, time, thresholds, policy, replace(who, shown_file=shown), plan=plan, rounds=rounds
    )
    off = mismatches(against.comparison) if against.comparison is not None else []
    if (why := program_mismatch(prep, pr_record)) is not None:  # its numbers are not this code's
        off = [why, *off]
    against_pr = replace(decision, baseline=pr_record, comparison=against.comparison)  # the test's, against the entry
    if off:
        message = mismatch_message(who.nodeid, ctx.test_id, shown, off, changes)
        return _settled(against_pr, Verdict.UNVERIFIED_CHANGE, message, ChangeState.MISMATCH)
    if plan.time and record.timing is not None and pr_record.timings.get(record.timing.machine.fingerprint) is None:
        # the entry holds no time of this machine: its time cannot be compared here (issue 66: an entry whose
        # timings were put back by hand read "verified" on such a runner, its a/b against the base 1.96x)
        v = decision.comparison.get("time") if decision.comparison is not None else None
        ab = f"; against the base, a/b {v.describe()}" if v is not None and v.decision is not None else ""
        why = f"time not verified here (the entry holds no time of this machine{ab})"
        message = time_unverified_message(ctx.test_id, shown, ref_name, why, changes)
        peer_exceeded = any(p.status == Verdict.EXCEEDED for p in decision.peers)
        note = ab.removeprefix("; ")
        return _settled(against_pr, Verdict.PASS, message, ChangeState.TIME_UNVERIFIED, note=note, fails=peer_exceeded)
    within = ""
    if against.open:  # no number refuted: the time is within its noise, but that noise is wider than its limit
        v = against.comparison.get("time") if against.comparison is not None else None
        d = v.decision if v is not None else None
        shown = f" ({d.describe()})" if d is not None else ""
        within = f"its time within its noise{shown}, not to its limit {thresholds['time'].describe()}"
    message = verified_message(ctx.test_id, shown, ref_name, changes)
    if within:
        message = f"{message}\n  {within}"
    peer_exceeded = any(p.status == Verdict.EXCEEDED for p in decision.peers)
    return _settled(against_pr, Verdict.PASS, message, ChangeState.VERIFIED, note=within, fails=peer_exceeded)


def _note(state: ChangeState, note: str) -> str:
    return "; ".join(n for n in (STATE_NOTE[state], note) if n)


def _settled(decision: Decision, verdict: Verdict, message: str, state: ChangeState, note: str = "", fails=True):
    """``decision`` settled by the change: failed (unless ``fails`` is False), never left open."""
    return replace(
        decision, verdict=verdict, message=message, fails=fails, open=False, shown=True, note=_note(state, note)
    )
