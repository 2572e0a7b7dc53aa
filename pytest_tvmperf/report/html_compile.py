"""The HTML report's compile_s section: each test's build times side by side and its verdict."""

from __future__ import annotations

from typing import Sequence

from pytest_tvmperf.report.html_parts import esc, pill, scroll_table, test_label
from pytest_tvmperf.result.compile_text import compile_cell
from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.values.compile_times import fmt_seconds
from pytest_tvmperf.values.resources import COMPILE_S


def compile_section(tests: Sequence[ResultEntry]) -> str:
    """One row per test with a compile_s verdict; "" when none has one."""
    rows = []
    for t in tests:
        cell = next((m for m in t.metrics if m.metric == COMPILE_S), None)
        if cell is None:
            continue
        both = cell.current is not None and cell.baseline is not None and cell.baseline > 0
        ratio = f"{cell.current / cell.baseline:.2f}x" if both else "-"
        rows.append(
            f'<tr><td class="test">{esc(test_label(t))}</td>'
            f'<td class="num">{esc(fmt_seconds(cell.baseline))}</td>'
            f'<td class="num">{esc(fmt_seconds(cell.current))}</td>'
            f'<td class="num">{esc(ratio)}</td><td class="short">{esc(cell.limit or "-")}</td>'
            f"<td>{pill(cell.status)} "
            f'<span class="note">{esc(compile_cell(cell.status, cell.current, cell.baseline, cell.note, cell.limit))}'
            "</span></td></tr>"
        )
    if not rows:
        return ""
    table = scroll_table(("test", "baseline build", "today's build", "ratio of medians", "limit", "verdict"), rows)
    return (
        "<section><h2>Compile time side by side (compile_s)</h2>"
        "<p>The baseline's stored IR and today's lowered IR built in turn in one process (code generation, "
        f"no pipeline); an unchanged program is not built twice.</p>{table}</section>"
    )
