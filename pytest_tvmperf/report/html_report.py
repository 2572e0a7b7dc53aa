"""Pure HTML: one self-contained page for a run's results: inline CSS and SVG, no JavaScript,
nothing fetched, every text from the results escaped. Counts per verdict, time ratios, regressed
tests' kernels, trends over a history (a line needs a median in two runs), peers, compile_s, per
layer, relations, a table of every test, each test's message (its bytecode diff coloured)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from pytest_tvmperf.values.compile_times import fmt_seconds
from pytest_tvmperf.values.peak_memory import ON_HOST
from pytest_tvmperf.values.resources import COMPILE_S, RESOURCE_NAMES
from pytest_tvmperf.report.html_parts import CSS, NEUTRAL, VERDICT_COLOURS, VERDICT_ORDER, esc, fmt_ratio, num, pill
from pytest_tvmperf.report.html_parts import positive, scroll_table, test_label, verdict_of
from pytest_tvmperf.report.html_plot import kernels_section, ratio_plot, trends_section
from pytest_tvmperf.judge.compare import SAME_PROGRAM_CELL
from pytest_tvmperf.judge.layer_match import LayerRow, LayerTable
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME
from pytest_tvmperf.measure.metric_sources import fmt_count
from pytest_tvmperf.result.compile_text import compile_cell
from pytest_tvmperf.result.text import fmt_time, limit_sign
from pytest_tvmperf.report.history import HistoryRun
from pytest_tvmperf.result.entry import ResultEntry, TimeCell
from pytest_tvmperf.judge.verdict import FAILING, PeerCell, Verdict


def _header(created: str | None, tests: Sequence[ResultEntry]) -> str:
    counts = Counter(verdict_of(t) for t in tests)
    known = [(v, counts[v]) for v in VERDICT_ORDER if counts.get(v)]
    others = sorted((v, n) for v, n in counts.items() if v not in VERDICT_ORDER)
    items = [
        f'<li class="count" data-verdict="{esc(v)}" style="background:{bg};color:{fg}"><b>{n}</b> {esc(v)}</li>'
        for v, n in known + others
        for bg, fg in [VERDICT_COLOURS.get(v, NEUTRAL)]
    ]
    total = f"{len(tests)} test{'s' if len(tests) != 1 else ''}"
    when = f"run of {esc(created)}" if created else "run time unknown"
    return (
        f'<header><h1>pytest-tvmperf report</h1><p class="created">{when} &middot; {total}</p>'
        f'<ul class="counts">{"".join(items)}</ul></header>'
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


def _table(tests: Sequence[ResultEntry]) -> str:
    records = [r for t in tests for r in (t.record, t.baseline) if r is not None]
    sim = any(r.exact.scalar("cpu_instructions") is not None for r in records)

    def shown(m: str) -> bool:  # some test measured it or could not; not for a host target's device peak
        return any(r.exact.scalar(m) is not None or r.exact.not_measured.get(m, ON_HOST) != ON_HOST for r in records)

    res = [m for m in RESOURCE_NAMES if shown(m)]
    counts = ["instructions", *(["cpu_instructions"] if sim else []), *res]
    head = (
        *("test", "executor", "target", "median", "baseline", "ratio [interval] mode", "instr now / base"),
        *(("simulated instr now / base",) if sim else ()),
        *(f"{m} now / base" for m in res),
        "verdict",
    )
    rows = []
    for t in tests:
        time = t.time or TimeCell()
        verdict = verdict_of(t)
        note_html = f'<span class="note">{esc(t.note)}</span>' if t.note else ""
        failed = "".join(f'<span class="failed-metric">{esc(m)}</span>' for m in t.failed)  # under the verdict
        rows.append(
            f'<tr data-verdict="{esc(verdict)}">'
            f'<td class="test" title="{esc(t.nodeid or test_label(t))}">{esc(test_label(t))}{note_html}</td>'
            f'<td class="short">{esc(t.executor or "-")}</td>'
            f'<td class="short">{esc(t.target or "-")}</td>'
            f'<td class="num">{esc(fmt_time(num(time.median_s)))}</td>'
            f'<td class="num">{esc(fmt_time(num(time.baseline_s)))}</td>'
            f'<td class="num">{_ratio_cell(time)}</td>'
            + "".join(f'<td class="num">{_instr_cell(t, m)}</td>' for m in counts)
            + f"<td>{pill(verdict)}{failed}</td></tr>"
        )
    return "<section><h2>All tests</h2>" + scroll_table(head, rows, ' id="tvmperf-table"') + "</section>"


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


def _peer_td(peer: PeerCell | None) -> str:
    if peer is None:
        return '<td class="num">-</td>'
    status = Verdict.REGRESSED if peer.status == Verdict.EXCEEDED else str(peer.status or "")
    return f'<td class="num">{_ratio_text(peer)} {pill(status) if peer.limit is not None else ""}</td>'


def _peers_section(tests: Sequence[ResultEntry]) -> str:
    """TVM time over each peer framework's (timed side by side): one row per test."""
    with_peers = [t for t in tests if t.peers]
    if not with_peers:
        return ""
    names = sorted({p.name for t in with_peers for p in t.peers})
    rows = []
    for t in with_peers:
        cells = {p.name: p for p in t.peers}
        median = num(t.time.median_s) if t.time is not None else None
        rows.append(
            f'<tr><td class="test">{esc(test_label(t))}</td>'
            f'<td class="num">{esc(fmt_time(median))}</td>{"".join(_peer_td(cells.get(n)) for n in names)}</tr>'
        )
    table = scroll_table(("test", "tvm", *(f"tvm / {n}" for n in names)), rows, ' id="tvmperf-peers"')
    return (
        '<section class="peers"><h2>TVM time / peer framework time (side by side; below 1: TVM is faster)</h2>'
        f"{table}</section>"
    )


def _relations_section(tests: Sequence[ResultEntry]) -> str:
    """The tvmperf.assert_ratio verdicts: which two builds, their times and the ratio."""
    rows = [
        f'<tr><td class="test">{esc(test_label(t))}</td><td>{esc(r.name)}</td>'
        f'<td class="num">{esc(fmt_time(num(r.numerator_s)))}</td>'
        f'<td class="num">{esc(fmt_time(num(r.denominator_s)))}</td>'
        f'<td class="num">{_ratio_text(r)}</td><td>{pill(verdict_of(t))}</td></tr>'
        for t in tests
        if (r := t.relation) is not None
    ]
    if not rows:
        return ""
    table = scroll_table(
        ("test", "a / b", "a", "b", "ratio [interval] vs limit", "verdict"), rows, ' id="tvmperf-relations"'
    )
    return f'<section class="relations"><h2>Relations (tvmperf.assert_ratio)</h2>{table}</section>'


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


#: rows shown per layer table (the rest summed in one row)
MAX_ROWS = 25
_TVM, _PEER = "#d9534f", "#5b8def"


def _bar(seconds: float, longest: float, colour: str, title: str) -> str:
    width = 0.0 if longest <= 0 else 100.0 * seconds / longest
    return (
        f'<div title="{esc(title)}" style="height:8px;margin:1px 0;background:{colour};'
        f'width:{width:.2f}%;min-width:{1 if seconds > 0 else 0}px"></div>'
    )


def _layer_time(row: LayerRow, side: str) -> str:
    """A side's time; the time outside every call with its noise."""
    seconds = row.tvm_s if side == "tvm" else row.peer_s
    noise = f" ± {fmt_time(row.noise_s)}" if row.outside == side and row.noise_s > 0 else ""
    return esc(fmt_time(seconds) + noise)


def _gflops(row: LayerRow, side: str) -> str:
    value = row.gflops(side)
    return "-" if value is None else f"{value:.1f}"


def _layer_table(test: ResultEntry, table: LayerTable) -> str:
    losers = table.losers()
    order = losers + [r for r in table.rows if r not in losers]
    shown, rest = order[:MAX_ROWS], order[MAX_ROWS:]
    longest = max((max(r.tvm_s, r.peer_s) for r in shown), default=0.0)
    rows = []
    for row in shown:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        kernels = ", ".join(dict.fromkeys(c.name for c in row.tvm)) or "-"
        bars = _bar(row.tvm_s, longest, _TVM, f"TVM {fmt_time(row.tvm_s)}")
        bars += _bar(row.peer_s, longest, _PEER, f"{table.peer} {fmt_time(row.peer_s)}")
        rows.append(
            f'<tr><td class="test">{esc(row.label)}</td><td style="min-width:12em">{bars}</td>'
            f'<td class="num">{_layer_time(row, "tvm")}</td><td class="num">{_layer_time(row, "peer")}</td>'
            f'<td class="num">{esc(ratio)}</td><td class="num">{_gflops(row, "tvm")}</td>'
            f'<td class="num">{_gflops(row, "peer")}</td><td>{esc(kernels)}</td></tr>'
        )
    if rest:
        rows.append(
            f'<tr><td class="test">{len(rest)} more row(s)</td><td></td>'
            f'<td class="num">{esc(fmt_time(sum(r.tvm_s for r in rest)))}</td>'
            f'<td class="num">{esc(fmt_time(sum(r.peer_s for r in rest)))}</td><td colspan="4"></td></tr>'
        )
    p = table.peer
    head = ("layer", f"TVM (red) / {p} (blue)", "TVM", p, "TVM / peer", "TVM GFLOPS", f"{p} GFLOPS", "TVM kernels")
    notes = "".join(f"<p>{esc(n)}</p>" for n in table.notes)
    return (
        f"<h3>{esc(test_label(test))} against {esc(p)} (whole run, timed with the rows: TVM {esc(fmt_time(table.tvm_total_s))}, "
        f"{esc(p)} {esc(fmt_time(table.peer_total_s))})</h3>{notes}"
        + scroll_table(head, rows, ' class="tvmperf-layers"')
    )


def layers_section(tests: Sequence[ResultEntry]) -> str:
    """Every test's per-layer tables, or "" when no test has one."""
    parts = [_layer_table(t, table) for t in tests for table in t.layers]
    if not parts:
        return ""
    return (
        '<section class="layers" id="tvmperf-layers"><h2>Per layer: where TVM loses time to its peers '
        "(layers losing the most first; time outside every kernel or layer is a row of its own, measured in the "
        "same runs as the rows and the whole run, with its noise)</h2>"
        f"{''.join(parts)}</section>"
    )


#: the failures section's own style (the page's CSS is in html_parts.py)
FAILURES_STYLE = (
    ".failures details { margin: 8px 0; border: 1px solid #dde3ea; border-radius: 6px; padding: 6px 10px; }"
    ".failures summary { cursor: pointer; font-weight: 600; }"
    ".failures pre { white-space: pre-wrap; font-size: 12px; line-height: 1.4; margin: 8px 0 0; }"
    ".failures .add { color: #1a7f37; } .failures .del { color: #cf222e; }"
)


def message_html(message: str) -> str:
    """A message as preformatted HTML, the lines of its bytecode diff coloured."""
    out, in_diff = [], False
    for line in message.splitlines():
        text, body = esc(line), line.strip()
        if in_diff and body.startswith("+") and not body.startswith("+++"):
            text = f'<span class="add">{text}</span>'
        elif in_diff and body.startswith("-") and not body.startswith("---"):
            text = f'<span class="del">{text}</span>'
        out.append(text)
        in_diff = in_diff or line.startswith("VM bytecode, baseline -> now:")
    return "<pre>" + "\n".join(out) + "</pre>"


def failures_section(tests: Sequence[ResultEntry]) -> str:
    """One open <details> per test with a message, failures first."""
    shown = [t for t in tests if t.message]
    if not shown:
        return ""
    shown.sort(key=lambda t: (verdict_of(t) not in FAILING, t.nodeid))
    items = [
        f'<details open id="failure-{i}"><summary>{esc(test_label(t))} {pill(verdict_of(t))}</summary>'
        f"{message_html(t.message)}</details>"
        for i, t in enumerate(shown)
    ]
    return f'<section class="failures"><style>{FAILURES_STYLE}</style><h2>Failures and messages</h2>{"".join(items)}</section>'


def render_page(
    entries: Sequence[ResultEntry],
    created: str | None,
    history: Sequence[Mapping[str, Any]] | None = None,
    after_header: Sequence[str] = (),
) -> str:
    """One self-contained HTML page for a run's entries; ``history``: earlier runs' history
    lines, oldest first (read leniently); ``after_header``: ``ReportSection.html``s."""
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
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>{''.join(body)}</main></body></html>\n"
    )


def render_html(results: Mapping[str, Any], history: list[dict] | None = None) -> str:
    """The page of a results document as JSON, read leniently (it shows what it can)."""
    results = results if isinstance(results, Mapping) else {}
    raw = results.get("tests") if isinstance(results.get("tests"), list) else []
    entries = [ResultEntry.from_json(t, strict=False) for t in raw if isinstance(t, Mapping)]
    return render_page(entries, results.get("created"), history)
