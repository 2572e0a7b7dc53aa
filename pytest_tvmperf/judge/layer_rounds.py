"""Pure: one side's per-layer times, its whole run and its time outside every call, all
from the same runs.

Each round is one instrumented run: the instrument times each call (a window from just
before the call to just after it) and the run's own wall time. The instrument's own
time per call is measured apart, in the same round, and removed:

* inside a window: the window of a call that does next to nothing (the cheapest VM
  builtin; an empty torch module with the same hooks);
* outside it: the smallest gap between two calls of the VM (its dispatch of one
  instruction is next to nothing beside the instrument's); for torch, an empty module's
  call with the hooks less one without them, less the part inside the window.

Each call's time is its window less the instrument's part inside it; the whole run is
the run's wall time less the instrument's time over every call it saw; the time outside
every call is that whole run less the calls, in that same run. Within each round the
parts add up to its whole run, whatever the load did to it. Over the rounds, each part
is its median: a round the load stretched stretches one part, which its median leaves
out, where the median whole run would keep it when other rounds were stretched in other
parts. The whole run shown is the sum of the parts' medians; the time outside is shown
with its noise: how far it typically strays between rounds, and how far the
instrument's removed time does.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Round:
    """One instrumented run of one side."""

    #: the run's wall time, instrument included
    wall_s: float
    #: each timed call's window, in execution order
    calls_s: tuple[float, ...]
    #: how many calls the instrument saw in the run (timed or not): each paid its own time
    hooks: int
    #: the instrument's own time inside one call's window
    inside_s: float = 0.0
    #: the instrument's own time per call outside the windows
    between_s: float = 0.0


@dataclass(frozen=True)
class Apportioned:
    """Over the rounds: each call's median time, the instrument's time removed; the
    median time outside every call and its noise; the whole run, their sum."""

    calls_s: tuple[float, ...]
    total_s: float
    outside_s: float
    outside_noise_s: float
    #: the instrument's own time per call that was removed (median over the rounds)
    overhead_s: float


def _spread(values: Sequence[float]) -> float:
    """How far the values stray from their median, typically (the median distance: a
    round the load stretched moves it little)."""
    middle = statistics.median(values)
    return float(statistics.median(abs(v - middle) for v in values))


def apportion(rounds: Sequence[Round]) -> Apportioned:
    """Each call's time, the whole run and the time outside every call, from ``rounds``
    (at least one, each with the same number of calls)."""
    if not rounds:
        raise ValueError("no rounds to apportion")
    if len({len(r.calls_s) for r in rounds}) != 1:
        raise ValueError("the rounds timed a different number of calls")
    outsides, calls, removed = [], [], []
    for r in rounds:
        timed = [max(0.0, c - r.inside_s) for c in r.calls_s]
        whole = r.wall_s - r.hooks * (r.inside_s + r.between_s)
        outsides.append(whole - sum(timed))
        calls.append(timed)
        removed.append(r.hooks * (r.inside_s + r.between_s))
    call_s = tuple(float(statistics.median(c[i] for c in calls)) for i in range(len(rounds[0].calls_s)))
    outside = float(statistics.median(outsides))
    noise = _spread(outsides) + _spread(removed)
    overhead = statistics.median(r.inside_s + r.between_s for r in rounds)
    return Apportioned(call_s, sum(call_s) + outside, outside, float(noise), float(overhead))
