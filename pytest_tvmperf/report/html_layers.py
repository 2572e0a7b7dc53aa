"""Pure HTML: per layer, TVM beside its peer framework, the layers where TVM loses most first."""

from __future__ import annotations

from typing import Sequence

from pytest_tvmperf.report.html_parts import esc, scroll_table, test_label
from pytest_tvmperf.judge.layer_match import LayerRow, LayerTable
from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.result.text import fmt_time

#: rows shown per table (the rest summed in one row)
MAX_ROWS = 25
_TVM, _PEER = "#d9534f", "#5b8def"


def _bar(seconds: float, longest: float, colour: str, title: str) -> str:
    width = 0.0 if longest <= 0 else 100.0 * seconds / longest
    return (
        f'<div title="{esc(title)}" style="height:8px;margin:1px 0;background:{colour};'
        f'width:{width:.2f}%;min-width:{1 if seconds > 0 else 0}px"></div>'
    )


def _time(row: LayerRow, side: str) -> str:
    """A side's time; the time outside every call with its noise."""
    seconds = row.tvm_s if side == "tvm" else row.peer_s
    noise = f" ± {fmt_time(row.noise_s)}" if row.outside == side and row.noise_s > 0 else ""
    return esc(fmt_time(seconds) + noise)


def _gflops(row: LayerRow, side: str) -> str:
    value = row.gflops(side)
    return "-" if value is None else f"{value:.1f}"


def _table(test: ResultEntry, table: LayerTable) -> str:
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
            f'<td class="num">{_time(row, "tvm")}</td><td class="num">{_time(row, "peer")}</td>'
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
    parts = [_table(t, table) for t in tests for table in t.layers]
    if not parts:
        return ""
    return (
        '<section class="layers" id="tvmperf-layers"><h2>Per layer: where TVM loses time to its peers '
        "(layers losing the most first; time outside every kernel or layer is a row of its own, measured in the "
        "same runs as the rows and the whole run, with its noise)</h2>"
        f"{''.join(parts)}</section>"
    )
