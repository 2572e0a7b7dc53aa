"""The HTML report's failures section (pure): each test's message as the terminal shows it,
the added and removed lines of its bytecode diff coloured."""

from __future__ import annotations

from typing import Sequence

from pytest_tvmperf.report.html_parts import esc, pill, test_label, verdict_of
from pytest_tvmperf.judge.verdict import FAILING
from pytest_tvmperf.result.entry import ResultEntry

#: the section's own style (the page's CSS is in html_parts.py)
STYLE = (
    ".failures details { margin: 8px 0; border: 1px solid #dde3ea; border-radius: 6px; padding: 6px 10px; }"
    ".failures summary { cursor: pointer; font-weight: 600; }"
    ".failures pre { white-space: pre-wrap; font-size: 12px; line-height: 1.4; margin: 8px 0 0; }"
    ".failures .add { color: #1a7f37; } .failures .del { color: #cf222e; }"
)


def _line(line: str, in_diff: bool) -> str:
    text = esc(line)
    body = line.strip()
    if in_diff and body.startswith("+") and not body.startswith("+++"):
        return f'<span class="add">{text}</span>'
    if in_diff and body.startswith("-") and not body.startswith("---"):
        return f'<span class="del">{text}</span>'
    return text


def message_html(message: str) -> str:
    """A message as preformatted HTML, the lines of its bytecode diff coloured."""
    out, in_diff = [], False
    for line in message.splitlines():
        out.append(_line(line, in_diff))
        if line.startswith("VM bytecode, baseline -> now:"):
            in_diff = True
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
    return f'<section class="failures"><style>{STYLE}</style><h2>Failures and messages</h2>{"".join(items)}</section>'
