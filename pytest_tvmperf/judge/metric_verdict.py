"""One metric's verdict against its baseline, with its evidence (:class:`MetricVerdict`), and a
test's verdicts together (:class:`Comparison`): the values judge/compare.py makes (pure)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pytest_tvmperf.judge.busy import held_between
from pytest_tvmperf.judge.confirmation import Settling
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME, TimeDecision
from pytest_tvmperf.judge.verdict import MetricStatus, Verdict


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    status: MetricStatus
    baseline: float | None
    current: float | None
    limit: str
    note: str = ""
    decision: TimeDecision | None = None
    #: why the evidence could not be trusted and the verdict was held at inconclusive
    #: (a busy machine, a baseline from another CPU model); "" when it could
    reason: str = ""
    #: the largest time ratio that passes (1 + threshold), for time verdicts; for a peak
    #: (values/peak_memory.py), the most bytes that pass
    bound: float | None = None
    #: a/b: ``baseline`` is the median of the baseline's artifact timed side by side in this
    #: run (the numbers that agree with the verdict); this is the median stored with the
    #: baseline, shown beside it. None in the other modes (``baseline`` is then the stored one)
    stored_baseline: float | None = None
    #: a time verdict measured on until it was decided (judge/confirmation.py :func:`settle`): the
    #: rounds it added and why it stopped; None where it straddled nothing after its confirmation
    settled: Settling | None = None
    #: the samples ``current`` and ``baseline`` are the medians of (time: today's, and the side-by-side
    #: baseline's or the stored one's; each side's own run time where the verdict judged that), so that
    #: every view shows the same numbers from the same samples; None where not told
    current_samples: tuple[float, ...] | None = None
    baseline_samples: tuple[float, ...] | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.baseline in (None, 0) or self.current is None else self.current / self.baseline

    @property
    def measured_ratio(self) -> float:
        """The time ratio the decision measured (side by side, normalized or raw)."""
        return self.decision.ratio if self.decision is not None else (self.ratio or 1.0)

    def describe(self) -> str:
        return self.decision.describe() if self.decision is not None else f"{self.measured_ratio:.2f}x"

    @property
    def past_limit(self) -> bool:
        """The measured time ratio alone is past the threshold."""
        return self.decision is not None and self.bound is not None and self.decision.ratio > self.bound

    @property
    def by_own_run_time(self) -> bool:
        """Decided on each side's own run time (a busy machine), not on wall times."""
        return self.decision is not None and self.decision.estimate == OWN_RUN_TIME

    @property
    def wholly_past_limit(self) -> bool:
        """The whole interval lies above the threshold."""
        return self.decision is not None and self.bound is not None and self.decision.low > self.bound

    def held(self, *measured: "MetricVerdict") -> "MetricVerdict":
        """See :meth:`confirmation.Judged.held` (:func:`busy.held_between`)."""
        pooled = [m.decision for m in measured if m.decision is not None]
        decision = None if self.decision is None else held_between(self.decision, *pooled)
        return replace(self, status=Verdict.INCONCLUSIVE, decision=decision)


#: the limit shown for a per-kernel metric not gated because the baseline measured it another way
HELD = "held"


@dataclass(frozen=True)
class Comparison:
    verdicts: tuple[MetricVerdict, ...]

    def get(self, metric: str) -> MetricVerdict | None:
        return next((v for v in self.verdicts if v.metric == metric), None)

    def with_verdict(self, verdict: MetricVerdict) -> "Comparison":
        """This comparison with ``verdict`` in place of its metric's (a confirmed one)."""
        return Comparison(tuple(verdict if v.metric == verdict.metric else v for v in self.verdicts))

    @property
    def regressions(self) -> tuple[MetricVerdict, ...]:
        return tuple(v for v in self.verdicts if v.status == Verdict.REGRESSED)

    @property
    def improvements(self) -> tuple[MetricVerdict, ...]:
        return tuple(v for v in self.verdicts if v.status == Verdict.IMPROVED)

    @property
    def inconclusive(self) -> bool:
        return any(v.status == Verdict.INCONCLUSIVE for v in self.verdicts)

    def held_setups(self) -> tuple[str, ...]:
        """Summary lines for the metrics not gated because the baseline measured them
        another way (``exact.measured_with``), with the fix."""
        return tuple(
            f"{v.metric} not gated: {v.reason} (re-record with --tvmperf-update to gate it on this setup)"
            for v in self.verdicts
            if v.status == Verdict.NOT_GATED and v.limit == HELD and v.reason
        )

    @property
    def status(self) -> MetricStatus:
        if self.regressions:
            return Verdict.REGRESSED
        if self.inconclusive:
            return Verdict.INCONCLUSIVE
        if self.improvements:
            return Verdict.IMPROVED
        return Verdict.PASS
