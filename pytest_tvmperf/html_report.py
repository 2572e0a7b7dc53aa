"""Pure HTML: one self-contained page for a run's results (the ``results.py`` schema).

``render_html(results, history)`` returns a page with inline CSS and inline SVG drawn here:
no JavaScript, no fonts, images or anything else fetched from anywhere. It shows

- the run's time and the number of tests per verdict;
- "time now vs baseline": each timed test's ratio with its interval, on a log scale;
- for each regressed test that has per-kernel times, its kernels now vs baseline;
- with ``history`` (earlier runs, oldest first), each test's median time over the runs, this
  run last (a test needs a median in two runs for a line);
- a table of every test.

Every piece of text from the results goes through ``html.escape``. Missing optional keys
(``time``, ``kernels``, ``record``, ``baseline``, ...) are shown as "-" or "n/a".
"""

from __future__ import annotations

import html
import math
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from .report import fmt_time

__all__ = ["render_html", "VERDICT_COLOURS"]

# verdict -> (solid colour for dots, bars and pills, text colour on it)
VERDICT_COLOURS: dict[str, tuple[str, str]] = {
    "regressed": ("#d62728", "#ffffff"),
    "inconclusive": ("#e69f00", "#1f1600"),
    "improved": ("#2ca02c", "#ffffff"),
    "pass": ("#8d949e", "#ffffff"),
}
NEUTRAL = ("#c9d1dc", "#2b3340")
NEUTRAL_MARK = "#60738c"  # dots and bars of the other verdicts in plots
VERDICT_ORDER = ("regressed", "inconclusive", "improved", "pass")

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
  white-space: nowrap; }}
td {{ border-bottom: 1px solid #edf0f4; padding: 7px 8px; vertical-align: top; }}
tbody tr:nth-child(even) td {{ background: #fafbfc; }}
td.num {{ font-variant-numeric: tabular-nums; white-space: nowrap; }}
td.test {{ font-family: ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12px;
  overflow-wrap: anywhere; min-width: 240px; }}
td .mode {{ display: block; color: {MUTED}; font-size: 12px; white-space: normal; }}
.scroll {{ overflow-x: auto; }}
td.test .note {{ display: block; font-family: {FONT}; color: {MUTED}; font-size: 12px; }}
td.short {{ white-space: nowrap; }}
.worse {{ color: {VERDICT_COLOURS['regressed'][0]}; font-weight: 600; }}
.better {{ color: {VERDICT_COLOURS['improved'][0]}; font-weight: 600; }}
.pill {{ display: inline-block; padding: 2px 9px; border-radius: 999px; font-size: 12px; font-weight: 600;
  white-space: nowrap; }}
.empty {{ color: {MUTED}; font-style: italic; }}
.legend {{ display: flex; gap: 16px; color: {MUTED}; font-size: 12px; margin: 0 0 6px; flex-wrap: wrap; }}
.legend i {{ display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -1px;
  margin-right: 5px; }}
"""


# --------------------------------------------------------------------------- small helpers


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _colours(verdict: str) -> tuple[str, str]:
    return VERDICT_COLOURS.get(verdict, NEUTRAL)


def _num(value: Any) -> float | None:
    """A finite float, or None for anything else (missing, null, NaN, a string)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _positive(value: Any) -> float | None:
    value = _num(value)
    return value if value is not None and value > 0 else None


def _f(x: float) -> str:
    """A coordinate for SVG."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _label(test: Mapping[str, Any]) -> str:
    return str(test.get("test_id") or test.get("nodeid") or "?")


def _verdict(test: Mapping[str, Any]) -> str:
    return str(test.get("verdict") or "unknown")


def _instructions(entry: Any) -> int | None:
    """Sum of ``entry["exact"]["instructions"]`` (per function), None when absent or null."""
    instr = _mapping(_mapping(entry).get("exact")).get("instructions")
    if isinstance(instr, Mapping):
        values = [v for v in instr.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return int(sum(values)) if values else None
    if isinstance(instr, (int, float)) and not isinstance(instr, bool):
        return int(instr)
    return None


def _truncate(text: str, chars: int) -> str:
    """Shortened in the middle: a test id's start and its parameters both stay readable."""
    if len(text) <= chars:
        return text
    tail = max((chars - 1) // 2, 1)
    return text[: max(chars - 1 - tail, 1)] + "\u2026" + text[-tail:]


def _text_width(text: str, size: float) -> float:
    """A generous estimate of rendered text width (no font metrics here)."""
    return len(text) * size * 0.6


def _mark(verdict: str) -> str:
    """The colour of a verdict's marks in the plots (the pale neutral pill colour is too faint there)."""
    return VERDICT_COLOURS[verdict][0] if verdict in VERDICT_COLOURS else NEUTRAL_MARK


def _pill(verdict: str) -> str:
    bg, fg = _colours(verdict)
    return f'<span class="pill verdict-{_e(verdict.replace(" ", "-"))}" style="background:{bg};color:{fg}">{_e(verdict)}</span>'


def _fmt_ratio(x: float) -> str:
    return f"{x:.2f}x"


# --------------------------------------------------------------------------- header and table


def _ordered_counts(tests: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    counts = Counter(_verdict(t) for t in tests)
    known = [(v, counts[v]) for v in VERDICT_ORDER if counts.get(v)]
    others = sorted((v, n) for v, n in counts.items() if v not in VERDICT_ORDER)
    return known + others


def _header(results: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> str:
    created = results.get("created")
    counts = _ordered_counts(tests)
    items = []
    for verdict, n in counts:
        bg, fg = _colours(verdict)
        items.append(f'<li class="count" data-verdict="{_e(verdict)}" style="background:{bg};color:{fg}">'
                     f"<b>{n}</b> {_e(verdict)}</li>")
    total = f"{len(tests)} test{'s' if len(tests) != 1 else ''}"
    when = f"run of {_e(created)}" if created else "run time unknown"
    return (
        "<header>"
        f"<h1>pytest-tvmperf report</h1>"
        f'<p class="created">{when} &middot; {total}</p>'
        f'<ul class="counts">{"".join(items)}</ul>'
        "</header>"
    )


def _ratio_cell(time: Mapping[str, Any]) -> str:
    ratio, low, high = _num(time.get("ratio")), _num(time.get("low")), _num(time.get("high"))
    mode = time.get("mode")
    if ratio is not None:
        text = _fmt_ratio(ratio)
        if low is not None and high is not None:
            text += f" [{low:.2f}\u2013{high:.2f}]"
        return _e(text) + (f'<span class="mode">{_e(mode)}</span>' if mode else "")
    median, base = _positive(time.get("median_s")), _positive(time.get("baseline_s"))
    if median is not None and base is not None:
        return _e(_fmt_ratio(median / base))
    return "-"


def _instr_cell(test: Mapping[str, Any]) -> str:
    now, base = _instructions(test.get("record")), _instructions(test.get("baseline"))
    if now is None and base is None:
        return "n/a"
    now_s = "n/a" if now is None else str(now)
    base_s = "n/a" if base is None else str(base)
    cls = ""
    if now is not None and base is not None and now != base:
        cls = ' class="worse"' if now > base else ' class="better"'
    return f"<span{cls}>{_e(now_s)}</span> / {_e(base_s)}"


def _table(tests: Sequence[Mapping[str, Any]]) -> str:
    head = ("test", "executor", "target", "median", "baseline", "ratio [interval] mode", "instr now / base",
            "verdict")
    rows = []
    for t in tests:
        time = _mapping(t.get("time"))
        verdict = _verdict(t)
        note = t.get("note")
        note_html = f'<span class="note">{_e(note)}</span>' if note else ""
        rows.append(
            f'<tr data-verdict="{_e(verdict)}">'
            f'<td class="test" title="{_e(t.get("nodeid") or _label(t))}">{_e(_label(t))}{note_html}</td>'
            f"<td class=\"short\">{_e(t.get('executor') or '-')}</td>"
            f"<td class=\"short\">{_e(t.get('target') or '-')}</td>"
            f'<td class="num">{_e(fmt_time(_num(time.get("median_s"))))}</td>'
            f'<td class="num">{_e(fmt_time(_num(time.get("baseline_s"))))}</td>'
            f'<td class="num">{_ratio_cell(time)}</td>'
            f'<td class="num">{_instr_cell(t)}</td>'
            f"<td>{_pill(verdict)}</td>"
            "</tr>"
        )
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    return (
        '<section><h2>All tests</h2>'
        '<div class="scroll"><table id="tvmperf-table">'
        f"<thead><tr>{header}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody>"
        "</table></div></section>"
    )


def _ratio_text(r: Mapping[str, Any]) -> str:
    ratio, low, high = _positive(r.get("ratio")), _positive(r.get("low")), _positive(r.get("high"))
    if ratio is None:
        return "-"
    interval = f" [{low:.2f}-{high:.2f}]" if low is not None and high is not None else ""
    limit = _positive(r.get("limit"))
    gate = f" &le; {limit:g}" if limit is not None else ""
    return f"{ratio:.2f}x{_e(interval)}{gate}"


def _peers_section(tests: Sequence[Mapping[str, Any]]) -> str:
    """TVM time over each peer framework's (timed side by side): one row per test."""
    with_peers = [t for t in tests if isinstance(t.get("peers"), list) and t["peers"]]
    if not with_peers:
        return ""
    names = sorted({str(p.get("name")) for t in with_peers for p in t["peers"] if isinstance(p, Mapping)})
    rows = []
    for t in with_peers:
        cells = {str(p.get("name")): p for p in t["peers"] if isinstance(p, Mapping)}
        tds = []
        for name in names:
            peer = cells.get(name)
            if peer is None:
                tds.append('<td class="num">-</td>')
                continue
            status = str(peer.get("status") or "")
            pill = _pill({"exceeded": "regressed"}.get(status, status)) if peer.get("limit") is not None else ""
            tds.append(f'<td class="num">{_ratio_text(peer)} {pill}</td>')
        time = _mapping(t.get("time"))
        rows.append(f'<tr><td class="test">{_e(_label(t))}</td>'
                    f'<td class="num">{_e(fmt_time(_num(time.get("median_s"))))}</td>{"".join(tds)}</tr>')
    header = "".join(f"<th>{_e(h)}</th>" for h in ("test", "tvm", *(f"tvm / {n}" for n in names)))
    return ('<section class="peers"><h2>TVM time / peer framework time (side by side; below 1: TVM is faster)</h2>'
            f'<div class="scroll"><table id="tvmperf-peers"><thead><tr>{header}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div></section>")


def _relations_section(tests: Sequence[Mapping[str, Any]]) -> str:
    """The tvmperf.assert_ratio verdicts: which two builds, their times and the ratio."""
    rel = [t for t in tests if isinstance(t.get("relation"), Mapping)]
    if not rel:
        return ""
    rows = []
    for t in rel:
        r = t["relation"]
        rows.append(f'<tr><td class="test">{_e(_label(t))}</td><td>{_e(r.get("name") or "")}</td>'
                    f'<td class="num">{_e(fmt_time(_num(r.get("numerator_s"))))}</td>'
                    f'<td class="num">{_e(fmt_time(_num(r.get("denominator_s"))))}</td>'
                    f'<td class="num">{_ratio_text(r)}</td><td>{_pill(_verdict(t))}</td></tr>')
    header = "".join(f"<th>{h}</th>" for h in ("test", "a / b", "a", "b", "ratio [interval] &le; limit", "verdict"))
    return ('<section class="relations"><h2>Relations (tvmperf.assert_ratio)</h2>'
            f'<div class="scroll"><table id="tvmperf-relations"><thead><tr>{header}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div></section>")


# --------------------------------------------------------------------------- ratio plot

_NICE_RATIOS = (0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0,
                50.0, 100.0)


def _ratio_plot(tests: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for t in tests:
        time = _mapping(t.get("time"))
        ratio = _positive(time.get("ratio"))
        if ratio is None:
            continue
        low, high = _positive(time.get("low")), _positive(time.get("high"))
        low = min(low, ratio) if low is not None else ratio
        high = max(high, ratio) if high is not None else ratio
        rows.append((t, ratio, low, high))
    if not rows:
        return ('<section><h2>Time now vs baseline</h2>'
                '<p class="empty">No test has a time ratio against a baseline in this run.</p></section>')

    lo = min(min(r[2] for r in rows), 1 / 1.15)
    hi = max(max(r[3] for r in rows), 1.15)
    lo_log, hi_log = math.log(lo), math.log(hi)
    pad = (hi_log - lo_log) * 0.06
    lo_log, hi_log = lo_log - pad, hi_log + pad

    labels = [_label(t) for t, *_ in rows]
    label_chars = min(max(len(s) for s in labels), 60)
    left = max(160.0, 20 + _text_width("x" * label_chars, 12))
    width, right = 1000, 150
    row_h, top, bottom = 26, 34, 30
    height = top + row_h * len(rows) + bottom
    x0, x1 = left, width - right

    def x(r: float) -> float:
        return x0 + (math.log(r) - lo_log) / (hi_log - lo_log) * (x1 - x0)

    parts = [
        f'<svg class="tvmperf-plot" data-kind="ratio" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="time now vs baseline, one row per timed test">'
    ]
    # rows' background stripes
    for i in range(len(rows)):
        if i % 2 == 0:
            parts.append(f'<rect x="0" y="{_f(top + i * row_h)}" width="{width}" height="{row_h}" fill="#f6f8fb"/>')
    # slower / faster shading either side of 1.0
    parts.append(f'<rect x="{_f(x(1.0))}" y="{top}" width="{_f(x1 - x(1.0))}" height="{row_h * len(rows)}" '
                 f'fill="{VERDICT_COLOURS["regressed"][0]}" fill-opacity="0.04"/>')
    parts.append(f'<rect x="{_f(x0)}" y="{top}" width="{_f(x(1.0) - x0)}" height="{row_h * len(rows)}" '
                 f'fill="{VERDICT_COLOURS["improved"][0]}" fill-opacity="0.04"/>')
    # ticks and grid
    ticks = [r for r in _NICE_RATIOS if lo_log <= math.log(r) <= hi_log]
    min_gap = 44.0
    shown: list[float] = []
    for r in sorted(ticks, key=lambda r: (r != 1.0, abs(math.log(r)))):
        if all(abs(x(r) - x(s)) >= min_gap for s in shown):
            shown.append(r)
    y_axis = top + row_h * len(rows)
    for r in sorted(shown):
        if r == 1.0:
            continue
        parts.append(f'<line x1="{_f(x(r))}" y1="{top}" x2="{_f(x(r))}" y2="{y_axis}" stroke="{GRID}" stroke-width="1"/>')
        parts.append(f'<text x="{_f(x(r))}" y="{y_axis + 18}" text-anchor="middle" font-size="11" fill="{MUTED}">'
                     f"{r:g}x</text>")
    xr = x(1.0)
    parts.append(f'<line class="tvmperf-unity" x1="{_f(xr)}" y1="{top - 8}" x2="{_f(xr)}" y2="{y_axis + 4}" '
                 f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{_f(xr)}" y="{y_axis + 18}" text-anchor="middle" font-size="11" font-weight="600" '
                 f'fill="{INK}">1.0x</text>')
    parts.append(f'<text x="{_f(xr - 8)}" y="{top - 12}" text-anchor="end" font-size="11" '
                 f'fill="{VERDICT_COLOURS["improved"][0]}">\u2190 faster now</text>')
    parts.append(f'<text x="{_f(xr + 8)}" y="{top - 12}" font-size="11" '
                 f'fill="{VERDICT_COLOURS["regressed"][0]}">slower now \u2192</text>')
    parts.append(f'<text x="{_f(x1 + 12)}" y="{top - 12}" font-size="11" fill="{MUTED}">ratio [interval]</text>')

    for i, (t, ratio, low, high) in enumerate(rows):
        cy = top + i * row_h + row_h / 2
        verdict = _verdict(t)
        colour = _mark(verdict)
        label = labels[i]
        time = _mapping(t.get("time"))
        mode = time.get("mode")
        tip = f"{label}: {_fmt_ratio(ratio)} [{low:.2f}-{high:.2f}]" + (f" {mode}" if mode else "") + f", {verdict}"
        parts.append(f'<g class="tvmperf-row" data-verdict="{_e(verdict)}"><title>{_e(tip)}</title>')
        parts.append(f'<text x="{_f(left - 10)}" y="{_f(cy + 4)}" text-anchor="end" font-size="12" fill="{INK}">'
                     f"{_e(_truncate(label, label_chars))}</text>")
        parts.append(f'<line class="tvmperf-interval" x1="{_f(x(low))}" y1="{_f(cy)}" x2="{_f(x(high))}" y2="{_f(cy)}" '
                     f'stroke="{colour}" stroke-width="6" stroke-linecap="round" stroke-opacity="0.35"/>')
        for end in (low, high):
            parts.append(f'<line x1="{_f(x(end))}" y1="{_f(cy - 6)}" x2="{_f(x(end))}" y2="{_f(cy + 6)}" '
                         f'stroke="{colour}" stroke-width="1.5"/>')
        parts.append(f'<circle class="tvmperf-marker" cx="{_f(x(ratio))}" cy="{_f(cy)}" r="6" fill="{colour}" '
                     f'stroke="#ffffff" stroke-width="1.5"/>')
        value = f"{_fmt_ratio(ratio)} [{low:.2f}\u2013{high:.2f}]"
        weight = ' font-weight="600"' if verdict == "regressed" else ""
        parts.append(f'<text x="{_f(x1 + 12)}" y="{_f(cy + 4)}" font-size="12" fill="{colour if verdict not in ("pass", "") and verdict in VERDICT_COLOURS else INK}"'
                     f'{weight}>{_e(value)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    legend = "".join(
        f'<span><i style="background:{VERDICT_COLOURS[v][0]}"></i>{_e(v)}</span>' for v in VERDICT_ORDER
    )
    return (
        '<section class="ratio"><h2>Time now vs baseline</h2>'
        '<p class="hint">Median time of this run over the baseline\u2019s (log scale). The dot is the ratio, the bar '
        "its interval; right of the dashed line is slower.</p>"
        f'<div class="legend">{legend}</div>'
        + "".join(parts)
        + "</section>"
    )


# --------------------------------------------------------------------------- per-kernel bars


def _kernel_rows(test: Mapping[str, Any]) -> list[tuple[str, float | None, float | None]]:
    kernels = test.get("kernels")
    if not isinstance(kernels, list):
        return []
    rows = []
    for k in kernels:
        if not isinstance(k, Mapping):
            continue
        now, base = _num(k.get("time_s")), _num(k.get("baseline_time_s"))
        if now is None and base is None:
            continue
        rows.append((str(k.get("name") or "?"), now, base))
    return rows


MAX_KERNELS = 15  # bars per chart; the rest are counted


def _kernel_chart(test: Mapping[str, Any], rows: list[tuple[str, float | None, float | None]]) -> str:
    hidden = max(len(rows) - MAX_KERNELS, 0)
    rows = rows[:MAX_KERNELS]
    any_base = any(b is not None for _, _, b in rows)
    names = [r[0] for r in rows]
    label_chars = min(max(len(n) for n in names), 40)
    left = max(140.0, 24 + _text_width("x" * label_chars, 12))
    width, right = 1000, 190
    if any_base:  # a baseline bar over a bar for now
        bar_h, gap, group_gap = 11, 2, 12
        group_h = 2 * bar_h + gap + group_gap
    else:  # nothing to compare with: one bar per kernel
        bar_h, gap, group_gap = 14, 0, 9
        group_h = bar_h + group_gap
    top = 8
    height = top + group_h * len(rows) + 6
    x0, x1 = left, width - right
    vmax = max(max(v or 0.0, b or 0.0) for _, v, b in rows) or 1.0
    regressed = VERDICT_COLOURS["regressed"][0]

    def w(v: float) -> float:
        return max(v, 0.0) / vmax * (x1 - x0)

    label = _label(test)
    parts = [
        f'<svg class="tvmperf-plot" data-kind="kernels" data-test="{_e(label)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="per-kernel time now vs baseline for {_e(label)}">'
    ]
    parts.append(f'<line x1="{_f(x0)}" y1="{top - 4}" x2="{_f(x0)}" y2="{height - 4}" stroke="{GRID}" stroke-width="1"/>')
    for i, (name, now, base) in enumerate(rows):
        y = top + i * group_h
        yn = y + bar_h + gap if any_base else y
        parts.append(f'<g class="tvmperf-kernel"><title>{_e(name)}: now {_e(fmt_time(now))}, '
                     f'baseline {_e(fmt_time(base))}</title>')
        label_y = (y + bar_h + gap / 2 + 4) if any_base else (y + bar_h / 2 + 4)
        parts.append(f'<text x="{_f(left - 10)}" y="{_f(label_y)}" text-anchor="end" font-size="12" '
                     f'fill="{INK}">{_e(_truncate(name, label_chars))}</text>')
        if base is not None:
            parts.append(f'<rect class="tvmperf-bar-baseline" x="{_f(x0)}" y="{_f(y)}" width="{_f(w(base))}" '
                         f'height="{bar_h}" rx="2" fill="{BASELINE_BAR}"/>')
            parts.append(f'<text x="{_f(x0 + w(base) + 6)}" y="{_f(y + bar_h - 2)}" font-size="10.5" fill="{MUTED}">'
                         f"{_e(fmt_time(base))}</text>")
        elif any_base:
            parts.append(f'<text x="{_f(x0 + 6)}" y="{_f(y + bar_h - 2)}" font-size="10.5" fill="{MUTED}">'
                         "no baseline</text>")
        if now is not None:
            if base is None:
                colour = NEUTRAL_MARK
            else:
                colour = regressed if now > base else VERDICT_COLOURS["pass"][0]
            parts.append(f'<rect class="tvmperf-bar-now" x="{_f(x0)}" y="{_f(yn)}" width="{_f(w(now))}" '
                         f'height="{bar_h}" rx="2" fill="{colour}"/>')
            extra = ""
            if base is not None and base > 0:
                extra = f" ({now / base:.2f}x)"
            parts.append(f'<text x="{_f(x0 + w(now) + 6)}" y="{_f(yn + bar_h - 2)}" font-size="10.5" fill="{INK}"'
                         f' font-weight="600">{_e(fmt_time(now) + extra)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    time = _mapping(test.get("time"))
    sub = []
    if _num(time.get("ratio")) is not None:
        sub.append(f"whole test {_fmt_ratio(float(time['ratio']))}")
    if test.get("executor"):
        sub.append(str(test["executor"]))
    if test.get("target"):
        sub.append(str(test["target"]))
    if not any_base:
        sub.append("the baseline has no per-kernel times")
    if hidden:
        sub.append(f"{hidden} more kernel{'s' if hidden != 1 else ''} not shown")
    return (
        f'<div class="card"><h3 title="{_e(test.get("nodeid") or label)}">{_e(label)}</h3>'
        f'<div class="sub">{_e(" · ".join(sub))}</div>'
        + "".join(parts)
        + "</div>"
    )


def _kernels_section(tests: Sequence[Mapping[str, Any]]) -> str:
    charts = []
    for t in tests:
        if _verdict(t) != "regressed":
            continue
        rows = _kernel_rows(t)
        if rows:
            charts.append(_kernel_chart(t, rows))
    if not charts:
        return ""
    legend = (f'<div class="legend"><span><i style="background:{BASELINE_BAR}"></i>baseline</span>'
              f'<span><i style="background:{VERDICT_COLOURS["regressed"][0]}"></i>now, slower</span>'
              f'<span><i style="background:{VERDICT_COLOURS["pass"][0]}"></i>now, not slower</span>'
              f'<span><i style="background:{NEUTRAL_MARK}"></i>now, no baseline</span></div>')
    return ('<section class="kernels"><h2>Regressed tests: time per kernel</h2>'
            '<p class="hint">Where the time went: each kernel\u2019s time in this run against the baseline.</p>'
            + legend + "".join(charts) + "</section>")


# --------------------------------------------------------------------------- trends


def _series(nodeid: str, runs: Sequence[Mapping[str, Any]]) -> list[tuple[float | None, str, str]]:
    """(median_s or None, verdict, created) per run."""
    out = []
    for run in runs:
        entry = _mapping(_mapping(run.get("tests")).get(nodeid))
        out.append((_positive(entry.get("median_s")), str(entry.get("verdict") or ""), str(run.get("created") or "")))
    return out


def _trend_chart(test: Mapping[str, Any], series: list[tuple[float | None, str, str]]) -> str:
    width, height = 320, 78
    left, right, top, bottom = 8, 64, 10, 14
    values = [v for v, _, _ in series if v is not None]
    vmin, vmax = min(values), max(values)
    if vmax - vmin <= 1e-9 * vmax:  # flat: centre the line
        vmin, vmax = vmin * 0.95, vmax * 1.05
    span = vmax - vmin
    padded = (vmin - span * 0.08, vmax + span * 0.08)
    if all(math.isfinite(v) for v in padded) and padded[1] > padded[0]:
        vmin, vmax = padded
    if not (math.isfinite(vmax - vmin) and vmax > vmin):  # values at the ends of the float range
        vmin, vmax = 0.0, max(values)
    n = len(series)
    x0, x1, y0, y1 = left, width - right, top, height - bottom

    def x(i: int) -> float:
        return x0 + (x1 - x0) * (i / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return y1 - (v - vmin) / (vmax - vmin) * (y1 - y0)

    label = _label(test)
    parts = [
        f'<svg class="tvmperf-plot" data-kind="trend" data-test="{_e(label)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="median time over runs for {_e(label)}">'
    ]
    parts.append(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="{GRID}"/>')
    # the line, broken where a run has no time
    segments: list[list[str]] = [[]]
    for i, (v, _, _) in enumerate(series):
        if v is None:
            if segments[-1]:
                segments.append([])
            continue
        segments[-1].append(f"{_f(x(i))},{_f(y(v))}")
    for seg in segments:
        if len(seg) > 1:
            parts.append(f'<polyline class="tvmperf-trend-line" points="{" ".join(seg)}" fill="none" stroke="#3d5a80" '
                         f'stroke-width="2" stroke-linejoin="round" stroke-linecap="round"/>')
    for i, (v, verdict, created) in enumerate(series):
        if v is None:
            continue
        colour = _mark(verdict) if verdict else MUTED
        last = i == n - 1
        parts.append(f'<circle class="tvmperf-trend-point" cx="{_f(x(i))}" cy="{_f(y(v))}" r="{4.5 if last else 3}" '
                     f'fill="{colour}" stroke="#ffffff" stroke-width="1">'
                     f"<title>{_e(created)}: {_e(fmt_time(v))}{(' ' + _e(verdict)) if verdict else ''}</title></circle>")
    hi_v, lo_v = max(values), min(values)
    parts.append(f'<text x="{x1 + 8}" y="{_f(y(hi_v) + 4)}" font-size="10.5" fill="{MUTED}">{_e(fmt_time(hi_v))}</text>')
    if y(lo_v) - y(hi_v) > 12:
        parts.append(f'<text x="{x1 + 8}" y="{_f(y(lo_v) + 4)}" font-size="10.5" fill="{MUTED}">{_e(fmt_time(lo_v))}</text>')
    parts.append(f'<text x="{x0}" y="{height - 2}" font-size="10" fill="{MUTED}">{_e(series[0][2][:10])}</text>')
    parts.append(f'<text x="{x1}" y="{height - 2}" font-size="10" text-anchor="end" fill="{MUTED}">'
                 f"{_e(series[-1][2][:10])}</text>")
    parts.append("</svg>")
    last_v = next((v for v, _, _ in reversed(series) if v is not None), None)
    return (
        f'<div class="card"><h3 title="{_e(test.get("nodeid") or label)}">{_e(label)}</h3>'
        f'<div class="sub">{n} run{"s" if n != 1 else ""} &middot; latest median {_e(fmt_time(last_v))}</div>'
        + "".join(parts)
        + "</div>"
    )


def _current_run(results: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "created": results.get("created"),
        "tests": {
            str(t.get("nodeid")): {"median_s": _mapping(t.get("time")).get("median_s"), "verdict": _verdict(t)}
            for t in tests
            if t.get("nodeid") is not None
        },
    }


def _trends_section(results: Mapping[str, Any], tests: Sequence[Mapping[str, Any]],
                    history: Iterable[Mapping[str, Any]]) -> str:
    runs = [r for r in history if isinstance(r, Mapping)]
    if not runs:
        return ""
    # this run is the trend's last point, unless the caller already put it in the history
    if not runs or runs[-1].get("created") != results.get("created") or results.get("created") is None:
        runs.append(_current_run(results, tests))
    cards = []
    for t in tests:
        nodeid = t.get("nodeid")
        if nodeid is None:
            continue
        series = _series(str(nodeid), runs)
        if sum(v is not None for v, _, _ in series) >= 2:  # one point is no trend
            cards.append(_trend_chart(t, series))
    if not cards:
        return ('<section class="trends"><h2>Median time over runs</h2>'
                f'<p class="empty">{len(runs)} run{"s" if len(runs) != 1 else ""} in the history: no test has a median '
                "time in two of them yet, so there is no trend to draw.</p></section>")
    return ('<section class="trends"><h2>Median time over runs</h2>'
            f'<p class="hint">{len(runs)} runs, oldest on the left, this run last; dots coloured by verdict.</p>'
            f'<div class="grid">{"".join(cards)}</div></section>')


# --------------------------------------------------------------------------- the page


def render_html(results: Mapping[str, Any], history: list[dict] | None = None) -> str:
    """One self-contained HTML page for ``results`` (see ``results.py``); ``history`` is a
    list of earlier runs, oldest first, each ``{"created", "tests": {nodeid: {"median_s", "verdict"}}}``."""
    results = _mapping(results)
    raw_tests = results.get("tests")
    tests = [t for t in raw_tests if isinstance(t, Mapping)] if isinstance(raw_tests, list) else []
    created = results.get("created")
    title = "pytest-tvmperf report" + (f" \u2014 {created}" if created else "")
    body = [
        _header(results, tests),
        _ratio_plot(tests),
        _kernels_section(tests),
        _trends_section(results, tests, history) if history else "",
        _peers_section(tests),
        _relations_section(tests),
        _table(tests),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title>"
        f"<style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
