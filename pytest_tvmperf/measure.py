"""The only module that reads clocks: compile stopwatch and the time samples.

A :class:`Timer` turns a compiled workload into :class:`TimeSamples`. The default,
:class:`TvmTimer`, uses TVM's ``time_evaluator`` (syncs the device, loops in C++).
Tests and users can swap it by overriding the ``tvmperf_timer`` fixture.
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Protocol, Sequence

import numpy as np


@dataclass(frozen=True)
class TimeSamples:
    """Raw seconds-per-call samples of one measurement."""

    samples: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("TimeSamples needs at least one sample")
        if any(not (s > 0 and s < float("inf")) for s in self.samples):
            raise ValueError(f"time samples must be positive and finite, got {self.samples}")

    @property
    def median(self) -> float:
        return float(statistics.median(self.samples))

    def stats(self) -> dict[str, float]:
        """Summary statistics from pytest-benchmark's ``Stats`` (min, median, iqr, ...)."""
        from pytest_benchmark.stats import Stats

        st = Stats()
        for s in self.samples:
            st.update(s)
        keep = ("min", "max", "mean", "median", "stddev", "iqr", "q1", "q3", "rounds", "outliers")
        return {k: v for k, v in st.as_dict().items() if k in keep}


class Timer(Protocol):
    def __call__(self, compiled: Any, args: Sequence[np.ndarray], out_specs: Sequence[Any]) -> TimeSamples: ...


@dataclass(frozen=True)
class TvmTimer:
    """``repeat`` samples, each at least ``min_repeat_ms`` long (TVM raises the loop
    count until it is), after one warm-up sample that is dropped."""

    repeat: int
    min_repeat_ms: int

    def __call__(self, compiled, args, out_specs) -> TimeSamples:
        compiled.time(args, out_specs, repeat=1, min_repeat_ms=self.min_repeat_ms)  # warm-up
        return TimeSamples(tuple(compiled.time(args, out_specs, repeat=self.repeat, min_repeat_ms=self.min_repeat_ms)))


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as elapsed: ...`` then ``elapsed[0]`` holds seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)
