"""``compile_s`` measured side by side (values/compile_times.py): the baseline's stored IR
and today's lowered IR each built (code generation, no pipeline) in turn, on the clock of
a :class:`CompileTimer` (the ``tvmperf_compile_timer`` fixture: tests inject a fake one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pytest_tvmperf.builder.timer import wall_clock
from pytest_tvmperf.values.compile_times import DEFAULT_BUILDS, CompileTimes


@dataclass
class CompileTimer:
    """``time(side, build)``: ``build()``'s seconds on ``clock``; ``builds``: the sides (baseline, current) in order."""

    clock: Callable[[], float] = wall_clock  # builder/timer.py: the plugin's one clock reader
    builds: list[str] = field(default_factory=list)

    def time(self, side: str, build: Callable[[], None]) -> float:
        start = self.clock()
        build()
        self.builds.append(side)
        return self.clock() - start


def side_by_side(
    build_baseline: Callable[[], None],
    build_current: Callable[[], None],
    timer: CompileTimer,
    builds: int = DEFAULT_BUILDS,
) -> CompileTimes:
    """``builds`` pairs in alternating order, so neither side always pays for a cold cache."""
    base: list[float] = []
    now: list[float] = []
    for i in range(builds):
        order = (("baseline", build_baseline, base), ("current", build_current, now))
        for side, build, into in order if i % 2 == 0 else order[::-1]:
            into.append(max(timer.time(side, build), 1e-9))
    return CompileTimes(tuple(base), tuple(now))
