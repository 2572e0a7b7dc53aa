"""Pure: the confirmation rule, written once.

A time-like verdict (a time comparison, a peer ratio, an ``assert_ratio`` relation)
that suspects a failure, or cannot tell, is measured again with twice the rounds; the
pooled samples decide, and a failure stands only when the first measurement failed on its
own and the re-measure alone was past the limit too: a re-measure confirms a suspected
failure, it never turns an open first answer into one, so one disturbed measurement cannot
fail a test. On a busy machine, judged on each side's own run time, a failure needs the
whole interval past the limit: there an open first answer past the limit is a suspicion
that the re-measure can confirm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Mapping, Protocol, Sequence, TypeVar

from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.judge.verdict import Verdict


class Judged(Protocol):
    @property
    def status(self) -> str: ...

    @property
    def past_limit(self) -> bool:
        """This measurement alone is past the limit."""

    @property
    def wholly_past_limit(self) -> bool:
        """The whole interval lies past the limit."""

    def held(self, *measured: "Judged") -> "Judged":
        """The same evidence, held at ``inconclusive``, its interval spanning its own and
        those of the ``measured`` verdicts (the measurements it pools)."""

    @property
    def measured_ratio(self) -> float:
        """The ratio this measurement found (today over the baseline, or a over b)."""

    def describe(self) -> str:
        """'1.10x (97.5% CI 1.05-1.15x, a/b)'."""


J = TypeVar("J", bound=Judged)


@dataclass(frozen=True)
class Confirmed(Generic[J]):
    """The verdicts by name after confirmation, with the evidence of each step."""

    samples: TimeSamples  # pooled when re-measured
    first: Mapping[str, J]
    second: Mapping[str, J] | None  # the re-measure alone; None when not re-measured
    verdicts: Mapping[str, J]
    #: names whose pooled samples fail but whose two measurements disagree (held at inconclusive,
    #: with the interval that spans both measurements' and the pooled one: :func:`held_apart`)
    disagreed: frozenset[str] = frozenset()

    def measurements(self, name: str) -> tuple[J, ...]:
        """The verdicts of each measurement alone on ``name`` (the first, and the re-measure's)."""
        second = () if self.second is None or name not in self.second else (self.second[name],)
        return (self.first[name], *second)


def worth_remeasuring(verdict: Judged) -> bool:
    """An unsure verdict a re-measure can change: not one held for a reason that a second
    measurement shares (a busy machine, a baseline from another CPU model), which would be
    held again for the same reason at the cost of a second measurement."""
    return Verdict(verdict.status).unsure and not (
        verdict.status == Verdict.INCONCLUSIVE and getattr(verdict, "reason", "")
    )


def confirm(
    samples: TimeSamples,
    judge: Callable[[TimeSamples], Mapping[str, J]],
    remeasure: Callable[[], TimeSamples],
    enabled: bool = True,
) -> Confirmed[J]:
    """Judge ``samples``; when any verdict is unsure (and confirmation is ``enabled``),
    re-measure, judge the re-measure alone and the pooled samples, and hold at
    inconclusive each pooled failure that either measurement alone does not bear out."""
    first = judge(samples)
    if not enabled or not any(worth_remeasuring(v) for v in first.values()):
        return Confirmed(samples, first, None, first)
    again = remeasure()
    second = judge(again)
    pooled = samples + again
    final = dict(judge(pooled))
    disagreed = set()
    for name, v in final.items():
        if not Verdict(v.status).fails or (
            _suspected(first[name]) and first[name].past_limit and name in second and second[name].past_limit
        ):
            continue
        kept = held_apart(v, (first[name], *((second[name],) if name in second else ())))
        if kept is not v:
            final[name] = kept
            disagreed.add(name)
    return Confirmed(pooled, first, second, final, frozenset(disagreed))


def held_apart(pooled: J, measured: Sequence[J]) -> J:
    """A pooled failure whose measurements disagree, held at inconclusive with the interval
    spanning the pooled one and each measurement's, so no verdict reads ``inconclusive``
    beside an interval wholly past its limit. Where even that one lies wholly past the
    limit, every measurement's does: they agree, and ``pooled`` stands."""
    held = pooled.held(*measured)
    return pooled if held.wholly_past_limit else held


def _suspected(first: Judged) -> bool:
    """The first measurement suspected a failure: it failed, or it was open, judged on each
    side's own run time (a busy machine, where a failure needs the whole interval past the
    limit); the caller asks its ratio past the limit too."""
    by_own_run_time = getattr(first, "by_own_run_time", False)
    return Verdict(first.status).fails or (by_own_run_time and first.status == Verdict.INCONCLUSIVE)


# --- measuring a borderline verdict until it is decided (issue 60) -----------------------

#: :attr:`Settling.stopped` of a verdict that left its limit's straddle
DECIDED = "decided"


class Budget(Protocol):
    """What measuring until decided may add (config/time_policy.py ``DecideBudget``)."""

    @property
    def seconds(self) -> float: ...

    @property
    def rounds(self) -> int: ...

    @property
    def enabled(self) -> bool: ...

    def describe(self) -> str: ...


#: :class:`Settling`'s fields, in the order a results file writes them (result/entry.py)
SETTLING_FIELDS = ("looks", "rounds", "batches", "seconds", "stopped", "budget")


@dataclass(frozen=True)
class Settling:
    """How a verdict that straddled its limit after its confirmation was measured on (:func:`settle`)."""

    #: the later looks taken (each judged on every sample so far, at the alpha it spends)
    looks: int
    #: the rounds added, in :attr:`batches` fresh measurements (both programs loaded anew in each)
    rounds: int
    batches: int
    #: the wall-clock seconds the added measurements took (loading both programs anew, timing them)
    seconds: float
    #: :data:`DECIDED`, or why it stopped undecided (the budget spent, a reason that holds it)
    stopped: str
    budget: str

    @property
    def decided(self) -> bool:
        return self.stopped == DECIDED

    def to_json(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in SETTLING_FIELDS}

    def note(self, verdict: Judged) -> str:
        """The message's note: what was added, and how it ended."""
        ended = (
            f"{verdict.status} at {verdict.describe()}"
            if self.decided
            else f"still inconclusive at {verdict.describe()}: {self.stopped}"
        )
        return (
            f"measured until decided: {self.rounds} more rounds in {self.batches} fresh measurements, "
            f"{self.looks} more look(s), {self.seconds:.3g} s (budget {self.budget}, "
            f"--tvmperf-decide-budget): {ended}"
        )

    def word(self) -> str:
        """The summary's word: 'decided after 315 more rounds' or 'undecided after 990 more rounds: ...'."""
        if self.decided:
            return f"decided after {self.rounds} more rounds"
        return f"undecided after {self.rounds} more rounds ({self.stopped})"


def settle(
    checked: Confirmed[J],
    judge_look: Callable[[TimeSamples, int, int], Mapping[str, J]],
    measure_batch: Callable[[int], TimeSamples],
    budget: Budget,
    batch_rounds: int,
    clock: Callable[[], float],
    straddles: Callable[[J], bool],
    name: str = "time",
) -> tuple[Confirmed[J], Settling | None]:
    """Measure a verdict that still straddles its limit after its confirmation until it is decided.

    Look ``k`` (1, 2, ...) adds ``3 * 2**(k-1)`` fresh measurements of ``batch_rounds`` rounds (both
    programs loaded anew in each, so each is a new draw of what a process's placement adds) and judges
    every sample so far by ``judge_look(samples, k, batches)``: at the alpha look ``k`` spends
    (config/time_policy.py :func:`spent_alpha`), with the process-level allowances over the pooled
    measurements, and a failure only wholly past the limit. A failure also needs the measurements to
    agree: more than half of them alone past the limit (``judge_look(batch, 0, 1)``: each judged as a
    first measurement is); else it is held and the looks go on. It stops when the verdict leaves the
    straddle (``straddles``), or before a batch that would pass ``budget``'s rounds, or once its
    seconds are spent (wall clock, by ``clock``: loading the programs anew counts, not only their
    samples). Returns the confirmed verdicts with ``name``'s
    replaced, and how it went (None: nothing to settle)."""
    verdict = checked.verdicts[name]
    if not budget.enabled or verdict.status != Verdict.INCONCLUSIVE or not straddles(verdict):
        return checked, None
    alone = list(checked.measurements(name))
    pooled, batches, rounds, seconds, look, stopped = checked.samples, len(alone), 0, 0.0, 0, ""
    started = clock()
    while not stopped:
        added = 0
        for _ in range(3 * 2**look):
            if rounds + batch_rounds > budget.rounds:
                stopped = f"its budget's {budget.rounds} rounds spent"
            elif seconds >= budget.seconds:
                stopped = f"its budget's {budget.seconds:g} s spent"
            if stopped:
                break
            got = measure_batch(batch_rounds)
            alone.append(judge_look(got, 0, 1)[name])
            pooled, batches, rounds, seconds = pooled + got, batches + 1, rounds + batch_rounds, clock() - started
            added += 1
        if not added:
            break
        look += 1
        verdict = judge_look(pooled, look, batches)[name]
        if Verdict(verdict.status).fails and not 2 * sum(v.past_limit for v in alone) > len(alone):
            verdict = verdict.held()  # the pooled samples fail, most measurements alone do not: look on
        elif verdict.status != Verdict.INCONCLUSIVE:
            stopped = DECIDED
        elif not straddles(verdict):
            stopped = f"held: {getattr(verdict, 'reason', '') or 'not a side-by-side interval'}"
    if not look:  # the budget did not allow one batch: the confirmed verdict stands
        return checked, Settling(0, 0, 0, 0.0, stopped, budget.describe())
    final = {**checked.verdicts, name: verdict}
    disagreed = checked.disagreed - {name} if stopped == DECIDED else checked.disagreed
    settled = Confirmed(pooled, checked.first, checked.second, final, disagreed)
    return settled, Settling(
        look, rounds, batches - len(checked.measurements(name)), seconds, stopped, budget.describe()
    )


# --- sequential sampling: stop when the answer is already a pass ----------------------


#: the fewest rounds a look may judge from (the bootstrap of a median needs a few)
FIRST_LOOK = 6


def looks(rounds: int) -> tuple[int, ...]:
    """The rounds after which a measurement of ``rounds`` rounds is judged: (6, 10, 15)
    for 15; only ``(rounds,)`` when there are too few rounds to look earlier."""
    kept = [rounds]
    for look in (-(-2 * rounds // 3), max(FIRST_LOOK, -(-2 * rounds // 5))):
        if look >= FIRST_LOOK and kept[0] - look >= 3:  # a look a few rounds apart from the next
            kept.insert(0, look)
    return tuple(kept)


@dataclass(frozen=True)
class Sampled:
    samples: TimeSamples
    #: the rounds the measurement was planned for; ``len(samples.samples)`` were taken
    planned: int

    @property
    def stopped_early(self) -> bool:
        return len(self.samples.samples) < self.planned

    def note(self) -> str:
        """'a pass after 6 of 15 rounds' ("" when every round was taken)."""
        if not self.stopped_early:
            return ""
        return f"a pass after {len(self.samples.samples)} of {self.planned} rounds (sequential sampling)"


def sample_in_looks(
    measure: Callable[[int], TimeSamples], rounds: int, settled: Callable[[TimeSamples], bool] | None
) -> Sampled:
    """Measure ``rounds`` rounds in :func:`looks`, and stop at an earlier look when
    ``settled`` says the samples so far already decide (a pass: a slowdown of the
    threshold is ruled out). Only a pass stops early: ruling a slowdown out fails
    nothing, so the early looks spend none of the run's false-alarm budget, and a
    ``regressed`` call is only ever made on every round (then confirmed). A pass called
    early on a real slowdown is the risk: the first look judges 6 rounds, whose bootstrap
    interval carries the same noise allowance as 15 (benchmarks/detection_power.py
    measures what it costs in power). ``settled=None``: one measurement of every round."""
    plan = looks(rounds) if settled is not None else (rounds,)
    samples: TimeSamples | None = None
    for look in plan:
        taken = 0 if samples is None else len(samples.samples)
        got = measure(look - taken)
        samples = got if samples is None else samples + got
        if look < rounds and settled is not None and settled(samples):
            break
    assert samples is not None
    return Sampled(samples, rounds)


# --- what one test's verdict is, from its comparison and its peers (pure) -------------


@dataclass(frozen=True)
class WholeVerdict:
    """A test's whole verdict: its word, and what the check pipeline does with it."""

    verdict: Verdict
    #: the test fails (a metric regressed, or TVM is slower than a gated peer)
    fails: bool
    #: the test is reported inconclusive (``--tvmperf-inconclusive`` decides its fate)
    open: bool
    #: the message leads with the peers (the baseline comparison itself passed)
    peers_lead: bool
    #: the failure message is kept for the report (it says something worth reading)
    shown: bool


def whole_verdict(
    comparison_status: str, regressed: bool, inconclusive: bool, peer_statuses: Sequence[str]
) -> WholeVerdict:
    """Combine the baseline comparison with the gated peers: a regression is named
    first; a peer past its limit fails a test whose comparison passed."""
    peer_exceeded = Verdict.EXCEEDED in peer_statuses
    peer_open = Verdict.INCONCLUSIVE in peer_statuses
    status = Verdict(comparison_status)
    if peer_exceeded and status != Verdict.REGRESSED:
        status = Verdict.SLOWER_THAN_PEER
    comparison_first = comparison_status in (Verdict.REGRESSED, Verdict.INCONCLUSIVE)
    return WholeVerdict(
        verdict=status,
        fails=regressed or peer_exceeded,
        open=inconclusive or peer_open,
        peers_lead=not comparison_first and (peer_exceeded or peer_open),
        shown=comparison_first or peer_exceeded or peer_open,
    )


def pipeline_notes(
    baseline_pipeline: str,
    pipeline: str,
    same_target: bool,
    baseline_records_hash: str | None,
    records_hash: str | None,
    tuning_source: str = "",
) -> tuple[list[str], str]:
    """Notes on how the compile pipeline or tuning records changed since the baseline, and
    the summary's short word for a tuning change ("" when none). ``records_hash`` covers only
    this test's own kernels' records (tuning.inspect). ``tuning_source``: where schedules not
    all this target's own came from (``schedules tuned on znver4, applied on znver3: 31 of 31
    kernels``), a note and the summary's word."""
    source = [tuning_source] if tuning_source else []
    if baseline_pipeline != pipeline:
        return [f"compile pipeline changed: {safe(baseline_pipeline)} -> {pipeline}", *source], tuning_source
    if same_target and baseline_records_hash != records_hash:  # each target has its own records
        changed = "tuning database records changed since the baseline"
        note = f"{changed} ({safe(baseline_records_hash)} -> {records_hash}): re-record with pytest --tvmperf-update"
        return [f"{note} if the new schedules are intended", *source], "; ".join([changed, *source])
    return source, tuning_source


def confirmation_note(checked: "Confirmed", name: str = "time") -> str | None:
    """The message's note on a re-measured verdict (a time comparison or an
    ``assert_ratio`` relation); None when it was not re-measured."""
    if checked.second is None:
        return None
    first, second, final = checked.first[name], checked.second[name], checked.verdicts[name]
    if name in checked.disagreed:
        word = (
            f"fails on all samples, but the measurements disagree ({first.measured_ratio:.2f}x, then "
            f"{second.measured_ratio:.2f}x): inconclusive; the re-measure alone {second.describe()}; shown with "
            f"the interval spanning both measurements' and the pooled samples': {final.describe()}"
        )
    elif final.status != first.status:
        word = f"not confirmed (now {final.status})"
    else:  # an answer held at inconclusive is never "confirmed": it is still held
        word = "still inconclusive" if final.status == Verdict.INCONCLUSIVE else "confirmed"
    return (
        f"first measurement {first.status} at {first.describe()}; re-measured with "
        f"{len(checked.samples.samples)} samples in all: {word}"
    )


def summary_note(threads_note: str, status: str, reason: str, not_gated_note: str, tuning_note: str) -> str:
    """The summary row's short note: one line per kind of reason, so that a busy
    machine reads the same on every row it held."""
    if status == Verdict.NOT_GATED and not_gated_note:
        return "; ".join(n for n in (f"time shown, not gated: {not_gated_note}", tuning_note) if n)
    held = f"time inconclusive: {reason.split(':')[0]}" if reason and status == Verdict.INCONCLUSIVE else ""
    return "; ".join(n for n in (threads_note, held, tuning_note) if n)
