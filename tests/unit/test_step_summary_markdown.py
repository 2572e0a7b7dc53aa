"""The step summary's Markdown (``$GITHUB_STEP_SUMMARY``): a test id is a code span whose
fence no backtick inside can end, and a note is escaped text, so an id or a name holding
backticks, ``<img>``, ``[x](y)`` or ``|`` renders as itself (checked with a CommonMark
renderer with GitHub's tables)."""

from __future__ import annotations

import html

import pytest

from pytest_tvmperf.judge.verdict import PeerCell, Verdict
from pytest_tvmperf.result.markdown import markdown_summary
from pytest_tvmperf.result.text import SummaryRow

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
    from pytest_tvmperf.result.markdown import md_text

    note = "baseline from another CPU model (Evil [x](http://e.x) <img src=x> `code` *b* | c)"
    page = render(f"- {md_text(note)}\n")
    assert "<a " not in page and "<img" not in page and "<em>" not in page
    assert page.count("<code>") == 1 and "<code>http://e.x</code>" in page  # the URL: text in a code span
    assert note in html.unescape(_text_of(page))
    assert "<h1>" not in render(f"- {md_text('# heading')}\n")


def _text_of(page: str) -> str:
    import re

    return html.escape(html.unescape(re.sub(r"<[^>]+>", "", page)), quote=False)


def test_what_github_links_by_itself_is_put_in_code_spans():
    """issue 66: a PR entry's text reached the change report and the step summary with a bare URL, a
    www. host, an @mention and #1 intact, which GitHub renders as links, a mention and a reference
    (with no Markdown syntax: CommonMark leaves them as text, so each must be in a code span)."""
    from pytest_tvmperf.result.markdown import md_text

    note = "perf reviewed at https://evil.example/login?next=approve cc @octocat, see #1, www.evil.example, a/b#2"
    page = render(f"- {md_text(note)}\n")
    for token in ("https://evil.example/login?next=approve", "@octocat", "#1", "www.evil.example", "a/b#2"):
        assert f"<code>{html.escape(token, quote=False)}</code>" in page, token
    assert html.unescape(_text_of(page)).strip() == note
    # the same in a summary table's cell (a note that reaches a verdict cell, a peer cell)
    rows = [SummaryRow("test_a", "prim", "llvm", 2e-3, 1e-3, None, None, "regressed", note=note)]
    table = markdown_summary(rows)
    assert "`@octocat`" in table and "`https://evil.example/login?next=approve`" in table
