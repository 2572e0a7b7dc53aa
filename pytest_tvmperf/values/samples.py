"""Raw time samples of one measurement, with the samples taken beside them (pure: the
clock that takes them is builder/timer.py)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class TimeSamples:
    """Raw seconds-per-call samples of one measurement; ``reference`` (the reference
    kernel's) and ``baseline`` (the baseline's own artifact's) interleaved with them round
    by round, so ``normalized`` and ``ab_ratios`` cancel what the machine did to all."""

    samples: tuple[float, ...]
    reference: tuple[float, ...] | None = None
    reference_name: str | None = None
    baseline: tuple[float, ...] | None = None
    #: peer frameworks' samples, ``((name, samples), ...)``, taken in the same rounds
    peers: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: per round, the largest share of a sample's wall time that this process's threads
    #: spent waiting for a CPU (runnable, not running: preempted by other jobs); None
    #: where the kernel does not tell (see builder/timer.py)
    preempted: tuple[float, ...] | None = None
    #: what ``preempted`` measures: ``host``, this process's CPU wait; ``device``, on an RPC
    #: device, how far the reference kernel's round ran over its lower quartile (its CPU wait
    #: cannot be read from the host; see judge/disturbance.py)
    screened_by: str = "host"
    #: per series (``time``, ``reference``, ``baseline``, ``peer:<name>``), per round, the most
    #: share of that sample's wall time any of its own threads waited for a CPU: what the load
    #: took from that side alone (builder/timer.py; judge/own_time.py). Empty where not told
    waits: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("TimeSamples needs at least one sample")
        if self.preempted is not None:
            if len(self.preempted) != len(self.samples):
                raise ValueError("preempted shares must pair one to one with the time samples")
            if any(not (0 <= p < float("inf")) for p in self.preempted):
                raise ValueError(f"preempted shares must be finite and >= 0, got {self.preempted}")
        for name, shares in self.waits:
            if len(shares) != len(self.samples) or any(not (0 <= x < float("inf")) for x in shares):
                raise ValueError(f"the waits of series {name!r} must be finite shares >= 0, one per round")
        sides = (("time", self.samples), ("reference", self.reference), ("baseline", self.baseline))
        for name, values in (*sides, *((f"peer {n}", v) for n, v in self.peers)):
            if values is None:
                continue
            if any(not (s > 0 and s < float("inf")) for s in values):
                raise ValueError(f"{name} samples must be positive and finite, got {values}")
            if len(values) != len(self.samples):
                raise ValueError(f"{name} samples must pair one to one with the time samples")

    @property
    def median(self) -> float:
        return float(statistics.median(self.samples))

    @property
    def normalized(self) -> tuple[float, ...] | None:
        """Workload time over the neighbouring reference time, per round."""
        return None if self.reference is None else self.ratios("time", "reference")

    @property
    def ab_ratios(self) -> tuple[float, ...] | None:
        """Workload time over the neighbouring baseline-artifact time, per round."""
        return None if self.baseline is None else self.ratios("time", "baseline")

    def wait(self, series: str) -> tuple[float, ...] | None:
        """The own-thread wait shares of ``series`` per round (see :attr:`waits`), or None."""
        return dict(self.waits).get(series)

    def series(self, name: str) -> tuple[float, ...] | None:
        """The samples of ``time``, ``reference``, ``baseline`` or ``peer:<name>``."""
        if name.startswith("peer:"):
            return self.peer(name[len("peer:") :])
        return {"time": self.samples, "reference": self.reference, "baseline": self.baseline}.get(name)

    def peer(self, name: str) -> tuple[float, ...] | None:
        return dict(self.peers).get(name)

    def ratios(self, numerator: str, denominator: str) -> tuple[float, ...]:
        """Per round, the sample of series ``numerator`` over that of ``denominator``."""
        top, bottom = self.series(numerator), self.series(denominator)
        return () if top is None or bottom is None else tuple(a / b for a, b in zip(top, bottom))

    def __add__(self, other: "TimeSamples") -> "TimeSamples":
        """Pool two measurements of the same workload (a confirmation re-measure)."""
        paired = (
            self.reference is not None and other.reference is not None and self.reference_name == other.reference_name
        )
        both_ab = self.baseline is not None and other.baseline is not None
        theirs = dict(other.peers)
        return TimeSamples(
            self.samples + other.samples,
            (self.reference or ()) + (other.reference or ()) if paired else None,
            self.reference_name if paired else None,
            (self.baseline or ()) + (other.baseline or ()) if both_ab else None,
            tuple((n, v + theirs[n]) for n, v in self.peers if n in theirs),
            self.preempted + other.preempted if self.preempted is not None and other.preempted is not None else None,
            self.screened_by,
            tuple((n, v + dict(other.waits)[n]) for n, v in self.waits if n in dict(other.waits)),
        )

    def rounds(self, keep: Sequence[int]) -> "TimeSamples":
        """Only the rounds numbered in ``keep`` (every series cut alike, pairs kept)."""

        def cut(values):
            return None if values is None else tuple(values[i] for i in keep)

        return TimeSamples(
            cut(self.samples),
            cut(self.reference),
            self.reference_name,
            cut(self.baseline),
            tuple((n, cut(v)) for n, v in self.peers),
            cut(self.preempted),
            self.screened_by,
            tuple((n, cut(v)) for n, v in self.waits),
        )

    def stats(self) -> dict[str, float]:
        """Summary statistics from pytest-benchmark's ``Stats`` (min, median, iqr, ...)."""
        from pytest_benchmark.stats import Stats

        st = Stats()
        for s in self.samples:
            st.update(s)
        keep = ("min", "max", "mean", "median", "stddev", "iqr", "q1", "q3", "rounds", "outliers")
        return {k: v for k, v in st.as_dict().items() if k in keep}
