"""How a tuning run is shown: on a terminal a tqdm bar per kernel (``tuning dla34: 3/19
kernels fused_conv2d3_add_relu  12/40 [00:31<00:52]``); elsewhere (a log, a pipe) plain
lines, one after each batch, without ``\\r`` or escape codes. Also :class:`TunerChoice`,
which tuner and clock a run uses (the ``tvmperf_tuner`` fixture)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Sequence, TextIO

from pytest_tvmperf.builder.timer import wall_clock
from pytest_tvmperf.builder.tuning_budget import describe_seconds
from pytest_tvmperf.builder.tuning_run import Display, Kernel, KernelProgress, NoDisplay, Tuner


@dataclass(frozen=True)
class TunerChoice:
    """Which tuner and clock measure a tuning run (the ``tvmperf_tuner`` fixture)."""

    #: the tuner for a run's kernels; None: MetaSchedule (builder/tuning.py)
    make: Callable[[Sequence[Kernel]], Tuner] | None = None
    clock: Callable[[], float] = wall_clock


@dataclass(frozen=True)
class TuningIO:
    """What a test's tuning shows and measures with."""

    #: the display for a workload's run, given its name
    display: Callable[[str], Display] = field(default=lambda _workload: NoDisplay())
    tuner: TunerChoice = field(default_factory=TunerChoice)
    #: a budget too small ends the run (pytest.exit); False in an xdist worker: the test fails
    exits: bool = True


def kernel_line(workload: str, p: KernelProgress) -> str:
    """A kernel's progress as a plain line."""
    head = f"tuning {workload}: {p.index}/{p.count} kernels {p.name}:"
    if p.finished:
        return f"{head} done, {p.done}/{p.share} trials in {describe_seconds(p.elapsed_s)}"
    return f"{head} {p.done}/{p.share} trials, {describe_seconds(p.elapsed_s)}"


class PlainDisplay:
    """Plain lines: one per batch that leaves the kernel trials to go, one when it is done."""

    def __init__(self, workload: str, write: Callable[[str], None]) -> None:
        self.workload, self.write = workload, write

    def estimate(self, line: str) -> None:
        self.write(line)

    summary = estimate

    def kernel(self, progress: KernelProgress) -> None:
        if progress.finished or 0 < progress.done < progress.share:
            self.write(kernel_line(self.workload, progress))


class BarDisplay:
    """A tqdm bar per kernel, created when it starts (its clock and rate the kernel's)."""

    def __init__(
        self, workload: str, stream: Callable[[], TextIO], uncaptured: Callable[[], ContextManager[Any]]
    ) -> None:
        self.workload, self.stream, self.uncaptured = workload, stream, uncaptured
        self.bar: Any = None

    def estimate(self, line: str) -> None:
        _write(self.stream, self.uncaptured, f"\n{line}\n")

    def kernel(self, progress: KernelProgress) -> None:
        from tqdm import tqdm

        with self.uncaptured():
            if self.bar is None:
                self.bar = tqdm(
                    total=progress.share,
                    initial=progress.done,
                    unit="trial",
                    file=self.stream(),
                    dynamic_ncols=True,
                    desc=f"tuning {self.workload}: {progress.index}/{progress.count} kernels {progress.name}",
                )
            self.bar.total = progress.share
            self.bar.update(max(0, progress.done - self.bar.n))
            if progress.finished:
                self.bar.close()
                self.bar = None

    def summary(self, line: str) -> None:
        _write(self.stream, self.uncaptured, f"{line}\n")


def display_for(workload: str, stream: Callable[[], TextIO], uncaptured: Callable[[], ContextManager[Any]]) -> Display:
    """Bars where the ``stream()`` pytest's capture lets through is a terminal, else lines."""
    with uncaptured():
        out = stream()
        try:
            terminal = bool(out.isatty())
        except (AttributeError, ValueError):  # no such method, or a closed stream
            terminal = False
    if terminal:
        return BarDisplay(workload, stream, uncaptured)
    return PlainDisplay(workload, lambda line: _write(stream, uncaptured, f"{line}\n"))


def _write(stream: Callable[[], TextIO], uncaptured: Callable[[], ContextManager[Any]], text: str) -> None:
    with uncaptured():
        stream().write(text)
        stream().flush()
