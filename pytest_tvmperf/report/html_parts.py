"""The HTML report's style and the small parts its sections share (pure)."""

from __future__ import annotations

import html
import math
import re
from typing import Any, Sequence

from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.judge.verdict import Verdict

# verdict -> (solid colour for dots, bars and pills, text colour on it)
VERDICT_COLOURS: dict[str, tuple[str, str]] = {
    Verdict.REGRESSED: ("#d62728", "#ffffff"),
    Verdict.INCONCLUSIVE: ("#e69f00", "#1f1600"),
    Verdict.IMPROVED: ("#2ca02c", "#ffffff"),
    Verdict.PASS: ("#8d949e", "#ffffff"),
}
NEUTRAL = ("#c9d1dc", "#2b3340")
NEUTRAL_MARK = "#60738c"  # dots and bars of the other verdicts in plots
VERDICT_ORDER = (Verdict.REGRESSED, Verdict.INCONCLUSIVE, Verdict.IMPROVED, Verdict.PASS)

BASELINE_BAR = "#b8c0cc"
INK = "#1f2933"
MUTED = "#66707c"
GRID = "#e4e8ee"

FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'

CSS = f"""
:root {{ color-scheme: light; }}
* {{ box-sizing: border-box; }}
body {{ margin: 0; background: #f4f6f9; color: {INK}; font: 14px/1.45 {FONT}; }}
main {{ max-width: 1200px; margin: 0 auto; padding: 28px 28px 48px; }}
header h1 {{ margin: 0 0 2px; font-size: 24px; font-weight: 650; letter-spacing: -0.01em; }}
header .created {{ color: {MUTED}; margin: 0 0 14px; }}
.counts {{ display: flex; flex-wrap: wrap; gap: 8px; margin: 0; padding: 0; list-style: none; }}
.counts li {{ display: flex; align-items: baseline; gap: 6px; padding: 6px 12px; border-radius: 999px;
  font-weight: 600; }}
.counts li b {{ font-size: 18px; }}
section {{ background: #fff; border: 1px solid #e1e6ed; border-radius: 10px; padding: 18px 20px 16px;
  margin-top: 20px; box-shadow: 0 1px 2px rgba(20, 30, 50, 0.04); }}
section h2 {{ margin: 0 0 4px; font-size: 17px; font-weight: 650; }}
section p.hint {{ margin: 0 0 10px; color: {MUTED}; font-size: 13px; }}
svg.tvmperf-plot {{ display: block; width: 100%; height: auto; font-family: {FONT}; }}
.grid {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 14px; }}
.card {{ border: 1px solid #e6eaf0; border-radius: 8px; padding: 10px 12px 8px; min-width: 0; }}
.card h3 {{ margin: 0 0 2px; font-size: 13px; font-weight: 600; overflow-wrap: anywhere; }}
.card .sub {{ color: {MUTED}; font-size: 12px; margin-bottom: 4px; }}
.kernels .card {{ margin-bottom: 12px; }}
table {{ border-collapse: collapse; width: 100%; font-size: 13px; }}
th {{ text-align: left; font-weight: 600; color: {MUTED}; border-bottom: 2px solid #e1e6ed; padding: 7px 8px;
  vertical-align: bottom; }}
td {{ border-bottom: 1px solid #edf0f4; padding: 7px 8px; vertical-align: top; }}
tbody tr:nth-child(even) td {{ background: #fafbfc; }}
td.num {{ font-variant-numeric: tabular-nums; white-space: nowrap; }}
td.test {{ font-family: ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12px;
  overflow-wrap: anywhere; min-width: 240px; }}
td .mode {{ display: block; color: {MUTED}; font-size: 12px; white-space: normal; }}
.scroll {{ overflow-x: auto; }}
td.test .note {{ display: block; font-family: {FONT}; color: {MUTED}; font-size: 12px; }}
td.short {{ white-space: nowrap; }}
.worse {{ color: {VERDICT_COLOURS[Verdict.REGRESSED][0]}; font-weight: 600; }}
.better {{ color: {VERDICT_COLOURS[Verdict.IMPROVED][0]}; font-weight: 600; }}
.pill {{ display: inline-block; padding: 2px 9px; border-radius: 999px; font-size: 12px; font-weight: 600;
  white-space: nowrap; }}
.failed-metric {{ display: block; margin-top: 3px; font-size: 12px; font-weight: 600;
  color: {VERDICT_COLOURS[Verdict.REGRESSED][0]}; white-space: nowrap; }}
.failed-metric::before {{ content: "failed: "; font-weight: 400; }}
.empty {{ color: {MUTED}; font-style: italic; }}
.legend {{ display: flex; gap: 16px; color: {MUTED}; font-size: 12px; margin: 0 0 6px; flex-wrap: wrap; }}
.legend i {{ display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -1px;
  margin-right: 5px; }}
"""


def esc(value: Any) -> str:
    """``value`` as escaped HTML text (None as nothing)."""
    return html.escape("" if value is None else str(value), quote=True)


def num(value: float | None) -> float | None:
    """A finite number, or None (a page is handed NaN and infinities too)."""
    return value if value is not None and math.isfinite(value) else None


def positive(value: float | None) -> float | None:
    value = num(value)
    return value if value is not None and value > 0 else None


def coord(x: float) -> str:
    """A coordinate for SVG."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def test_label(entry: ResultEntry) -> str:
    return entry.test_id or entry.nodeid or "?"


def verdict_of(entry: ResultEntry) -> str:
    return str(entry.verdict or "unknown")


def truncate(text: str, chars: int) -> str:
    """Shortened in the middle: a test id's start and its parameters both stay readable."""
    if len(text) <= chars:
        return text
    tail = max((chars - 1) // 2, 1)
    return text[: max(chars - 1 - tail, 1)] + "\u2026" + text[-tail:]


#: where a kernel's label may be cut: between its parts and its shapes, never inside one
_LABEL_BREAKS = re.compile(r" \u00b7 |, | -> | \(|\(")


def cut_label(text: str, chars: int) -> str:
    """A kernel's label cut at a break between its parts (``conv2d6 (new) · conv2d(1x256x7x7…``),
    never a shape in two; its whole text is the bar's tooltip."""
    if len(text) <= chars:
        return text
    cut = max((m.start() for m in _LABEL_BREAKS.finditer(text) if 0 < m.start() <= chars - 1), default=None)
    return (text[: chars - 1] if cut is None else text[:cut].rstrip()) + "\u2026"


def text_width(text: str, size: float) -> float:
    """A generous estimate of rendered text width (no font metrics here)."""
    return len(text) * size * 0.6


def mark(verdict: str) -> str:
    """The colour of a verdict's marks in the plots (the pale neutral pill colour is too faint there)."""
    return VERDICT_COLOURS[verdict][0] if verdict in VERDICT_COLOURS else NEUTRAL_MARK


def pill(verdict: str) -> str:
    bg, fg = VERDICT_COLOURS.get(verdict, NEUTRAL)
    return f'<span class="pill verdict-{esc(verdict.replace(" ", "-"))}" style="background:{bg};color:{fg}">{esc(verdict)}</span>'


def scroll_table(head: Sequence[str], rows: Sequence[str], attrs: str = "") -> str:
    """A table in a scrolling box: the column titles of ``head`` escaped, ``rows`` as they are."""
    header = "".join(f"<th>{esc(h)}</th>" for h in head)
    return (
        f'<div class="scroll"><table{attrs}><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}x"
