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


@dataclass(frozen=True)
class TimeSamples:
    """Raw seconds-per-call samples of one measurement.

    ``reference`` holds the reference kernel's samples and ``baseline`` those of the
    baseline's own compiled artifact, taken in the same rounds and interleaved with
    the workload's (``samples[i]``, ``reference[i]`` and ``baseline[i]`` are neighbours
    in time): ``normalized`` and ``ab_ratios`` cancel what the process and the machine
    did to all of them.
    """

    samples: tuple[float, ...]
    reference: tuple[float, ...] | None = None
    reference_name: str | None = None
    baseline: tuple[float, ...] | None = None
    #: peer frameworks' samples, ``((name, samples), ...)``, taken in the same rounds
    peers: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: per round, the largest share of a sample's wall time that this process's threads
    #: spent waiting for a CPU (runnable, not running: preempted by other jobs); None
    #: where the kernel does not tell (see :func:`cpu_wait_s`)
    preempted: tuple[float, ...] | None = None
    #: what ``preempted`` measures: ``host``, this process's CPU wait; ``device``, on an RPC
    #: device, how far the reference kernel's round ran over its lower quartile (its CPU wait
    #: cannot be read from the host; see measure/disturbance.py)
    screened_by: str = "host"
    #: per round, the share of each a/b sample's wall time that the process's threads
    #: waited for a CPU: ``(workload's, baseline program's)``. The pair's samples are
    #: neighbours in time; measure/disturbance.py judges pairs under load by them
    ab_waits: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("TimeSamples needs at least one sample")
        if self.preempted is not None:
            if len(self.preempted) != len(self.samples):
                raise ValueError("preempted shares must pair one to one with the time samples")
            if any(not (0 <= p < float("inf")) for p in self.preempted):
                raise ValueError(f"preempted shares must be finite and >= 0, got {self.preempted}")
        if self.ab_waits is not None and (len(self.ab_waits) != len(self.samples) or self.baseline is None
                                          or any(len(w) != 2 or not all(0 <= x < float("inf") for x in w)
                                                 for w in self.ab_waits)):
            raise ValueError("a/b waits must be (workload, baseline) shares, finite and >= 0, one per a/b round")
        for name, values in (("time", self.samples), ("reference", self.reference), ("baseline", self.baseline),
                             *((f"peer {n}", v) for n, v in self.peers)):
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
        if self.reference is None:
            return None
        return tuple(s / r for s, r in zip(self.samples, self.reference))

    @property
    def ab_ratios(self) -> tuple[float, ...] | None:
        """Workload time over the neighbouring baseline-artifact time, per round."""
        if self.baseline is None:
            return None
        return tuple(s / b for s, b in zip(self.samples, self.baseline))

    def peer(self, name: str) -> tuple[float, ...] | None:
        return dict(self.peers).get(name)

    def peer_ratios(self, name: str) -> tuple[float, ...] | None:
        """TVM time over the neighbouring peer-framework time, per round."""
        peer = self.peer(name)
        return None if peer is None else tuple(s / p for s, p in zip(self.samples, peer))

    def __add__(self, other: "TimeSamples") -> "TimeSamples":
        """Pool two measurements of the same workload (a confirmation re-measure)."""
        paired = self.reference is not None and other.reference is not None and self.reference_name == other.reference_name
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
            self.ab_waits + other.ab_waits if both_ab and self.ab_waits is not None
            and other.ab_waits is not None else None,
        )

    def rounds(self, keep: Sequence[int]) -> "TimeSamples":
        """Only the rounds numbered in ``keep`` (every series cut alike, pairs kept)."""
        def cut(values):
            return None if values is None else tuple(values[i] for i in keep)
        return TimeSamples(cut(self.samples), cut(self.reference), self.reference_name, cut(self.baseline),
                           tuple((n, cut(v)) for n, v in self.peers), cut(self.preempted), self.screened_by,
                           cut(self.ab_waits))

    def stats(self) -> dict[str, float]:
        """Summary statistics from pytest-benchmark's ``Stats`` (min, median, iqr, ...)."""
        from pytest_benchmark.stats import Stats

        st = Stats()
        for s in self.samples:
            st.update(s)
        keep = ("min", "max", "mean", "median", "stddev", "iqr", "q1", "q3", "rounds", "outliers")
        return {k: v for k, v in st.as_dict().items() if k in keep}


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
