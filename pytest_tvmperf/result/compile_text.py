"""Pure text of ``compile_s`` (values/compile_times.py): in a failure, the summary and the reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.values.compile_times import fmt_seconds

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.judge.metric_verdict import MetricVerdict


def compile_lines(v: "MetricVerdict") -> list[str]:
    """``  compile_s 0.412 s -> 0.66 s (medians, built side by side); a/b ratio 1.60x (...), limit
    +25%, at most 1.25x`` and how it was measured, or why it was not (n/a, not gated)."""
    if v.status == Verdict.NA:
        return [f"  compile_s n/a: {v.note}"] if v.note else []
    d = v.decision
    if d is None:
        return [f"  compile_s not gated: {v.note}"] if v.note else []
    bound = f", at most {v.bound:.2f}x" if v.bound is not None and v.limit != "off" else ""
    return [
        f"  compile_s {fmt_seconds(v.baseline)} -> {fmt_seconds(v.current)} (medians, built side by side); "
        f"a/b ratio {d.ratio:.2f}x ({d.confidence * 100:.3g}% CI {d.low:.2f}-{d.high:.2f}x), "
        f"limit {v.limit}{bound}",
        f"    compared: the baseline's stored IR and today's lowered IR, code generation (no pipeline), {v.note}",
    ]


def compile_cell(status: str, current: float | None, baseline: float | None, note: str, limit: str) -> str:
    """The reports' word on ``compile_s``: ``0.41 s -> 0.66 s (1.60x, ...): regressed``, ``n/a: why``."""
    if status == Verdict.NA:
        return f"n/a: {note}" if note else "n/a"
    if current is None or baseline is None:
        return "same program, not compiled twice" if "not compiled twice" in note else f"not gated: {note}"
    shown = "not gated" if status == Verdict.NOT_GATED else status
    return (
        f"{fmt_seconds(baseline)} -> {fmt_seconds(current)} ({current / baseline:.2f}x of the medians side by side, "
        f"limit {limit}): {shown}"
    )


def compile_properties(v: "MetricVerdict | None") -> list[tuple[str, object]]:
    """compile_s on a JUnit test case: the medians and their ratio, or ``n/a: why`` (never 0)."""
    if v is None:
        return []
    if v.current is None or v.baseline is None:
        return [("tvmperf_compile_s", f"{'n/a' if v.status == Verdict.NA else 'not gated'}: {v.note}")]
    ratio = [("tvmperf_compile_ratio", v.decision.ratio)] if v.decision is not None else []
    return [("tvmperf_compile_s", v.current), ("tvmperf_baseline_compile_s", v.baseline), *ratio]


def stored_compile_cell(before: float | None, after: float | None) -> str:
    """``tvmperf diff``: both records' stored build times (each of its own run: shown, not gated)."""
    if before is None and after is None:
        return ""
    return f"stored {fmt_seconds(before)} -> {fmt_seconds(after)} (each from its own run: shown, not gated)"
