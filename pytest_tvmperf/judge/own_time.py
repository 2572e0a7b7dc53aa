"""Pure: each side of a time comparison judged on its own run time when the machine is busy.

Each side's run time is its wall time less its own threads' CPU wait (``TimeSamples.waits``:
the most any of them waited, as a share of the sample's wall time). The sides of a ratio are
paired round by round, so a round is judged by its own samples' run times, never by another
sample's wait (a peer framework's threads do not widen TVM's side). A round in which a side
waited past ``1 - MIN_RUN_SHARE`` of its wall time cannot tell that side's run time and is
left out; when too few rounds are left, the verdict is inconclusive and names the side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pytest_tvmperf.judge.disturbance import LOAD_NOISE_PER_WAIT, MIN_CLEAN_ROUNDS, MIN_CLEAN_SHARE, MIN_RUN_SHARE
from pytest_tvmperf.values.samples import TimeSamples

#: what the summary calls each series (a peer by its name: ``torch`` for ``peer:torch``)
SIDE_NAMES = {"time": "today's build", "baseline": "the baseline's program", "reference": "the reference kernel"}


@dataclass(frozen=True)
class OwnTimes:
    """Each side's run time (wall time less its own threads' CPU wait) per kept round."""

    runs: tuple[tuple[str, tuple[float, ...]], ...]
    kept: tuple[int, ...]
    total: int
    #: median share of wall time the kept rounds' sides waited (the most of the sides per round)
    load: float
    #: why the run time cannot be told ("" when it can): names the side
    lost: str = ""

    def series(self, name: str) -> tuple[float, ...]:
        return dict(self.runs)[name]

    def median(self, name: str) -> float:
        return float(np.median(self.series(name)))

    def ratios(self, numerator: str, denominator: str) -> tuple[float, ...]:
        """Per kept round, the run time of ``numerator`` over that of ``denominator``."""
        return tuple(a / b for a, b in zip(self.series(numerator), self.series(denominator)))

    @property
    def allowance(self) -> float:
        """The extra noise (standard deviation of the log ratio) the load adds beyond the
        samples' spread: a preempted side also refills its caches."""
        return LOAD_NOISE_PER_WAIT * min(1.0, self.load)

    def describe(self) -> str:
        return (
            f"judged on each side's own run time (wall time less its own threads' CPU wait), "
            f"{len(self.kept)} of {self.total} rounds, median wait {self.load:.0%}, allowance "
            f"+{self.allowance:.1%}"
        )


def own_times(samples: TimeSamples, sides: Sequence[str]) -> OwnTimes | None:
    """The run times of ``sides`` (series names: ``time``, ``baseline``, ``reference``,
    ``peer:<name>``), or None when the samples do not carry each side's own waits (an RPC
    device, an injected timer)."""
    values = [samples.series(s) for s in sides]
    waits = [samples.wait(s) for s in sides]
    if any(v is None for v in values) or any(w is None for w in waits):
        return None
    total = len(samples.samples)
    ceiling = 1 - MIN_RUN_SHARE
    untold = [sum(1 for x in w if x > ceiling) for w in waits]  # type: ignore[union-attr]
    kept = tuple(i for i in range(total) if all(w[i] <= ceiling for w in waits))  # type: ignore[index]
    if len(kept) < max(MIN_CLEAN_ROUNDS, math.ceil(MIN_CLEAN_SHARE * total)):
        worst = max(range(len(sides)), key=lambda k: untold[k])
        name = sides[worst]
        side = name.removeprefix("peer:") if name.startswith("peer:") else SIDE_NAMES.get(name, name)
        lost = (
            f"the run time of {side} cannot be told: its threads waited for a CPU "
            f"more than {ceiling:.0%} of its wall time in {untold[worst]} of {total} rounds"
        )
        return OwnTimes((), kept, total, 1.0, lost)
    runs = tuple(
        (s, tuple(v[i] * (1 - w[i]) for i in kept))  # type: ignore[index]
        for s, v, w in zip(sides, values, waits)
    )
    load = float(np.median([max(w[i] for w in waits) for i in kept]))  # type: ignore[index]
    return OwnTimes(runs, kept, total, load)


def as_run_times(samples: TimeSamples) -> TimeSamples | None:
    """The samples with every series replaced by its own run time (wall time less its own
    threads' wait), the rounds whose run time cannot be told left out: what a baseline
    recorded on a busy machine stores. None where the samples carry no per-side waits, or
    too few rounds can be told."""
    present = [n for n in ("reference", "baseline") if samples.series(n) is not None]
    names = ["time", *present, *(f"peer:{n}" for n, _ in samples.peers)]
    own = own_times(samples, names)
    if own is None or own.lost:
        return None
    cut = samples.rounds(own.kept)
    return TimeSamples(
        own.series("time"),
        own.series("reference") if cut.reference is not None else None,
        cut.reference_name,
        own.series("baseline") if cut.baseline is not None else None,
        tuple((n, own.series(f"peer:{n}")) for n, _ in cut.peers),
        tuple(0.0 for _ in own.kept),
        cut.screened_by,
        tuple((n, tuple(0.0 for _ in own.kept)) for n in names),
    )
