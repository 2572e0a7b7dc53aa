"""The only module that reads clocks: compile stopwatch and the time samples.

A :class:`Timer` turns a :class:`TimingTask` (sample functions built on TVM's
``time_evaluator``, which syncs the device and loops in C++) into :class:`TimeSamples`.
Tests and users can swap it by overriding the ``tvmperf_timer`` fixture.
"""

from __future__ import annotations

import os
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from pytest_tvmperf.values.samples import TimeSamples


SampleFn = Callable[[], float]


@dataclass(frozen=True)
class TimingTask:
    """What to time: each function returns one sample, seconds per call, of the
    workload, the reference kernel, or the baseline's compiled artifact."""

    workload: SampleFn
    reference: SampleFn | None = None
    reference_name: str | None = None
    baseline: SampleFn | None = None
    #: peer frameworks computing the same thing, by name
    peers: Mapping[str, SampleFn] = field(default_factory=dict)

    def reloaded(self) -> "TimingTask":
        """The same task with the compiled programs loaded afresh where they can be (a
        ``reloaded()`` sampler: new memory placements), for a confirming re-measure."""
        def fresh(fn: SampleFn | None) -> SampleFn | None:
            return fn.reloaded() if fn is not None and hasattr(fn, "reloaded") else fn
        return replace(self, workload=fresh(self.workload), baseline=fresh(self.baseline))


class Timer(Protocol):
    def __call__(self, task: TimingTask, rounds: int) -> TimeSamples: ...


_SCHEDSTAT = "/proc/self/task"


def cpu_wait_s() -> float | None:
    """Seconds this process's threads have spent runnable but waiting for a CPU, summed
    over its threads (Linux ``/proc/self/task/*/schedstat``, second field); None where
    the kernel does not report it. Its growth over a sample is time the sample lost
    to other jobs: a thread of a parallel kernel that waits stalls the kernel at its
    barrier, so the sum over threads is the right measure for those too."""
    total = 0
    try:
        tids = os.listdir(_SCHEDSTAT)
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"{_SCHEDSTAT}/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def probed(fn: SampleFn, wait: Callable[[], float | None] = cpu_wait_s) -> tuple[float, float | None]:
    """One sample of ``fn`` and the share of its wall time the process's threads
    waited for a CPU (None where unknown)."""
    before, start = wait(), time.perf_counter()
    value = fn()
    elapsed, after = time.perf_counter() - start, wait()
    if before is None or after is None or elapsed <= 0:
        return value, None
    return value, max(0.0, after - before) / elapsed


@dataclass(frozen=True)
class TvmTimer:
    """``rounds`` rounds, each timing the workload, the reference and the baseline
    artifact once, in an order that rotates every round (so a steady drift touches
    all of them alike), after one dropped warm-up round. Each sample is probed for the
    time the process's threads waited for a CPU (``wait``: seconds so far); a round's
    ``preempted`` share is its worst sample's."""

    wait: Callable[[], float | None] = cpu_wait_s

    def __call__(self, task: TimingTask, rounds: int) -> TimeSamples:
        kernels = {"workload": task.workload}
        if task.reference is not None:
            kernels["reference"] = task.reference
        if task.baseline is not None:
            kernels["baseline"] = task.baseline
        for peer, fn in sorted(task.peers.items()):
            kernels[f"peer:{peer}"] = fn
        names = list(kernels)
        # the a/b pair is timed back to back (its order alternating), so what the machine
        # does to one side it does to the other; the other kernels rotate around it
        units: list[tuple[str, ...]] = [("workload", "baseline") if "baseline" in kernels else ("workload",)]
        units += [(name,) for name in names if name not in ("workload", "baseline")]
        got: dict[str, list[float]] = {name: [] for name in names}
        preempted: list[float | None] = []
        pair_waits: list[tuple[float, float] | None] = []
        for fn in kernels.values():  # warm-up
            fn()
        for i in range(rounds):
            turn = units[i % len(units):] + units[: i % len(units)]
            if (i // len(units)) % 2:
                turn.reverse()
            order = [name for unit in turn for name in (unit[::-1] if i % 2 else unit)]
            worst: float | None = 0.0
            waits: dict[str, float | None] = {}
            for name in order:
                value, waited = probed(kernels[name], self.wait)
                got[name].append(value)
                waits[name] = waited
                worst = None if waited is None or worst is None else max(worst, waited)
            preempted.append(worst)
            pair = (waits.get("workload"), waits.get("baseline"))
            pair_waits.append(None if None in pair else pair)  # type: ignore[arg-type]
        return TimeSamples(
            tuple(got["workload"]),
            tuple(got["reference"]) if "reference" in got else None,
            task.reference_name if "reference" in got else None,
            tuple(got["baseline"]) if "baseline" in got else None,
            tuple((peer, tuple(got[f"peer:{peer}"])) for peer in sorted(task.peers)),
            None if None in preempted else tuple(preempted),
            ab_waits=None if "baseline" not in got or None in pair_waits else tuple(pair_waits),  # type: ignore[arg-type]
        )


def python_sampler(fn: Callable[..., Any], args: Sequence[Any], min_repeat_ms: int) -> SampleFn:
    """Samples of a Python callable (a peer framework), like ``time_evaluator``'s: each
    sample calls ``fn(*args)`` in a loop of at least ``min_repeat_ms`` and returns
    seconds per call."""
    budget = min_repeat_ms / 1000.0

    def sample() -> float:
        calls, start = 0, time.perf_counter()
        while True:
            fn(*args)
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= budget:
                return elapsed / calls

    return sample


def kernel_times(compiled: Any, args: Any, runs: int = 5) -> dict[str, float] | None:
    """Median seconds per run spent in each VM callee (diagnosis only, not gated)."""
    per_run = compiled.call_times(args, runs, time.perf_counter)
    if not per_run:
        return None
    names = sorted({name for run in per_run for name in run})
    return {name: float(statistics.median(run.get(name, 0.0) for run in per_run)) for name in names}


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as elapsed: ...`` then ``elapsed[0]`` holds seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)
