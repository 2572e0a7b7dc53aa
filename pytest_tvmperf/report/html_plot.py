"""The HTML report's SVG plots (pure): time ratios, regressed tests' kernels, trends over runs."""

from __future__ import annotations

import math
from itertools import groupby
from typing import Sequence

from pytest_tvmperf.report.html_parts import BASELINE_BAR, GRID, INK, MUTED, NEUTRAL_MARK, VERDICT_COLOURS
from pytest_tvmperf.report.html_parts import VERDICT_ORDER, coord, cut_label, esc, fmt_ratio, mark, num, positive
from pytest_tvmperf.report.html_parts import test_label, text_width, truncate, verdict_of
from pytest_tvmperf.result.text import fmt_time
from pytest_tvmperf.report.history import HistoryRun, baseline_digest
from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.kernels import MIN_KERNEL_DELTA_S

#: a kernel bar is drawn red only when the kernel takes this much longer than in the baseline
KERNEL_RED_RATIO = 1.10


def _svg(kind: str, width: int, height: int, aria_label: str, test: str | None = None) -> str:
    """A plot's opening tag (``aria_label`` escaped already)."""
    data_test = f' data-test="{esc(test)}"' if test is not None else ""
    return (
        f'<svg class="tvmperf-plot" data-kind="{kind}"{data_test} xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{aria_label}">'
    )


#: the ratio plot's ticks
_NICE_RATIOS = (0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2, 3, 4, 5, 10, 20, 50, 100)


def ratio_plot(tests: Sequence[ResultEntry]) -> str:
    rows = []
    for t in tests:
        ratio = positive(t.time.ratio) if t.time is not None else None
        if ratio is not None:
            low, high = positive(t.time.low) or ratio, positive(t.time.high) or ratio
            rows.append((t, ratio, min(low, ratio), max(high, ratio)))
    if not rows:
        return (
            "<section><h2>Time now vs baseline</h2>"
            '<p class="empty">No test has a time ratio against a baseline in this run.</p></section>'
        )

    lo_log, hi_log = math.log(min(min(r[2] for r in rows), 1 / 1.15)), math.log(max(max(r[3] for r in rows), 1.15))
    pad = (hi_log - lo_log) * 0.06
    lo_log, hi_log = lo_log - pad, hi_log + pad

    labels = [test_label(t) for t, *_ in rows]
    label_chars = min(max(len(s) for s in labels), 60)
    left = max(160.0, 20 + text_width("x" * label_chars, 12))
    failing = [", ".join(m for m in t.failed if m != "time") for t, *_ in rows]
    width, right = 1000, 150 + (max(text_width(f"failed: {f}", 12) for f in failing) if any(failing) else 0)
    row_h, top, bottom = 26, 34, 30
    height = top + row_h * len(rows) + bottom
    x0, x1 = left, width - right

    def x(r: float) -> float:
        return x0 + (math.log(r) - lo_log) / (hi_log - lo_log) * (x1 - x0)

    parts = [_svg("ratio", width, height, "time now vs baseline, one row per timed test")]
    for i in range(0, len(rows), 2):  # rows' background stripes
        parts.append(f'<rect x="0" y="{coord(top + i * row_h)}" width="{width}" height="{row_h}" fill="#f6f8fb"/>')
    parts += [  # slower / faster shading either side of 1.0
        f'<rect x="{coord(x(1.0))}" y="{top}" width="{coord(x1 - x(1.0))}" height="{row_h * len(rows)}" '
        f'fill="{VERDICT_COLOURS[Verdict.REGRESSED][0]}" fill-opacity="0.04"/>',
        f'<rect x="{coord(x0)}" y="{top}" width="{coord(x(1.0) - x0)}" height="{row_h * len(rows)}" '
        f'fill="{VERDICT_COLOURS[Verdict.IMPROVED][0]}" fill-opacity="0.04"/>',
    ]
    ticks = [r for r in _NICE_RATIOS if lo_log <= math.log(r) <= hi_log]
    shown: list[float] = []
    for r in sorted(ticks, key=lambda r: (r != 1.0, abs(math.log(r)))):  # ticks and grid, at least 44 px apart
        if all(abs(x(r) - x(s)) >= 44.0 for s in shown):
            shown.append(r)
    y_axis = top + row_h * len(rows)
    for r in sorted(r for r in shown if r != 1.0):
        parts += [
            f'<line x1="{coord(x(r))}" y1="{top}" x2="{coord(x(r))}" y2="{y_axis}" stroke="{GRID}" stroke-width="1"/>',
            f'<text x="{coord(x(r))}" y="{y_axis + 18}" text-anchor="middle" font-size="11" fill="{MUTED}">'
            f"{r:g}x</text>",
        ]
    xr = x(1.0)
    parts += [
        f'<line class="tvmperf-unity" x1="{coord(xr)}" y1="{top - 8}" x2="{coord(xr)}" y2="{y_axis + 4}" '
        f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="4 3"/>',
        f'<text x="{coord(xr)}" y="{y_axis + 18}" text-anchor="middle" font-size="11" font-weight="600" '
        f'fill="{INK}">1.0x</text>',
        f'<text x="{coord(xr - 8)}" y="{top - 12}" text-anchor="end" font-size="11" '
        f'fill="{VERDICT_COLOURS[Verdict.IMPROVED][0]}">\u2190 faster now</text>',
        f'<text x="{coord(xr + 8)}" y="{top - 12}" font-size="11" '
        f'fill="{VERDICT_COLOURS[Verdict.REGRESSED][0]}">slower now \u2192</text>',
        f'<text x="{coord(x1 + 12)}" y="{top - 12}" font-size="11" fill="{MUTED}">ratio [interval]</text>',
    ]
    for i, (t, ratio, low, high) in enumerate(rows):
        cy = top + i * row_h + row_h / 2
        # the dot is the time metric's verdict (a test failed by another metric says so beside it), else the test's
        verdict = next((m.status for m in t.metrics if m.metric == "time"), verdict_of(t))
        colour = mark(verdict)
        tip = (
            f"{labels[i]}: {fmt_ratio(ratio)} [{low:.2f}-{high:.2f}]"
            + (f" {t.time.mode}" if t.time.mode else "")
            + f", time {verdict}"
            + (f"; test {verdict_of(t)} on {failing[i]}" if failing[i] else "")
        )
        weight = ' font-weight="600"' if verdict == Verdict.REGRESSED else ""
        value = f"{fmt_ratio(ratio)} [{low:.2f}\u2013{high:.2f}]"
        value_colour = colour if verdict != Verdict.PASS and verdict in VERDICT_COLOURS else INK
        parts += [
            f'<g class="tvmperf-row" data-verdict="{esc(verdict)}"><title>{esc(tip)}</title>',
            f'<text x="{coord(left - 10)}" y="{coord(cy + 4)}" text-anchor="end" font-size="12" fill="{INK}">'
            f"{esc(truncate(labels[i], label_chars))}</text>",
            f'<line class="tvmperf-interval" x1="{coord(x(low))}" y1="{coord(cy)}" x2="{coord(x(high))}" y2="{coord(cy)}" '
            f'stroke="{colour}" stroke-width="6" stroke-linecap="round" stroke-opacity="0.35"/>',
            *(
                f'<line x1="{coord(x(end))}" y1="{coord(cy - 6)}" x2="{coord(x(end))}" y2="{coord(cy + 6)}" '
                f'stroke="{colour}" stroke-width="1.5"/>'
                for end in (low, high)
            ),
            f'<circle class="tvmperf-marker" cx="{coord(x(ratio))}" cy="{coord(cy)}" r="6" fill="{colour}" '
            f'stroke="#ffffff" stroke-width="1.5"/>',
            f'<text x="{coord(x1 + 12)}" y="{coord(cy + 4)}" font-size="12" fill="{value_colour}"'
            f"{weight}>{esc(value)}</text>",
        ]
        if failing[i]:  # the metric that failed the test, beside its time
            parts.append(
                f'<text class="tvmperf-failed-metric" x="{coord(x1 + 150)}" y="{coord(cy + 4)}" font-size="12" '
                f'font-weight="600" fill="{mark(Verdict.REGRESSED)}">{esc("failed: " + failing[i])}</text>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    legend = "".join(f'<span><i style="background:{VERDICT_COLOURS[v][0]}"></i>{esc(v)}</span>' for v in VERDICT_ORDER)
    return (
        '<section class="ratio"><h2>Time now vs baseline</h2>'
        '<p class="hint">Time of this run over the baseline\u2019s as the verdict measured it (log scale): '
        "a/b, paired with the baseline\u2019s own artifact timed in the same rounds; normalized, each over the "
        "reference kernel; raw, the medians. The dot is the ratio, the bar its interval, coloured by the time "
        "verdict; right of the dashed line is slower. A test failed by another metric (an instruction count, the "
        "simulated cost) names it on its row.</p>"
        f'<div class="legend">{legend}</div>' + "".join(parts) + "</section>"
    )


MAX_KERNELS = 15  # bars per chart; the rest are counted


def _kernel_chart(test: ResultEntry, rows: list[tuple[str, float | None, float | None]]) -> str:
    hidden = max(len(rows) - MAX_KERNELS, 0)
    rows = rows[:MAX_KERNELS]
    any_base = any(b is not None for _, _, b in rows)
    label_chars = min(max(len(r[0]) for r in rows), 40)
    left = max(140.0, 24 + text_width("x" * label_chars, 12))
    width, right, top = 1000, 190, 8
    # a baseline bar over a bar for now; with nothing to compare with, one bar per kernel
    bar_h, gap, group_gap = (11, 2, 12) if any_base else (14, 0, 9)
    group_h = (2 * bar_h + gap if any_base else bar_h) + group_gap
    height = top + group_h * len(rows) + 6
    x0, x1 = left, width - right
    vmax = max(max(v or 0.0, b or 0.0) for _, v, b in rows) or 1.0

    def w(v: float) -> float:
        return max(v, 0.0) / vmax * (x1 - x0)

    label = test_label(test)
    parts = [
        _svg("kernels", width, height, f"per-kernel time now vs baseline for {esc(label)}", label),
        f'<line x1="{coord(x0)}" y1="{top - 4}" x2="{coord(x0)}" y2="{height - 4}" stroke="{GRID}" stroke-width="1"/>',
    ]
    for i, (name, now, base) in enumerate(rows):
        y = top + i * group_h
        yn = y + bar_h + gap if any_base else y
        label_y = (y + bar_h + gap / 2 + 4) if any_base else (y + bar_h / 2 + 4)
        parts += [
            f'<g class="tvmperf-kernel"><title>{esc(name)}: now {esc(fmt_time(now))}, '
            f"baseline {esc(fmt_time(base))}</title>",
            f'<text x="{coord(left - 10)}" y="{coord(label_y)}" text-anchor="end" font-size="12" '
            f'fill="{INK}">{esc(cut_label(name, label_chars))}</text>',
        ]
        if base is not None:
            parts += [
                f'<rect class="tvmperf-bar-baseline" x="{coord(x0)}" y="{coord(y)}" width="{coord(w(base))}" '
                f'height="{bar_h}" rx="2" fill="{BASELINE_BAR}"/>',
                f'<text x="{coord(x0 + w(base) + 6)}" y="{coord(y + bar_h - 2)}" font-size="10.5" fill="{MUTED}">'
                f"{esc(fmt_time(base))}</text>",
            ]
        elif any_base:
            parts.append(
                f'<text x="{coord(x0 + 6)}" y="{coord(y + bar_h - 2)}" font-size="10.5" fill="{MUTED}">'
                "no baseline</text>"
            )
        if now is not None:
            # red only for a change worth reading: per-kernel times are single medians, a few % is noise
            slower = base is not None and now > base * KERNEL_RED_RATIO and now - base >= MIN_KERNEL_DELTA_S
            colour = NEUTRAL_MARK if base is None else VERDICT_COLOURS[Verdict.REGRESSED if slower else Verdict.PASS][0]
            extra = f" ({now / base:.2f}x)" if base is not None and base > 0 else ""
            parts += [
                f'<rect class="tvmperf-bar-now" x="{coord(x0)}" y="{coord(yn)}" width="{coord(w(now))}" '
                f'height="{bar_h}" rx="2" fill="{colour}"/>',
                f'<text x="{coord(x0 + w(now) + 6)}" y="{coord(yn + bar_h - 2)}" font-size="10.5" fill="{INK}"'
                f' font-weight="600">{esc(fmt_time(now) + extra)}</text>',
            ]
        parts.append("</g>")
    parts.append("</svg>")
    ratio = num(test.time.ratio) if test.time is not None else None
    sub = [f"whole test {fmt_ratio(ratio)}"] if ratio is not None else []
    sub += [s for s in (test.executor, test.target) if s]
    if not any_base:
        sub.append("the baseline has no per-kernel times")
    if hidden:
        sub.append(f"{hidden} more kernel{'s' if hidden != 1 else ''} not shown")
    return (
        f'<div class="card"><h3 title="{esc(test.nodeid or label)}">{esc(label)}</h3>'
        f'<div class="sub">{esc(" · ".join(sub))}</div>' + "".join(parts) + "</div>"
    )


def kernels_section(tests: Sequence[ResultEntry]) -> str:
    charts = []
    for t in tests:
        rows = [(k.name or "?", num(k.time_s), num(k.baseline_time_s)) for k in t.kernels]  # (name, now, baseline)
        rows = [r for r in rows if r[1] is not None or r[2] is not None]  # the kernels with a usable time
        if t.verdict == Verdict.REGRESSED and rows:
            charts.append(_kernel_chart(t, rows))
    if not charts:
        return ""
    legend = (
        f'<div class="legend"><span><i style="background:{BASELINE_BAR}"></i>baseline</span>'
        f'<span><i style="background:{VERDICT_COLOURS[Verdict.REGRESSED][0]}"></i>now, slower</span>'
        f'<span><i style="background:{VERDICT_COLOURS[Verdict.PASS][0]}"></i>now, not slower</span>'
        f'<span><i style="background:{NEUTRAL_MARK}"></i>now, no baseline</span></div>'
    )
    return (
        '<section class="kernels"><h2>Regressed tests: time per kernel</h2>'
        '<p class="hint">Where the time went: each kernel\u2019s time in this run against the baseline.</p>'
        f"{legend}{''.join(charts)}</section>"
    )


def axis_ends(first: str, last: str) -> tuple[str, str]:
    """The labels under a trend's ends (from ISO 8601 ``created``): their dates; runs of one day
    the date once, with each end's time (``2026-11-24 09:05`` ... ``13:40``); one moment once."""
    day0, day1 = first[:10], last[:10]
    if day0 != day1:
        return day0, day1
    t0, t1 = first[11:16], last[11:16]
    if not t0 or not t1 or t0 == t1:
        return (f"{day0} {t0}".strip() if t0 == t1 else day0), ""
    return f"{day0} {t0}", t1


def rerecords(nodeid: str, runs: Sequence[HistoryRun]) -> list[int]:
    """The runs (indices) where the test's baseline differs from its previous one (re-recorded)."""
    out, before = [], None
    for i, run in enumerate(runs):
        digest = run.baselines.get(nodeid)
        if digest is None:
            continue
        if before is not None and digest != before:
            out.append(i)
        before = digest
    return out


def _trend_chart(test: ResultEntry, series: list[tuple[float | None, str, str]], rerecorded: Sequence[int] = ()) -> str:
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

    label = test_label(test)
    parts = [_svg("trend", width, height, f"median time over runs for {esc(label)}", label)]
    parts.append(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="{GRID}"/>')
    for i in rerecorded:  # the baseline re-recorded and accepted between run i - 1 and run i
        xm = coord((x(i - 1) + x(i)) / 2 if i > 0 else x(i))
        parts.append(
            f'<g class="tvmperf-rerecord"><title>baseline re-recorded before {esc(series[i][2])}</title>'
            f'<line x1="{xm}" y1="{y0 - 6}" x2="{xm}" y2="{y1}" stroke="{MUTED}" stroke-width="1.5" '
            f'stroke-dasharray="3 2"/><path d="M{xm},{y0 - 6} l4,-4 l-8,0 z" fill="{MUTED}"/></g>'
        )
    # the line, broken where a run has no time
    for timed, run in groupby(enumerate(series), key=lambda point: point[1][0] is not None):
        seg = [f"{coord(x(i))},{coord(y(v))}" for i, (v, _, _) in run] if timed else []
        if len(seg) > 1:
            parts.append(
                f'<polyline class="tvmperf-trend-line" points="{" ".join(seg)}" fill="none" stroke="#3d5a80" '
                f'stroke-width="2" stroke-linejoin="round" stroke-linecap="round"/>'
            )
    for i, (v, verdict, created) in enumerate(series):
        if v is not None:
            parts.append(
                f'<circle class="tvmperf-trend-point" cx="{coord(x(i))}" cy="{coord(y(v))}" '
                f'r="{4.5 if i == n - 1 else 3}" fill="{mark(verdict) if verdict else MUTED}" '
                f'stroke="#ffffff" stroke-width="1">'
                f"<title>{esc(created)}: {esc(fmt_time(v))}{(' ' + esc(verdict)) if verdict else ''}</title></circle>"
            )
    hi_v, lo_v = max(values), min(values)
    for v in (hi_v, lo_v) if y(lo_v) - y(hi_v) > 12 else (hi_v,):  # the lowest too, where apart from the highest
        parts.append(
            f'<text x="{x1 + 8}" y="{coord(y(v) + 4)}" font-size="10.5" fill="{MUTED}">{esc(fmt_time(v))}</text>'
        )
    first, last = axis_ends(series[0][2], series[-1][2])
    parts.append(
        f'<text class="tvmperf-trend-axis" x="{x0}" y="{height - 2}" font-size="10" fill="{MUTED}">{esc(first)}</text>'
    )
    if last:
        parts.append(
            f'<text class="tvmperf-trend-axis" x="{x1}" y="{height - 2}" font-size="10" text-anchor="end" '
            f'fill="{MUTED}">{esc(last)}</text>'
        )
    parts.append("</svg>")
    last_v = next((v for v, _, _ in reversed(series) if v is not None), None)
    return (
        f'<div class="card"><h3 title="{esc(test.nodeid or label)}">{esc(label)}</h3>'
        f'<div class="sub">{n} run{"s" if n != 1 else ""} &middot; latest median {esc(fmt_time(last_v))}</div>'
        f"{''.join(parts)}</div>"
    )


def trends_section(created: str | None, tests: Sequence[ResultEntry], history: Sequence[HistoryRun]) -> str:
    runs = list(history)
    if not runs:
        return ""
    # this run is the trend's last point, unless the caller already put it in the history
    if runs[-1].created != created or created is None:
        points = {t.nodeid: (t.time.median_s if t.time is not None else None, verdict_of(t)) for t in tests}
        digests = {t.nodeid: d for t in tests if (d := baseline_digest(t)) is not None}
        runs.append(HistoryRun(created, points, baselines=digests))
    cards = []
    for t in tests:
        # (median_s or None, verdict, created) per run
        series = [(positive(m), v, run.created or "") for run in runs for m, v in [run.tests.get(t.nodeid, (None, ""))]]
        if sum(v is not None for v, _, _ in series) >= 2:  # one point is no trend
            cards.append(_trend_chart(t, series, rerecords(t.nodeid, runs)))
    if not cards:
        return (
            '<section class="trends"><h2>Median time over runs</h2>'
            f'<p class="empty">{len(runs)} run{"s" if len(runs) != 1 else ""} in the history: no test has a median '
            "time in two of them yet, so there is no trend to draw.</p></section>"
        )
    return (
        '<section class="trends"><h2>Median time over runs</h2>'
        f'<p class="hint">{len(runs)} runs, oldest on the left, this run last; dots coloured by verdict; '
        "a dashed mark: the baseline was re-recorded (accepted) between two runs.</p>"
        f'<div class="grid">{"".join(cards)}</div></section>'
    )
