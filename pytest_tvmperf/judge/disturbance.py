"""Pure: which time samples the machine disturbed, and whether enough clean ones are left.

Every round of samples carries the share of its wall time that this process's threads
spent runnable but waiting for a CPU (``TimeSamples.preempted``, from Linux
schedstat): time lost to other jobs on the machine, not to the code. A round past
:data:`PREEMPTED_LIMIT` is left out of the evidence; when fewer than
:data:`MIN_CLEAN_SHARE` of the rounds (or fewer than :data:`MIN_CLEAN_ROUNDS`) are
clean, the machine is too busy to judge, and the verdict is ``inconclusive`` with the
reason, never ``regressed``.

On an RPC device the host cannot read the device's CPU wait. There the reference kernel,
timed on the device in the same rounds, stands in for it (:func:`device_disturbance`): a
round whose reference sample ran more than :data:`DEVICE_LIMIT` over the lower quartile of
the measurement's reference samples was disturbed (the kernel is fixed; only the device
changed), and the same rules leave it out or hold the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pytest_tvmperf.values.samples import TimeSamples

#: a round whose threads waited for a CPU for more than this share of a sample's wall
#: time is disturbed (idle: under 1%; one competing CPU-bound job per core: ~60%)
PREEMPTED_LIMIT = 0.03
#: at least this share of the rounds must be clean to judge
MIN_CLEAN_SHARE = 0.5
MIN_CLEAN_ROUNDS = 5
#: on an RPC device: a round whose reference-kernel sample ran more than this share over
#: the lower quartile of the measurement's is disturbed. Not the host's 3%: a device's own
#: spread is wider (an idle loopback server on this 2-core machine: 1.46-2.1 ms for the
#: 1.5 ms reference kernel, two clusters 15% apart), and what is screened is a burst
DEVICE_LIMIT = 0.25


#: a side that waited for a CPU past ``1 - MIN_RUN_SHARE`` of a sample's wall time ran for
#: too little of it to tell its run time: that round carries no evidence
MIN_RUN_SHARE = 0.05
#: the allowance a comparison adds under load, as the standard deviation of the log ratio
#: per unit of the rounds' median CPU wait (at a 75% wait: +3.8%): a preempted side also
#: refills its caches, beyond what the spread of its rounds shows. Measured with each side's
#: own run time (builder/timer.py) on this project's 2-core machine, 2 CPU-bound jobs and
#: the plugin's tests beside a 8 ms TE kernel timed A/A (waits 64-84%): the medians of 9
#: measurements of 15-45 rounds lay at 0.95-1.06, a standard deviation of 3.5%
LOAD_NOISE_PER_WAIT = 0.05


def wait_bounds(values: Sequence[float], preempted: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per round, the least and the most a time (or a ratio of two times of that round) can be
    once the CPU wait is out of it: ``preempted[i]``, the largest share of any sample's wall
    time in round ``i`` spent waiting, leaves each side at least ``1 - p`` of its wall time,
    so a ratio ``x`` lies within ``x * (1 - p)`` and ``x / (1 - p)``. A round whose wait
    passes ``1 - MIN_RUN_SHARE`` cannot be told and is left out (no interval may rest on it)."""
    low, high = [], []
    for x, p in zip(values, preempted):
        if p <= 1 - MIN_RUN_SHARE:
            low.append(x * (1 - p))
            high.append(x / (1 - p))
    return tuple(low), tuple(high)


def load_noise(preempted: Sequence[float]) -> float:
    """The allowance the load adds beside the wait bounds (see :data:`LOAD_NOISE_PER_WAIT`)."""
    return LOAD_NOISE_PER_WAIT * min(1.0, float(np.median(preempted))) if len(preempted) else 0.0


@dataclass(frozen=True)
class Screen:
    """The rounds kept after leaving out the disturbed ones."""

    kept: tuple[int, ...]
    total: int
    #: "host" (this process's CPU wait) or "device" (the reference kernel's excess on an RPC device)
    source: str = "host"

    @property
    def disturbed(self) -> int:
        return self.total - len(self.kept)

    @property
    def share_disturbed(self) -> float:
        return self.disturbed / self.total if self.total else 0.0

    @property
    def busy(self) -> bool:
        """Too few clean rounds to judge: the machine disturbed some, and too many (a
        measurement of few rounds, none disturbed, is not busy: it is judged as it is)."""
        return self.disturbed > 0 and len(self.kept) < max(MIN_CLEAN_ROUNDS, math.ceil(MIN_CLEAN_SHARE * self.total))

    def describe(self) -> str:
        """'machine busy: 38% of samples preempted' or '3 of 45 preempted samples left out'."""
        device = self.source == "device"
        if self.busy and device:
            return (
                f"device busy: {self.share_disturbed:.0%} of rounds disturbed (the reference kernel, timed on the "
                f"device in the same rounds, ran more than {DEVICE_LIMIT:.0%} over its lower quartile)"
            )
        if self.busy:
            return (
                f"machine busy: {self.share_disturbed:.0%} of samples preempted (this process's threads waited "
                f"for a CPU more than {PREEMPTED_LIMIT:.0%} of a sample's time)"
            )
        if self.disturbed:
            what = "disturbed device round(s)" if device else "preempted sample(s)"
            return f"{self.disturbed} of {self.total} {what} left out"
        return ""


def screen(preempted: Sequence[float], limit: float = PREEMPTED_LIMIT, source: str = "host") -> Screen:
    """Keep the rounds at or under ``limit``."""
    return Screen(tuple(i for i, p in enumerate(preempted) if p <= limit), len(preempted), source)


def device_disturbance(reference: Sequence[float] | None) -> tuple[float, ...] | None:
    """Per round, how far the reference kernel's sample ran over the lower quartile of the
    measurement's (0 at or under it): the stand-in for the CPU wait on an RPC device. The
    lower quartile, not the median, so that a device disturbed in most rounds is seen as
    busy, and not the fastest, which one lucky round would set. None without reference
    samples (nothing to screen by)."""
    if not reference:
        return None
    low = float(np.quantile(np.asarray(reference, dtype=float), 0.25))
    return tuple(max(0.0, r / low - 1.0) for r in reference)


def busy_shares(samples: TimeSamples, screened: "Screen | None") -> tuple[float, ...] | None:
    """Per round, the share of its wall time the disturbance could have taken (what bounds a
    busy measurement's interval, :func:`wait_bounds`): the host's CPU waits; on an RPC device
    ``d / (1 + d)`` where the reference kernel ran ``d`` over its lower quartile (a program
    is taken to have been slowed as much as the kernel beside it). None when not busy."""
    if screened is None or not screened.busy or samples.preempted is None:
        return None
    if screened.source == "device":
        return tuple(d / (1 + d) for d in samples.preempted)
    return tuple(samples.preempted)


def clean(samples: TimeSamples) -> tuple[TimeSamples, Screen | None]:
    """The samples without their disturbed rounds, and the screen (None where the
    samples carry no preemption figures: all kept). When the machine was too busy,
    all rounds come back and ``screen.busy`` says the evidence cannot be trusted."""
    if samples.preempted is None:
        return samples, None
    device = samples.screened_by == "device"
    result = screen(samples.preempted, DEVICE_LIMIT, "device") if device else screen(samples.preempted)
    if result.busy or not result.disturbed:
        return samples, result
    return samples.rounds(result.kept), result
