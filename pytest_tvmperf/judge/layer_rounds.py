"""Pure: one side's per-layer times, its whole run and its time outside every call, all
from the same runs.

Each round is one instrumented run, cut into the calls' times (each a window from just
before the call to just after it) and pieces of the time outside them (an untimed call,
the time between two calls, before the first and after the last), which add up to the
run. The instrument's own time is measured in that same run and removed:

* the VM's: each call crosses into Python twice (before and after it), each crossing paid
  half inside a window and half outside it (entering the callback before the clock is
  read, returning after). A gap between two calls is thus the instrument's own time (the
  VM's dispatch between two calls is next to nothing beside a crossing), and its time
  inside a window the mean of the gaps on either side of it (the same call's crossings,
  capped at the window). The time outside kernels is then the VM builtins' calls, timed
  like the kernels, and the run's ends;
* torch's: an empty module called with the hooks and without them, in each round; its
  window is the hooks' time inside a window, the rest of the difference outside it. The
  time between two layers is torch's own work (functional ops, Python), outside.

Over the rounds, each call and each piece is its median (a round the load stretched
stretches one part, which its median leaves out); the whole run is the sum of the
medians, so the rows add up to it. The time outside is shown with its noise: how far the
rounds' own time outside strays from its median, and how far that median is from the
sum of the pieces' medians.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence


Span = tuple[float, float]


@dataclass(frozen=True)
class Round:
    """One instrumented run of one side, the instrument's own time removed: each timed call's
    time and each piece of the time outside them, in order (see the module docstring)."""

    calls_s: tuple[float, ...]
    outside_s: tuple[float, ...]

    @property
    def whole_s(self) -> float:
        return sum(self.calls_s) + sum(self.outside_s)

    @classmethod
    def of_vm(cls, start: float, end: float, spans: Sequence[Span], timed: Sequence[bool]) -> Round:
        """A VM run from ``start`` to ``end``: each call's (start, end) on the same clock, in
        order, and whether it is timed (a kernel) or not (a builtin: outside)."""
        gaps = [max(0.0, b[0] - a[1]) for a, b in zip(spans, spans[1:])]
        calls, outside = [], [spans[0][0] - start] if spans else [end - start]
        for j, (a, b) in enumerate(spans):
            near = [gaps[i] for i in (j - 1, j) if 0 <= i < len(gaps)]
            own = b - a - (min(b - a, sum(near) / len(near)) if near else 0.0)
            (calls if timed[j] else outside).append(own)
        if spans:
            outside.append(end - spans[-1][1])
        return cls(tuple(calls), tuple(outside))

    @classmethod
    def of_hooks(
        cls, start: float, end: float, spans: Sequence[Span], inside_s: float = 0.0, between_s: float = 0.0
    ) -> Round:
        """A run from ``start`` to ``end`` whose timed calls ran at ``spans`` (in order, none
        inside another), each paying the hooks' ``inside_s`` in its window and ``between_s``
        outside it; the time between calls is outside, a piece per gap."""
        calls = tuple(b - a - inside_s for a, b in spans)
        if not spans:
            return cls((), (end - start,))
        gaps = [b[0] - a[1] - between_s for a, b in zip(spans, spans[1:])]
        return cls(calls, (spans[0][0] - start - between_s / 2, *gaps, end - spans[-1][1] - between_s / 2))


@dataclass(frozen=True)
class Apportioned:
    """Over the rounds: each call's median time, the whole run, the time outside every call
    (the outside pieces' medians summed) and its noise."""

    calls_s: tuple[float, ...]
    total_s: float
    outside_s: float
    outside_noise_s: float


def spread(values: Sequence[float]) -> float:
    """How far the values stray from their median, typically (the median distance: a
    round the load stretched moves it little)."""
    middle = statistics.median(values)
    return float(statistics.median(abs(v - middle) for v in values))


def _medians(rows: Sequence[Sequence[float]]) -> tuple[float, ...]:
    return tuple(float(statistics.median(r[i] for r in rows)) for i in range(len(rows[0])))


def apportion(rounds: Sequence[Round]) -> Apportioned:
    """Each call's time, the whole run and the time outside every call, from ``rounds``
    (at least one, each with the same calls and outside pieces)."""
    if not rounds:
        raise ValueError("no rounds to apportion")
    if len({(len(r.calls_s), len(r.outside_s)) for r in rounds}) != 1:
        raise ValueError("the rounds timed a different number of calls")
    call_s = _medians([r.calls_s for r in rounds])
    outside = sum(_medians([r.outside_s for r in rounds]))
    per_round = [sum(r.outside_s) for r in rounds]
    noise = spread(per_round) + abs(statistics.median(per_round) - outside)
    return Apportioned(call_s, sum(call_s) + outside, outside, noise)
