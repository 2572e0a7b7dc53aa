"""Pure HTML: one self-contained page for a run's results (the ``result/entry.py`` schema).

``render_page(entries, created, history)`` returns a page with inline CSS and inline SVG (drawn
in ``html_plot.py``; colours and CSS in ``html_parts.py``):
no JavaScript, no fonts, images or anything else fetched from anywhere. It shows

- the run's time and the number of tests per verdict;
- "time now vs baseline": each timed test's ratio with its interval, on a log scale;
- for each regressed test that has per-kernel times, its kernels now vs baseline;
- with ``history`` (earlier runs, oldest first), each test's median time over the runs, this
  run last (a test needs a median in two runs for a line);
- a table of every test.

Every piece of text from the results goes through ``html.escape``. ``render_html(results,
history)`` takes a results document as JSON and reads it leniently (``ResultEntry.from_json(...,
strict=False)``): missing or odd keys (``time``, ``kernels``, ``record``, ``baseline``, ...) are
shown as "-" or "n/a".
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from pytest_tvmperf.values.peak_memory import ON_HOST
from pytest_tvmperf.values.resources import RESOURCE_NAMES
from pytest_tvmperf.report.html_parts import (
    CSS,
    VERDICT_ORDER,
    colours,
    esc,
    fmt_ratio,
    num,
    pill,
    positive,
    test_label,
    verdict_of,
)
from pytest_tvmperf.report.html_failures import failures_section
from pytest_tvmperf.report.html_layers import layers_section
from pytest_tvmperf.report.html_compile import compile_section
from pytest_tvmperf.report.html_plot import kernels_section, ratio_plot, trends_section
from pytest_tvmperf.judge.compare import SAME_PROGRAM_CELL
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME
from pytest_tvmperf.measure.metric_sources import fmt_count
from pytest_tvmperf.result.text import fmt_time, limit_sign
from pytest_tvmperf.report.history import HistoryRun
from pytest_tvmperf.result.entry import ResultEntry, TimeCell
from pytest_tvmperf.judge.verdict import PeerCell, Verdict


# --------------------------------------------------------------------------- header and table


def _ordered_counts(tests: Sequence[ResultEntry]) -> list[tuple[str, int]]:
    counts = Counter(verdict_of(t) for t in tests)
    known = [(v, counts[v]) for v in VERDICT_ORDER if counts.get(v)]
    others = sorted((v, n) for v, n in counts.items() if v not in VERDICT_ORDER)
    return known + others


def _header(created: str | None, tests: Sequence[ResultEntry]) -> str:
    items = []
    for verdict, n in _ordered_counts(tests):
        bg, fg = colours(verdict)
        items.append(
            f'<li class="count" data-verdict="{esc(verdict)}" style="background:{bg};color:{fg}">'
            f"<b>{n}</b> {esc(verdict)}</li>"
        )
    total = f"{len(tests)} test{'s' if len(tests) != 1 else ''}"
    when = f"run of {esc(created)}" if created else "run time unknown"
    return (
        "<header>"
        f"<h1>pytest-tvmperf report</h1>"
        f'<p class="created">{when} &middot; {total}</p>'
        f'<ul class="counts">{"".join(items)}</ul>'
        "</header>"
    )


def _ratio_cell(time: TimeCell) -> str:
    ratio, low, high = num(time.ratio), num(time.low), num(time.high)
    if ratio is not None:
        text = fmt_ratio(ratio)
        if low is not None and high is not None:
            text += f" [{low:.2f}\u2013{high:.2f}]"
        mode = f"{time.mode}, {OWN_RUN_TIME}" if time.mode and time.estimate == OWN_RUN_TIME else time.mode
        return esc(text) + (f'<span class="mode">{esc(mode)}</span>' if mode else "")
    if time.mode == SAME_PROGRAM_CELL:  # no ratio was measured (the baseline's own program): say why
        return f'<span class="mode">{esc(time.mode)}</span>'
    median, base = positive(time.median_s), positive(time.baseline_s)
    if median is not None and base is not None:
        return esc(fmt_ratio(median / base))
    return "-"


def _instr_cell(test: ResultEntry, metric: str = "instructions") -> str:
    now, base = (r.exact.scalar(metric) if r is not None else None for r in (test.record, test.baseline))
    why = test.record.exact.not_measured.get(metric, "") if test.record is not None else ""
    if now is None and base is None:
        return f'<span title="{esc(why)}">n/a</span>' if why else "n/a"
    cls = ""
    if now is not None and base is not None and now != base:
        cls = ' class="worse"' if now > base else ' class="better"'
    shown = f'<span title="{esc(why)}">n/a</span>' if now is None and why else _count_html(now)
    return f"<span{cls}>{shown}</span> / {_count_html(base)}"


def _count_html(value: float | None) -> str:
    """A count as people read it (``1.28 G``), the exact number on hover; small ones as they are."""
    if value is None:
        return "n/a"
    exact = str(int(value)) if float(value).is_integer() else str(value)
    if abs(value) < 10_000:
        return esc(exact)
    return f'<span title="{esc(exact)}">{esc(fmt_count(value))}</span>'


def _failed_cell(test: ResultEntry, verdict: str) -> str:
    """The verdict's pill, and the metrics that failed the test under it."""
    failed = "".join(f'<span class="failed-metric">{esc(m)}</span>' for m in test.failed)
    return pill(verdict) + failed


def _table(tests: Sequence[ResultEntry]) -> str:
    sim = any(
        r is not None and r.exact.scalar("cpu_instructions") is not None for t in tests for r in (t.record, t.baseline)
    )
    res = [
        m
        for m in RESOURCE_NAMES
        if any(
            # a column where some test measured it or could not; not for a host target's device peak
            r is not None and (r.exact.scalar(m) is not None or r.exact.not_measured.get(m, ON_HOST) != ON_HOST)
            for t in tests
            for r in (t.record, t.baseline)
        )
    ]
    head = (
        "test",
        "executor",
        "target",
        "median",
        "baseline",
        "ratio [interval] mode",
        "instr now / base",
        *(("simulated instr now / base",) if sim else ()),
        *(f"{m} now / base" for m in res),
        "verdict",
    )
    rows = []
    for t in tests:
        time = t.time or TimeCell()
        verdict = verdict_of(t)
        note_html = f'<span class="note">{esc(t.note)}</span>' if t.note else ""
        rows.append(
            f'<tr data-verdict="{esc(verdict)}">'
            f'<td class="test" title="{esc(t.nodeid or test_label(t))}">{esc(test_label(t))}{note_html}</td>'
            f'<td class="short">{esc(t.executor or "-")}</td>'
            f'<td class="short">{esc(t.target or "-")}</td>'
            f'<td class="num">{esc(fmt_time(num(time.median_s)))}</td>'
            f'<td class="num">{esc(fmt_time(num(time.baseline_s)))}</td>'
            f'<td class="num">{_ratio_cell(time)}</td>'
            f'<td class="num">{_instr_cell(t)}</td>'
            + (f'<td class="num">{_instr_cell(t, "cpu_instructions")}</td>' if sim else "")
            + "".join(f'<td class="num">{_instr_cell(t, m)}</td>' for m in res)
            + f"<td>{_failed_cell(t, verdict)}</td>"
            "</tr>"
        )
    header = "".join(f"<th>{esc(h)}</th>" for h in head)
    return (
        "<section><h2>All tests</h2>"
        '<div class="scroll"><table id="tvmperf-table">'
        f"<thead><tr>{header}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody>"
        "</table></div></section>"
    )


def _ratio_text(r: PeerCell) -> str:
    ratio, low, high = positive(r.ratio), positive(r.low), positive(r.high)
    if ratio is None:
        return "-"
    interval = f" [{low:.2f}-{high:.2f}]" if low is not None and high is not None else ""
    limit = positive(r.limit)
    # the sign the verdict means (result/text.limit_sign): pass <=, exceeded >, otherwise vs
    sign = {"<=": "&le;", ">": "&gt;"}.get(limit_sign(str(r.status or "")), "vs")
    gate = f" {sign} {limit:g}" if limit is not None else ""
    return f"{ratio:.2f}x{esc(interval)}{gate}"


def _peers_section(tests: Sequence[ResultEntry]) -> str:
    """TVM time over each peer framework's (timed side by side): one row per test."""
    with_peers = [t for t in tests if t.peers]
    if not with_peers:
        return ""
    names = sorted({p.name for t in with_peers for p in t.peers})
    rows = []
    for t in with_peers:
        cells = {p.name: p for p in t.peers}
        tds = []
        for name in names:
            peer = cells.get(name)
            if peer is None:
                tds.append('<td class="num">-</td>')
                continue
            status = Verdict.REGRESSED if peer.status == Verdict.EXCEEDED else str(peer.status or "")
            shown = pill(status) if peer.limit is not None else ""
            tds.append(f'<td class="num">{_ratio_text(peer)} {shown}</td>')
        median = num(t.time.median_s) if t.time is not None else None
        rows.append(
            f'<tr><td class="test">{esc(test_label(t))}</td>'
            f'<td class="num">{esc(fmt_time(median))}</td>{"".join(tds)}</tr>'
        )
    header = "".join(f"<th>{esc(h)}</th>" for h in ("test", "tvm", *(f"tvm / {n}" for n in names)))
    return (
        '<section class="peers"><h2>TVM time / peer framework time (side by side; below 1: TVM is faster)</h2>'
        f'<div class="scroll"><table id="tvmperf-peers"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _relations_section(tests: Sequence[ResultEntry]) -> str:
    """The tvmperf.assert_ratio verdicts: which two builds, their times and the ratio."""
    rows = []
    for t in tests:
        r = t.relation
        if r is None:
            continue
        rows.append(
            f'<tr><td class="test">{esc(test_label(t))}</td><td>{esc(r.name)}</td>'
            f'<td class="num">{esc(fmt_time(num(r.numerator_s)))}</td>'
            f'<td class="num">{esc(fmt_time(num(r.denominator_s)))}</td>'
            f'<td class="num">{_ratio_text(r)}</td><td>{pill(verdict_of(t))}</td></tr>'
        )
    if not rows:
        return ""
    header = "".join(f"<th>{h}</th>" for h in ("test", "a / b", "a", "b", "ratio [interval] vs limit", "verdict"))
    return (
        '<section class="relations"><h2>Relations (tvmperf.assert_ratio)</h2>'
        f'<div class="scroll"><table id="tvmperf-relations"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


# --------------------------------------------------------------------------- the page


def render_page(
    entries: Sequence[ResultEntry],
    created: str | None,
    history: Sequence[Mapping[str, Any]] | None = None,
    after_header: Sequence[str] = (),
) -> str:
    """One self-contained HTML page for a run's entries; ``history`` holds earlier runs,
    oldest first, as history-file lines (``{"created", "tests": {nodeid: {"median_s",
    "verdict"}}}``, read leniently); ``after_header``: sections another part of the run
    adds (report/outputs.py ``ReportSection.html``), put right after the page's header."""
    runs = [HistoryRun.read(r) for r in history or () if isinstance(r, Mapping)]
    title = "pytest-tvmperf report" + (f" \u2014 {created}" if created else "")
    body = [
        _header(created, entries),
        *after_header,
        ratio_plot(entries),
        kernels_section(entries),
        trends_section(created, entries, runs) if runs else "",
        _peers_section(entries),
        compile_section(entries),
        layers_section(entries),
        _relations_section(entries),
        _table(entries),
        failures_section(entries),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title>"
        f"<style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


def render_html(results: Mapping[str, Any], history: list[dict] | None = None) -> str:
    """The page of a results document as JSON (see ``result/entry.py``), read leniently: a page
    shows what it can of whatever it is handed."""
    results = results if isinstance(results, Mapping) else {}
    raw = results.get("tests")
    entries = (
        [ResultEntry.from_json(t, strict=False) for t in raw if isinstance(t, Mapping)] if isinstance(raw, list) else []
    )
    return render_page(entries, results.get("created"), history)
