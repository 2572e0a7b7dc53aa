"""The values one check passes from step to step (pipeline.py), and its decision, pure, for every
mode and for against/gate.py: :class:`Measured` -> :func:`confirm_time` (a suspected time failure
measured again) -> :func:`decide` (a :class:`Decision`, without TVM, files or the fixture) ->
:func:`conclude` (the outcome kept, then pass, fail or ``--tvmperf-inconclusive``)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import pytest

from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.combos import TvmperfInconclusive
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.judge.compile_verdict import compile_verdict
from pytest_tvmperf.values.resources import COMPILE_S
from pytest_tvmperf.config.parsing import TIME_METRIC
from pytest_tvmperf.judge.compare import TimePolicy
from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.judge.ratios import RatioVerdict, peer_verdicts
from pytest_tvmperf.judge.ratios import straddles as ratio_straddles
from pytest_tvmperf.config.time_policy import DecideBudget
from pytest_tvmperf.judge.confirmation import Settling, WholeVerdict, confirm, confirmation_note, held_apart, settle
from pytest_tvmperf.judge.confirmation import pipeline_notes, summary_note, whole_verdict
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.budget import RoundsPlan, precision
from pytest_tvmperf.measure.plan import Mode, Plan
from pytest_tvmperf.measure.simulate import simulated_gate_note
from pytest_tvmperf.builder.timer import TimeSamples
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.regression import missing_baseline_message, regression_message
from pytest_tvmperf.result.text import peer_lines

if TYPE_CHECKING:
    from pytest_tvmperf.judge.layer_match import LayerTable
    from pytest_tvmperf.store.artifacts import PendingArtifact
    from pytest_tvmperf.values.compile_times import CompileTimes
    from pytest_tvmperf.values.record import Record

TIMED = Plan(Mode.TIMED)
#: the verdicts of metrics that were compared with the baseline
_GATED = (Verdict.PASS, Verdict.IMPROVED, Verdict.REGRESSED)


@dataclass(frozen=True)
class Identity:
    """Who a check is for, as its messages and outcome name it."""

    nodeid: str
    test_id: str
    executor: str
    target: str
    #: the test's baseline file, as shown
    shown_file: str = ""
    #: the command that records the test's baseline
    accept_command: str = ""
    #: the line after that command on what to do on a pull request ("" : none)
    advice: str = ""


@dataclass(frozen=True)
class Measured:
    """What a timed measurement took (timed.py): the samples, the record they make, the
    confirmation's re-measure (both programs loaded anew), and today's exported build."""

    samples: TimeSamples
    make_record: Callable[..., "Record"]
    remeasure: Callable[[], TimeSamples]
    pending: "PendingArtifact | None" = None
    #: the rounds the time budget allowed (measure/budget.py); None: not planned
    rounds: RoundsPlan | None = None
    #: the summary's word when timing fell back to fewer threads ("" when not)
    threads_note: str = ""
    #: the peers timed beside (their ratios are judged only for these)
    peers_timed: tuple[str, ...] = ()
    #: gated peers whose two measurements disagreed (:func:`confirm_peers`): held, not failed,
    #: by name with each measurement's verdict (the held interval spans them: gate.held_apart)
    peers_unconfirmed: Mapping[str, tuple[RatioVerdict, ...]] = field(default_factory=dict)
    #: gated peers measured on until decided (:func:`confirm_peers`): the verdict of their last look
    peers_settled: Mapping[str, RatioVerdict] = field(default_factory=dict)
    #: what the samples were judged against (the program timed beside today's, if any)
    source: BaselineSource = BaselineSource(None)
    #: measuring a borderline time verdict until it is decided (judge/confirmation.py :func:`settle`):
    #: ``measure_batch(n)`` times ``n`` more rounds with both programs loaded anew, ``batch_rounds`` at a
    #: time, within ``decide_budget``; None: not measured on (an interval that straddles stays inconclusive)
    measure_batch: Callable[[int], TimeSamples] | None = None
    batch_rounds: int = 0
    decide_budget: DecideBudget = DecideBudget(0.0, 0)


@dataclass(frozen=True)
class TimeJudged:
    """The confirmed time verdict, the record of the samples that decided it, and the re-measure's note."""

    record: "Record"
    verdict: MetricVerdict
    note: str | None = None
    #: how a verdict that straddled its limit was measured on (None: it did not straddle)
    settling: Settling | None = None


@dataclass(frozen=True)
class Decision:
    """A test's decided outcome: its verdict, what it shows, whether it fails or is left open."""

    verdict: Verdict
    record: "Record | None" = None
    baseline: "Record | None" = None
    comparison: Comparison | None = None
    message: str = ""
    note: str = ""
    peers: tuple[RatioVerdict, ...] = ()
    layers: tuple["LayerTable", ...] = ()
    fails: bool = False
    open: bool = False
    #: the message is kept with the outcome (else only a failure shows it)
    shown: bool = True
    #: the outcome's test id ("" : the identity's)
    shown_id: str = ""
    relation: RatioVerdict | None = None

    @classmethod
    def judged(cls, decided: WholeVerdict, **fields) -> Decision:
        """The decision of a whole-test verdict, with the outcome's ``fields``."""
        return cls(decided.verdict, fails=decided.fails, open=decided.open, shown=decided.shown, **fields)

    def outcome(self, who: Identity) -> Outcome:
        return Outcome(
            who.nodeid,
            self.shown_id or who.test_id,
            who.executor,
            who.target,
            self.verdict,
            record=self.record,
            baseline=self.baseline,
            comparison=self.comparison,
            message=self.message if self.shown else "",
            peers=self.peers,
            layers=self.layers,
            note=self.note,
            relation=self.relation,
        )


def inconclusive(policy: str, warns: bool, message: str) -> None:
    """An inconclusive test under ``--tvmperf-inconclusive=policy``: failed (``fail``), a
    warning (``warn``, when ``warns``: else one summary line counts them), or passed."""
    __tracebackhide__ = True
    if policy == "fail":
        pytest.fail(message + "\n(--tvmperf-inconclusive=fail)", pytrace=False)
    if policy == "warn" and warns:
        warnings.warn(TvmperfInconclusive(message), stacklevel=2)


def conclude(
    decision: Decision, who: Identity, add_outcome: Callable[[Outcome], Outcome], on_inconclusive: Callable[[str], None]
) -> Outcome:
    """Keep the decision's outcome, then fail the test or leave it to ``--tvmperf-inconclusive``."""
    __tracebackhide__ = True
    outcome = add_outcome(decision.outcome(who))
    if decision.fails:
        pytest.fail(decision.message, pytrace=False)
    if decision.open:
        on_inconclusive(decision.message)
    return outcome


def confirm_time(
    measured: Measured, source: BaselineSource, limit: Limit, policy: TimePolicy, enabled: bool
) -> TimeJudged:
    """Judge the measured time against ``source``; a suspected failure (or an unclear
    answer) is measured again and the pooled samples decide (judge/confirmation.py)."""

    def judge(samples: TimeSamples) -> dict[str, MetricVerdict]:
        return {"time": source.judge_time(measured.make_record(samples), limit, policy)}

    checked = confirm(measured.samples, judge, measured.remeasure, enabled)
    note = confirmation_note(checked)
    if not enabled or measured.measure_batch is None:
        return TimeJudged(measured.make_record(checked.samples), checked.verdicts["time"], note)

    def judge_look(samples: TimeSamples, look: int, batches: int) -> dict[str, MetricVerdict]:
        at = policy.at_look(look, batches) if look else policy
        return {"time": source.judge_time(measured.make_record(samples), limit, at)}

    checked, settling = settle(
        checked,
        judge_look,
        measured.measure_batch,
        measured.decide_budget,
        measured.batch_rounds,
        time.monotonic,
        straddles,
    )
    if settling is not None:
        note = "; ".join(n for n in (note, settling.note(checked.verdicts["time"])) if n)
    verdict = checked.verdicts["time"] if settling is None else replace(checked.verdicts["time"], settled=settling)
    return TimeJudged(measured.make_record(checked.samples), verdict, note, settling)


def straddles(verdict: MetricVerdict) -> bool:
    """A time verdict more rounds can decide: inconclusive with no reason holding it (a busy machine
    whose run times cannot be told, a baseline from another CPU model), on a side-by-side interval,
    whose process-level allowances shrink as measurements with both programs loaded anew pool."""
    d = verdict.decision
    return verdict.status == Verdict.INCONCLUSIVE and not verdict.reason and d is not None and d.mode.startswith("a/b")


def confirm_peers(
    measured: Measured, peer_limits: Mapping[str, float], policy: TimePolicy, notes: list[str]
) -> Measured:
    """A gated peer past its limit (or unclear) is measured again, as a time regression is: the
    pooled samples decide, and a gate fails only when each measurement alone is past the limit too."""

    def gated_at(s: TimeSamples, at: TimePolicy) -> dict[str, RatioVerdict]:
        try:
            noise = at.shrink(policy.noise_ratio)
            verdicts = peer_verdicts(s, peer_limits, at.alpha, noise, wanted=measured.peers_timed)
        except ValueError:
            return {}  # reported by judged_peers
        return {v.name: v for v in verdicts if v.limit is not None}

    checked = confirm(measured.samples, lambda s: gated_at(s, policy), measured.remeasure)
    if checked.second is None:
        return measured
    for name, v in checked.first.items():
        if v.status != "pass" and name in checked.second:
            notes.append(
                f"peer {name}: first measurement {v.status} at {v.describe()}, then "
                f"{checked.second[name].describe()}; the pooled samples decide"
            )
    # a gate still straddling its limit is measured on, as a time verdict is (judge/confirmation.py
    # settle), within what is left of the test's budget; its verdict is the one its last look decided
    settled: dict[str, RatioVerdict] = {}
    budget = measured.decide_budget
    for name in sorted(checked.verdicts):
        if measured.measure_batch is None or not ratio_straddles(checked.verdicts[name]):
            continue

        def judge_look(s: TimeSamples, look: int, loads: int) -> dict[str, RatioVerdict]:
            return gated_at(s, policy.at_look(look, loads) if look else policy)

        done, how = settle(
            checked,
            judge_look,
            measured.measure_batch,
            budget,
            measured.batch_rounds,
            time.monotonic,
            ratio_straddles,
            name,
        )
        if how is not None:
            settled[name] = done.verdicts[name]
            notes.append(f"peer {name}: {how.note(done.verdicts[name])}")
            budget = budget.less(how.seconds, how.rounds)
    unconfirmed = {name: checked.measurements(name) for name in checked.disagreed if name not in settled}
    return replace(
        measured, samples=checked.samples, peers_unconfirmed=unconfirmed, peers_settled=settled, decide_budget=budget
    )


def judged_peers(
    samples: TimeSamples,
    peer_limits: Mapping[str, float],
    policy: TimePolicy,
    peers_timed: tuple[str, ...],
    unconfirmed: Mapping[str, tuple[RatioVerdict, ...]],
    settled: Mapping[str, RatioVerdict] | None = None,
) -> tuple[RatioVerdict, ...]:
    """TVM against each peer timed beside; a gate the confirmation re-measure did not bear out (``unconfirmed``:
    both verdicts by name) is inconclusive, not failed, shown with the interval spanning both. Raises ValueError when
    the timer returned no samples of a peer."""
    verdicts = peer_verdicts(samples, peer_limits, policy.alpha, policy.noise_ratio, wanted=peers_timed)
    settled = settled or {}
    return tuple(
        settled[v.name]
        if v.name in settled
        else held_apart(v, unconfirmed[v.name])
        if v.name in unconfirmed and v.status == "exceeded"
        else v
        for v in verdicts
    )


def no_baseline(record: "Record", who: Identity) -> Decision:
    message = missing_baseline_message(who.nodeid, who.test_id, who.shown_file, who.accept_command, who.advice)
    note = "no baseline: run pytest --tvmperf-update to create it"
    return Decision(Verdict.NO_BASELINE, record=record, fails=True, note=note, message=message)


def decide(
    record: "Record",
    baseline: "Record",
    time: TimeJudged | None,
    thresholds: Mapping[str, Limit],
    policy: TimePolicy,
    who: Identity,
    notes: Sequence[str] = (),
    plan: Plan = TIMED,
    peers: tuple[RatioVerdict, ...] = (),
    ab: str = "",
    rounds: RoundsPlan | None = None,
    threads_note: str = "",
    compile_times: "CompileTimes | None" = None,
) -> Decision:
    """Compare ``record`` with ``baseline`` and decide the test, for every mode: a timed record's time
    verdict comes confirmed (``time``, :func:`confirm_time`; its record replaces ``record``). ``ab``: what
    the a/b samples timed; ``rounds``: the budget's; ``compile_times``: the builds side by side, as ``compile_s``."""
    then, now = baseline.tuning or {}, record.tuning or {}
    same_target = dict(baseline.target) == dict(record.target)
    hashes = (then.get("records_hash"), now.get("records_hash"))
    extra, tuning_note = pipeline_notes(baseline.pipeline, record.pipeline, same_target, *hashes, now.get("source", ""))
    notes = [*notes, *extra]
    budget_note = ""
    if plan.time:
        assert time is not None
        record, time_verdict = time.record, time.verdict
        if time.note is not None:
            notes.append(time.note)
        if rounds is not None and rounds.cut:  # a network timed within its budget: how precise
            d = time_verdict.decision
            budget_note = rounds.note(precision(d.low, d.high, d.ratio) if d is not None else None)
            notes.append(budget_note)
    else:
        reason = "timing off" if plan.mode == Mode.UNTIMED else thresholds[TIME_METRIC].describe()
        time_verdict = MetricVerdict(TIME_METRIC, Verdict.NA, None, None, reason)
    source = BaselineSource(baseline, ab=ab)
    comparison = source.compare(record, thresholds, policy, timed=plan.time).with_verdict(time_verdict)
    compiled = compile_verdict(compile_times, thresholds.get(COMPILE_S) or DEFAULT_THRESHOLDS[COMPILE_S], policy.alpha)
    if compiled is not None:
        comparison = Comparison((*comparison.verdicts, compiled))
    outcome_note = plan.outcome_note(record.exact, sum(v.status in _GATED for v in comparison.verdicts))
    if plan.mode == Mode.UNTIMED:  # and what the simulated cost did in the time's place
        outcome_note = "; ".join(n for n in (outcome_note, simulated_gate_note(Verdict.NOT_GATED, comparison)) if n)
    if not plan.time:
        notes.append(plan.message_note(outcome_note))
    decided = whole_verdict(
        comparison.status, bool(comparison.regressions), comparison.inconclusive, [p.status for p in peers]
    )
    if not decided.peers_lead:
        message = regression_message(
            who.nodeid, who.shown_file, record, baseline, comparison, notes, who.accept_command, who.advice
        )
        if peers:
            message += "\nagainst peer frameworks, timed side by side:\n" + "\n".join(peer_lines(peers))
    else:
        word = "slower than its limit against" if decided.fails else "not clearly within its limit against"
        head = (
            f"tvmperf: {who.nodeid}: TVM is {word} a peer framework (timed side by side; "
            f"the baseline comparison passed)"
        )
        message = "\n".join([head, *peer_lines(peers), *(f"  note: {n}" for n in notes)])
    summary = summary_note(threads_note, time_verdict.status, time_verdict.reason, time_verdict.note, tuning_note)
    settled = time.settling.word() if time is not None and time.settling is not None else ""
    timed_notes = (budget_note, summary, settled, simulated_gate_note(time_verdict.status, comparison))
    note = outcome_note or "; ".join(n for n in timed_notes if n)
    return Decision.judged(
        decided, record=record, baseline=baseline, comparison=comparison, message=message, note=note, peers=peers
    )


def recorded(record: "Record", who: Identity, peers: tuple[RatioVerdict, ...] = (), note: str = "") -> Decision:
    """An update's outcome, ``recorded``; a gated peer past its limit (or unclear) still fails (or is
    inconclusive) the test, recorded all the same (the summary says both: judge/verdict.py ``peer_failures``)."""
    message = ""
    if any(p.status in ("exceeded", "inconclusive") for p in peers):
        header = f"tvmperf: {who.nodeid}: TVM against its peer frameworks (baseline recorded all the same)"
        message = "\n".join([header, *peer_lines(peers)])
    exceeded = any(p.status == "exceeded" for p in peers)
    unclear = not exceeded and any(p.status == "inconclusive" for p in peers)
    return Decision(
        Verdict.RECORDED, record=record, peers=peers, message=message, note=note, fails=exceeded, open=unclear
    )
