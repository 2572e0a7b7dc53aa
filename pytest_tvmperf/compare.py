"""Pure: current record + baseline record + thresholds -> verdicts with the evidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from .options import EXACT_METRICS, TIME_METRIC, Limit
from .record import Record

Status = Literal["pass", "regressed", "improved", "n/a", "not gated"]


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    status: Status
    baseline: float | None
    current: float | None
    limit: str
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0) or self.current is None:
            return None
        return self.current / self.baseline


@dataclass(frozen=True)
class Comparison:
    verdicts: tuple[MetricVerdict, ...]

    def get(self, metric: str) -> MetricVerdict | None:
        return next((v for v in self.verdicts if v.metric == metric), None)

    @property
    def regressions(self) -> tuple[MetricVerdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "regressed")

    @property
    def improvements(self) -> tuple[MetricVerdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "improved")

    @property
    def status(self) -> str:
        if self.regressions:
            return "regressed"
        if self.improvements:
            return "improved"
        return "pass"


def compare_exact(metric: str, baseline: float | None, current: float | None, limit: Limit) -> MetricVerdict:
    if baseline is None or current is None:
        return MetricVerdict(metric, "n/a", baseline, current, limit.describe())
    if not limit.enabled:
        return MetricVerdict(metric, "not gated", baseline, current, "off")
    if current > limit.allowed_max(baseline):
        return MetricVerdict(metric, "regressed", baseline, current, limit.describe())
    if current < baseline:
        return MetricVerdict(metric, "improved", baseline, current, limit.describe())
    return MetricVerdict(metric, "pass", baseline, current, limit.describe())


def compare_time(current: Record, baseline: Record, limit: Limit) -> MetricVerdict:
    timing = current.timing
    if timing is None:
        return MetricVerdict(TIME_METRIC, "n/a", None, None, limit.describe())
    now = timing.samples.median
    base = baseline.timings.get(timing.machine.fingerprint)
    if base is None:
        return MetricVerdict(
            TIME_METRIC, "not gated", None, now, limit.describe(),
            note=f"no time baseline for this machine (fingerprint {timing.machine.fingerprint}); "
            f"{len(baseline.timings)} other machine(s) recorded",
        )
    then = base.samples.median
    if not limit.enabled:
        return MetricVerdict(TIME_METRIC, "not gated", then, now, "off")
    if now > limit.allowed_max(then):
        status: Status = "regressed"
    elif now * (1.0 + (limit.relative or 0.0)) < then:
        status = "improved"
    else:
        status = "pass"
    return MetricVerdict(TIME_METRIC, status, then, now, limit.describe(), note="median of samples")


def compare(current: Record, baseline: Record, thresholds: Mapping[str, Limit]) -> Comparison:
    verdicts = [
        compare_exact(m, baseline.exact.scalar(m), current.exact.scalar(m), thresholds[m]) for m in EXACT_METRICS
    ]
    verdicts.append(compare_time(current, baseline, thresholds[TIME_METRIC]))
    return Comparison(tuple(verdicts))
