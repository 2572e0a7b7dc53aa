"""Pure: which measurements a test takes, by its mode (a choice of measurements; the
record, compare, decide and report sequence is check/pipeline.py's, one for every mode):

- ``timed`` (the default): correctness, executed calls, exact metrics, time (a/b, peers);
- ``untimed`` (``--tvmperf-timing=off``, marker ``timing=False``): the same without time;
- ``built only`` (a target not run here: ``cuda`` without a GPU): the build's exact metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from pytest_tvmperf.values.resources import ALLOC_BYTES, PEAK_NAMES, RESOURCE_NAMES
from pytest_tvmperf.config.parsing import EXACT_METRICS, KERNEL_METRIC_NAMES
from pytest_tvmperf.values.exact_metrics import ExactMetrics

#: the summary note of every untimed test (one summary line counts them)
UNTIMED_NOTE = "timing off: correctness and exact metrics only, time not measured (--tvmperf-timing=off)"


class Mode(str, Enum):
    TIMED = "timed"
    UNTIMED = "untimed"
    BUILT_ONLY = "built only"


@dataclass(frozen=True)
class Plan:
    mode: Mode
    #: why a built-only target does not run here ("no GPU on this machine"); "" otherwise
    why: str = ""

    @property
    def time(self) -> bool:
        return self.mode == Mode.TIMED

    @property
    def runs(self) -> bool:
        """The program runs here: its output is checked and its executed calls counted."""
        return self.mode != Mode.BUILT_ONLY

    def outcome_note(self, exact: ExactMetrics, gated: int | None) -> str:
        """The summary row's note: ``gated`` exact metrics compared (None: recorded)."""
        if self.mode == Mode.UNTIMED:
            return UNTIMED_NOTE
        if self.mode == Mode.BUILT_ONLY:
            done = f"recorded {measured_count(exact)}" if gated is None else f"gated {gated}"
            return f"{self.why}: built and {done} exact metrics, not run"
        return ""

    def message_note(self, outcome_note: str) -> str:
        """The failure message's note on what this mode left out."""
        if self.mode == Mode.UNTIMED:
            return "timing off: time was not measured"
        if self.mode == Mode.BUILT_ONLY:
            return f"{outcome_note} (correctness and time not checked)"
        return ""


def plan_for(runnable: bool, not_run: str | None, timing: bool) -> Plan:
    if not runnable:
        return Plan(Mode.BUILT_ONLY, not_run or "not run")
    return Plan(Mode.TIMED if timing else Mode.UNTIMED)


def with_baseline_calls(exact: ExactMetrics, baseline) -> ExactMetrics:
    """Executed calls and allocations are measured only where the program runs: when all else
    matches, the baseline's stand, so a GPU machine and a CPU-only one share one entry."""
    if baseline is not None and _without_run(replace(baseline.exact, calls=None)) == _without_run(exact):
        return baseline.exact
    return exact


def _without_run(exact: ExactMetrics) -> ExactMetrics:
    """``exact`` less what only a run measures: its alloc_bytes and peaks, measured or n/a."""
    drop = lambda f: {k: v for k, v in getattr(exact, f).items() if k not in (ALLOC_BYTES, *PEAK_NAMES)}  # noqa: E731
    return replace(exact, **{f: drop(f) for f in ("resources", "resource_parts", "not_measured")})


def measured_count(exact: ExactMetrics) -> int:
    return sum(
        exact.scalar(m) is not None for m in (*EXACT_METRICS, *KERNEL_METRIC_NAMES, *RESOURCE_NAMES) if m != "calls"
    )


def summary_line(target: str, why: str, verb: str = "gated") -> str:
    return (
        f"target {target}: {why} on this machine: built and {verb} the exact metrics only "
        f"(VM instructions, kernels, planned bytes, GPU registers/shared/local/spill bytes and PTX "
        f"instructions per kernel); correctness, executed calls and time were not checked"
    )
