"""The only module that reads clocks: compile stopwatch, the time samples, the tuning clock.

A :class:`Timer` turns a :class:`TimingTask` (sample functions built on TVM's
``time_evaluator``) into :class:`TimeSamples`; the ``tvmperf_timer`` fixture swaps it.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from pytest_tvmperf.values.samples import TimeSamples


SampleFn = Callable[[], float]


@dataclass(frozen=True)
class TimingTask:
    """What to time: each function returns one sample, seconds per call."""

    workload: SampleFn
    reference: SampleFn | None = None
    reference_name: str | None = None
    baseline: SampleFn | None = None
    #: peer frameworks computing the same thing, by name
    peers: Mapping[str, SampleFn] = field(default_factory=dict)

    def reloaded(self) -> "TimingTask":
        """The same task with the compiled programs loaded afresh (new memory placements)."""
        sides = {side: getattr(self, side) for side in ("workload", "baseline")}
        return replace(self, **{side: fn.reloaded() for side, fn in sides.items() if hasattr(fn, "reloaded")})


class Timer(Protocol):
    def __call__(self, task: TimingTask, rounds: int) -> TimeSamples: ...


_SCHEDSTAT = "/proc/self/task"


#: a thread counts as one of a sample's own threads when it ran on a CPU for at least this
#: share of the sample's wall time (a worker of a parallel kernel does, even at a few busy
#: jobs per core; another side's pool, asleep or only woken meanwhile, does not)
ACTIVE_SHARE = 0.10

#: per thread id: (nanoseconds on a CPU, nanoseconds runnable but waiting for one)
ThreadTimes = Mapping[int, tuple[int, int]]


def thread_times() -> ThreadTimes | None:
    """Each thread's time on a CPU and waiting for one so far (Linux schedstat), else None."""
    try:
        tids = os.listdir(_SCHEDSTAT)
    except OSError:
        return None
    out: dict[int, tuple[int, int]] = {}
    for tid in tids:
        try:
            with open(f"{_SCHEDSTAT}/{tid}/schedstat", "rb") as f:
                fields = f.read().split()
            out[int(tid)] = (int(fields[0]), int(fields[1]))
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return out


@dataclass(frozen=True)
class Waited:
    """What the machine took from one sample: ``own``, the largest share of its wall time
    that any of its own threads (the caller's, and each that ran for :data:`ACTIVE_SHARE`
    of it) waited for a CPU; a parallel kernel waits at its barrier for its slowest
    thread, so the most, not the sum, is what one side lost."""

    own: float


def waited(
    before: ThreadTimes, after: ThreadTimes, elapsed_s: float, caller: int, caller_cpu_s: float | None = None
) -> Waited:
    """The :class:`Waited` of one sample from the thread times around it (pure). A wait is
    credited when the thread gets a CPU back, so one that began before the sample can be
    counted in it: each is bounded by the wall time less the thread's time on a CPU
    (``caller_cpu_s``, from the caller's CPU clock: schedstat's lags up to a tick)."""
    own = 0.0
    span = elapsed_s * 1e9
    for tid, (cpu, wait) in after.items():
        cpu0, wait0 = before.get(tid, (0, 0))
        ran, waits = max(0, cpu - cpu0), max(0, wait - wait0)
        if tid == caller and caller_cpu_s is not None:
            ran = int(caller_cpu_s * 1e9)
        if tid == caller or ran >= ACTIVE_SHARE * span:
            own = max(own, min(waits, max(0.0, span - ran)) / span)
    return Waited(own)


def probed(
    fn: SampleFn,
    times: Callable[[], ThreadTimes | None] = thread_times,
    cpu_clock: Callable[[], float] = time.thread_time,
) -> tuple[float, Waited | None]:
    """One sample of ``fn`` and what the machine took from it (None where unknown)."""
    caller = threading.get_native_id()
    before, cpu, start = times(), cpu_clock(), time.perf_counter()
    value = fn()
    elapsed, cpu, after = time.perf_counter() - start, cpu_clock() - cpu, times()
    if before is None or after is None or elapsed <= 0:
        return value, None
    return value, waited(before, after, elapsed, caller, cpu)


@dataclass(frozen=True)
class TvmTimer:
    """``rounds`` rounds, each timing the workload, the reference and the baseline once,
    in an order that rotates every round (a steady drift touches all alike), after one
    dropped warm-up round. Each sample is probed for the time its threads waited for a
    CPU: each series keeps its waits (``TimeSamples.waits``), and a round's
    ``preempted`` share is its most waited sample's."""

    times: Callable[[], ThreadTimes | None] = thread_times
    #: the calling thread's CPU time so far
    cpu_clock: Callable[[], float] = time.thread_time

    def __call__(self, task: TimingTask, rounds: int) -> TimeSamples:
        sides = {"reference": task.reference, "baseline": task.baseline}
        kernels = {"workload": task.workload, **{name: fn for name, fn in sides.items() if fn is not None}}
        kernels.update((f"peer:{peer}", fn) for peer, fn in sorted(task.peers.items()))
        names = list(kernels)
        # the a/b pair is timed back to back (its order alternating), so what the machine
        # does to one side it does to the other; the other kernels rotate around it
        units: list[tuple[str, ...]] = [("workload", "baseline") if "baseline" in kernels else ("workload",)]
        units += [(name,) for name in names if name not in ("workload", "baseline")]
        got: dict[str, list[float]] = {name: [] for name in names}
        preempted: list[float | None] = []
        own: dict[str, list[float]] = {name: [] for name in names}
        told = True
        for fn in kernels.values():  # warm-up
            fn()
        for i in range(rounds):
            turn = units[i % len(units) :] + units[: i % len(units)]
            if (i // len(units)) % 2:
                turn.reverse()
            order = [name for unit in turn for name in (unit[::-1] if i % 2 else unit)]
            worst: float | None = 0.0
            for name in order:
                value, took = probed(kernels[name], self.times, self.cpu_clock)
                got[name].append(value)
                if took is None:
                    told, worst = False, None
                    continue
                own[name].append(took.own)
                worst = None if worst is None else max(worst, took.own)
            preempted.append(worst)
        return TimeSamples(
            tuple(got["workload"]),
            tuple(got["reference"]) if "reference" in got else None,
            task.reference_name if "reference" in got else None,
            tuple(got["baseline"]) if "baseline" in got else None,
            tuple((peer, tuple(got[f"peer:{peer}"])) for peer in sorted(task.peers)),
            None if None in preempted else tuple(preempted),
            waits=tuple(("time" if name == "workload" else name, tuple(own[name])) for name in names) if told else (),
        )


def python_sampler(fn: Callable[..., Any], args: Sequence[Any], min_repeat_ms: int) -> SampleFn:
    """Samples of a peer's Python callable like ``time_evaluator``'s: seconds per call over ``min_repeat_ms``."""
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


def wall_clock() -> float:
    """Seconds on a monotonic wall clock: the tuning run's (tuning_run.py; tests inject their own)."""
    return time.monotonic()
