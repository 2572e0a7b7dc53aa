"""``compile_s`` side by side (pure): the build times of the baseline's stored IR and of
today's lowered IR, built in turn in one process, or why they were not. The baseline's own
program under the TVM that recorded it builds the same code, so it is not built twice nor
gated (:attr:`CompileTimes.same`)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: builds of each side by default, interleaved (baseline, today, today, baseline, ...): an even
#: number, so each side goes first in half the pairs (measured beside 2 CPU-bound jobs, the
#: second build of a pair ran up to 1.18x the first: benchmarks/compile_noise.py, docs/gate.md)
DEFAULT_BUILDS = 4
#: the verdict's note of an unchanged program
SAME_PROGRAM_COMPILE = "same program as the baseline (and the same TVM): not compiled twice, compile_s not gated"


@dataclass(frozen=True)
class CompileTimes:
    """One test's build times side by side: ``baseline_s[i]`` and ``current_s[i]`` were
    built one right after the other (their ratio is one paired sample); ``same``: the
    baseline's own program, not built again; ``skipped``: why nothing was built ("" when
    it was), shown as n/a."""

    baseline_s: tuple[float, ...] = ()
    current_s: tuple[float, ...] = ()
    same: bool = False
    skipped: str = ""
    #: builds added because the first ones straddled the limit (judge/compile_verdict.py
    #: :func:`build_until_decided`): the later looks taken, and why they stopped ("" when none)
    looks: int = 0
    stopped: str = ""

    def __post_init__(self) -> None:
        if len(self.baseline_s) != len(self.current_s):
            raise ValueError("compile times come in pairs: one baseline build beside each of today's")
        if any(not s > 0 for s in (*self.baseline_s, *self.current_s)):
            raise ValueError("a build time is a positive number of seconds")

    def __add__(self, more: "CompileTimes") -> "CompileTimes":
        """These builds and ``more``'s, paired as they were built."""
        return CompileTimes(self.baseline_s + more.baseline_s, self.current_s + more.current_s, looks=self.looks)

    @property
    def measured(self) -> bool:
        return bool(self.current_s)

    @property
    def ratios(self) -> tuple[float, ...]:
        """Today over the baseline, pair by pair."""
        return tuple(c / b for c, b in zip(self.current_s, self.baseline_s))

    @property
    def baseline_median(self) -> float | None:
        return statistics.median(self.baseline_s) if self.baseline_s else None

    @property
    def current_median(self) -> float | None:
        return statistics.median(self.current_s) if self.current_s else None


def fmt_seconds(value: float | None) -> str:
    """``0.412 s``, ``12.3 s``; ``n/a`` for None."""
    return "n/a" if value is None else f"{value:.3g} s"


def side_by_side_line(baseline_s: float | None, tvm_before: str, current_s: float | None, tvm_now: str) -> str:
    """``--tvmperf-against-tvm``: each version's build time, as each built it in its own
    process (shown, not gated: the two processes ran apart)."""
    return (
        f"compile time: TVM {tvm_now} {fmt_seconds(current_s)}, TVM {tvm_before} {fmt_seconds(baseline_s)} "
        f"(each version's whole build, pipeline included, in its own process; shown, not gated)"
    )
