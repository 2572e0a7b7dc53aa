"""Pure: ratios measured side by side in the same rounds, judged against a limit: TVM
against a peer framework (``vs_numpy=1.2``) and the two sides of an ``assert_ratio``;
each side on its own run time where the machine was busy (judge/own_time.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from pytest_tvmperf.judge.busy import busy_widened_decision, held_between, held_decision, untold_decision, widened_note
from pytest_tvmperf.judge.disturbance import busy_shares, clean
from pytest_tvmperf.judge.own_time import own_times
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME, TimeDecision, decide
from pytest_tvmperf.judge.verdict import RatioStatus, Verdict
from pytest_tvmperf.values.samples import TimeSamples


#: a ratio's decision (on ratio/limit, threshold 0) as the ratio's status
_RATIO_STATUS = {
    Verdict.REGRESSED: Verdict.EXCEEDED,
    Verdict.IMPROVED: Verdict.PASS,
    Verdict.PASS: Verdict.PASS,
    Verdict.INCONCLUSIVE: Verdict.INCONCLUSIVE,
}


@dataclass(frozen=True)
class RatioVerdict:
    """TVM over a peer framework, or one side of a relation over the other, measured side by
    side in the same rounds. ``limit``: the most the ratio may be (None: not gated). ``pass``
    and ``exceeded`` need the whole interval at or under, or above, the limit; otherwise (or
    held by a busy machine or two disagreeing measurements) ``inconclusive``."""

    name: str
    limit: float | None
    decision: TimeDecision
    numerator_s: float
    denominator_s: float
    #: why the evidence could not be trusted (a busy machine); "" when it could
    reason: str = ""
    #: how the interval was widened for a busy machine ("" when it was not)
    allowance: str = ""

    @property
    def status(self) -> RatioStatus:
        if self.limit is None:
            return Verdict.NOT_GATED
        # decide() ran on ratio/limit with threshold 0: "regressed" means above the limit
        return _RATIO_STATUS[self.decision.status]

    @property
    def ratio(self) -> float:
        return self.decision.ratio * (self.limit or 1.0)

    measured_ratio = ratio

    @property
    def past_limit(self) -> bool:
        """The measured ratio alone is above its limit."""
        return self.limit is not None and self.ratio > self.limit

    @property
    def by_own_run_time(self) -> bool:
        """Decided on each side's own run time (a busy machine), not on wall times."""
        return self.decision.estimate == OWN_RUN_TIME

    @property
    def wholly_past_limit(self) -> bool:
        """The whole interval lies above the limit."""
        return self.limit is not None and self.low > self.limit

    def held(self, *measured: "RatioVerdict") -> "RatioVerdict":
        """See :meth:`confirmation.Judged.held` (:func:`busy.held_between`)."""
        return replace(self, decision=held_between(self.decision, *(m.decision for m in measured)))

    @property
    def low(self) -> float:
        return self.decision.low * (self.limit or 1.0)

    @property
    def high(self) -> float:
        return self.decision.high * (self.limit or 1.0)

    def describe(self) -> str:
        """'0.42x (99% CI 0.40-0.44x)'."""
        widened = f", {self.allowance}" if self.allowance else ""
        return f"{self.ratio:.2f}x ({self.decision.confidence * 100:.3g}% CI {self.low:.2f}-{self.high:.2f}x{widened})"


def straddles(verdict: RatioVerdict) -> bool:
    """A ratio more rounds can decide: inconclusive with no reason holding it (a busy machine whose
    run times cannot be told holds it: more rounds of the same cannot)."""
    return verdict.status == Verdict.INCONCLUSIVE and not verdict.reason


def ratio_verdict(
    name: str,
    ratios: tuple[float, ...],
    numerator_s: float,
    denominator_s: float,
    limit: float | None,
    alpha: float,
    noise: float,
    reason: str = "",
    busy: Sequence[float] | None = None,
    untold: bool = False,
    source: str = "host",
) -> RatioVerdict:
    """Judge paired per-round ratios against ``limit`` (see :class:`RatioVerdict`); ``reason``
    (why the evidence cannot be trusted) holds it at inconclusive, unless ``busy`` (a busy
    machine's per-round CPU waits) bounds what the load could have done: then the widened
    interval decides (:func:`busy_widened_decision`; ``untold``, a side's run time cannot be
    told: :func:`busy.untold_decision`), and a ratio far past its limit is ``exceeded``."""
    scaled = [r / (limit or 1.0) for r in ratios]
    if reason and busy is not None and len(busy) == len(scaled):
        widen = untold_decision if untold else busy_widened_decision
        decision = widen(scaled, None, busy, 0.0, alpha, noise, "a/b", allow_pass=True)
        reason = reason if decision.status == Verdict.INCONCLUSIVE else ""
        return RatioVerdict(name, limit, decision, numerator_s, denominator_s, reason, widened_note(busy, source))
    # a pass needs the whole interval at or under the limit (``2.65x [2.26-3.10]`` against 3
    # is no pass), as ``exceeded`` needs it wholly above
    decision = decide(scaled, None, 0.0, alpha, noise, "a/b", "interval")
    return RatioVerdict(
        name, limit, held_decision(decision) if reason else decision, numerator_s, denominator_s, reason
    )


def _side_ratio(
    name: str,
    samples: TimeSamples,
    screened,
    numerator: str,
    denominator: str,
    limit: float | None,
    alpha: float,
    noise: float,
) -> RatioVerdict:
    """One ratio, ``numerator`` over ``denominator`` (series names), judged on each side's
    own run time where the machine was busy and the samples carry each side's waits, else
    on the screened wall times (widened by the rounds' waits where only those are known)."""
    reason = screened.describe() if screened is not None and screened.busy else ""
    waits = busy_shares(samples, screened)
    untold = False
    if reason and screened.source == "host":
        own = own_times(samples, (numerator, denominator))
        if own is not None and not own.lost:
            scaled = [r / (limit or 1.0) for r in own.ratios(numerator, denominator)]
            decision = decide(scaled, None, 0.0, alpha, math.hypot(noise, own.allowance), "a/b", "interval")
            decision = replace(decision, estimate=OWN_RUN_TIME)
            # an inconclusive ratio carries no reason: more rounds (the confirmation) can decide it
            return RatioVerdict(
                name, limit, decision, own.median(numerator), own.median(denominator), "", own.describe()
            )
        if own is not None:  # a side whose run time cannot be told: held with that reason, widened by every wait
            reason, untold = f"{reason}; {own.lost}", True
    return ratio_verdict(
        name,
        ratios=samples.ratios(numerator, denominator),
        numerator_s=samples.median,
        denominator_s=float(np.median(samples.series(denominator))),
        limit=limit,
        alpha=alpha,
        noise=noise,
        reason=reason,
        busy=waits,
        untold=untold,
        source=screened.source if screened is not None else "host",
    )


def relation_verdict(name: str, samples: TimeSamples, limit: float, alpha: float, noise: float) -> RatioVerdict:
    """``assert_ratio``: the workload side (``samples``) over the other side (timed as
    ``baseline``), after leaving out the rounds the machine disturbed."""
    kept, screened = clean(samples)
    return _side_ratio(name, kept, screened, "time", "baseline", limit, alpha, noise)


def peer_verdicts(
    samples: TimeSamples, limits: Mapping[str, float], alpha: float, noise: float, wanted: tuple[str, ...] | None = None
) -> tuple[RatioVerdict, ...]:
    """TVM over each peer framework timed in the same rounds; gated where ``limits``
    names the peer (``@pytest.mark.tvmperf(vs_torch=1.2)``). A peer in ``wanted`` (or
    in ``limits``) without samples is an error: a timer that drops peers must not
    turn a gate off silently."""
    names = dict(samples.peers)
    lost = sorted((set(wanted or ()) | set(limits)) - set(names))
    if lost:
        raise ValueError(
            f"the timer returned no samples of peer(s) {', '.join(lost)}: a tvmperf_timer must time "
            f"TimingTask.peers and return them in TimeSamples.peers"
        )
    samples, screened = clean(samples)
    return tuple(
        _side_ratio(name, samples, screened, "time", f"peer:{name}", limits.get(name), alpha, noise)
        for name, _ in samples.peers
        if wanted is None or name in wanted
    )
