"""Pure: the per-layer table as text: its lines, the layers that lose most to
the peer in a failure message, and the run summary's lines (the matching is judge/layer_match.py)."""

from __future__ import annotations

from typing import Iterable, Sequence

from pytest_tvmperf.judge.layer_match import LayerRow, LayerTable
from pytest_tvmperf.result.text import text_table


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _cell(row: LayerRow, side: str) -> str:
    """A side's time in ms; the time outside every call with its noise (``0.120±0.050``)."""
    seconds = row.tvm_s if side == "tvm" else row.peer_s
    return f"{_ms(seconds)}±{_ms(row.noise_s)}" if row.outside == side and row.noise_s > 0 else _ms(seconds)


def _gf(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table_lines(table: LayerTable, limit: int | None = None) -> list[str]:
    """The table as text, the layers that lose the most first (``limit`` of them, the rest summed)."""
    losers = table.losers()
    shown = losers + [r for r in table.rows if r not in losers] if limit is None else losers[:limit]
    p = table.peer
    header = ["#", "layer", "TVM ms", f"{p} ms", "lost ms", "TVM/peer", "TVM GFLOPS", f"{p} GFLOPS", "TVM kernels"]
    body = [
        [
            str(i),
            row.label,
            _cell(row, "tvm"),
            _cell(row, "peer"),
            _ms(row.lost_s),
            "-" if row.ratio is None else f"{row.ratio:.2f}x",
            _gf(row.gflops("tvm")),
            _gf(row.gflops("peer")),
            ", ".join(dict.fromkeys(c.name for c in row.tvm)) or "-",
        ]
        for i, row in enumerate(shown, 1)
    ]
    lines = [
        f"per layer, TVM against {table.peer} (whole run, timed with the rows: TVM {_ms(table.tvm_total_s)} ms, "
        f"{table.peer} {_ms(table.peer_total_s)} ms; layers where TVM loses the most first; the time outside "
        f"every call with its noise, not ranked within it of zero):"
    ]
    lines += ["  " + line for line in text_table(header, body)]
    others = [r for r in table.rows if r not in shown] if limit is not None else []
    if others:
        lines.append(
            f"  ... {len(others)} more row(s): TVM {_ms(sum(r.tvm_s for r in others))} ms, "
            f"{table.peer} {_ms(sum(r.peer_s for r in others))} ms"
        )
    lines += [f"  note: {n}" for n in table.notes]
    return lines


def loser_line(table: LayerTable, n: int = 3) -> str:
    """One summary line: the ``n`` layers that lose the most time to the peer."""
    losers = [r for r in table.losers(n) if r.lost_s > 0]
    if not losers:
        return f"no layer is slower under TVM than under {table.peer}"
    parts = (f"{r.label}: +{_ms(r.lost_s)} ms" + (f", {r.ratio:.1f}x" if r.ratio is not None else "") for r in losers)
    return f"layers losing most to {table.peer}: " + "; ".join(parts)


#: layers shown in a failure message (the rest summed on one line)
MESSAGE_LAYERS = 5


def with_layers(message: str, tables: Sequence[LayerTable]) -> str:
    """A failure message with the per-layer tables after it (the layers that lose the most)."""
    if not tables or not message:
        return message
    return "\n".join([message, *(line for t in tables for line in table_lines(t, MESSAGE_LAYERS))])


def summary_lines(tests: Iterable[tuple[str, Sequence[LayerTable]]], n: int = 3) -> list[str]:
    """The terminal summary's lines: per test with tables, the ``n`` layers that lose the most."""
    lines = [f"  {test_id}: {loser_line(table, n)}" for test_id, tables in tests for table in tables]
    if not lines:
        return []
    return [
        "tvmperf: per layer, where TVM loses time to its peers (--tvmperf-layers; tables in the "
        "failure messages, the JSON and the HTML report):",
        *lines,
    ]
