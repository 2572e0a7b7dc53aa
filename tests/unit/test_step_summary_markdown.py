"""The step summary's Markdown (``$GITHUB_STEP_SUMMARY``): a test id is a code span whose
fence no backtick inside can end, and a note is escaped text, so an id or a name holding
backticks, ``<img>``, ``[x](y)`` or ``|`` renders as itself (checked with a CommonMark
renderer with GitHub's tables)."""

from __future__ import annotations

import html

import pytest

from pytest_tvmperf.judge.verdict import PeerCell, Verdict
from pytest_tvmperf.result.text import SummaryRow, markdown_summary

markdown_it = pytest.importorskip("markdown_it", reason="a CommonMark renderer checks the Markdown")

HOSTILE_IDS = [
    "test_a[`x`](http://e.x)",
    "test_b[x` <img src=x onerror=alert(1)> `y]",
    "test_c[[x](y)]",
    "test_d[``` fence ```]",
    "`test_e`",
    "test_f[a|b]",
    "test_g[<b>bold</b> **strong** _em_]",
]


def render(text: str) -> str:
    return markdown_it.MarkdownIt("commonmark").enable("table").render(text)


@pytest.mark.parametrize("test_id", HOSTILE_IDS)
def test_a_test_id_renders_as_itself_in_a_code_span(test_id):
    rows = [
        SummaryRow(
            test_id,
            "prim",
            "llvm",
            2e-3,
            1e-3,
            None,
            None,
            "regressed",
            ratio=2.0,
            low=1.9,
            high=2.1,
            mode="a/b",
            peers=(PeerCell("numpy", 0.5, 0.45, 0.55, Verdict.NOT_GATED, None),),
        )
    ]
    page = render(markdown_summary(rows))
    assert "<a " not in page and "<img" not in page and "<b>" not in page and "<strong>" not in page
    assert page.count(f"<code>{html.escape(test_id, quote=False)}</code>") == 2  # the summary and the peer table
    assert page.count("<td>") == page.count("<th>")  # one row per table: no cell split by a | of the id's


def test_a_note_from_data_renders_as_itself():
    from pytest_tvmperf.result.text import md_text

    note = "baseline from another CPU model (Evil [x](http://e.x) <img src=x> `code` *b* | c)"
    page = render(f"- {md_text(note)}\n")
    assert "<a " not in page and "<img" not in page and "<code>" not in page and "<em>" not in page
    assert html.escape(note, quote=False) in page
    assert "<h1>" not in render(f"- {md_text('# heading')}\n")
