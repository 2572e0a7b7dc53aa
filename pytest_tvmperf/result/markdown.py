"""The run's words as GitHub Markdown: the step summary's table (``$GITHUB_STEP_SUMMARY``), the
text, cells and code spans that render as text whatever the data holds (issue 66: no link, mention
or reference from a file), and the ``::error`` annotation on a test's line."""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.text import SummaryRow, peer_cells, row_cells, summary_legend, summary_notes
from pytest_tvmperf.values.printable import safe


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def markdown_summary(rows: Sequence[SummaryRow]) -> str:
    """The summary table as Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
    counts = Counter(str(r.headline_verdict) for r in rows)
    head = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    sim = any(r.cpu_instructions is not None for r in rows)
    res = any(r.shows("alloc/code") or r.shows("peak") for r in rows)
    columns = [
        *("test", "executor", "target", "median", "baseline", "ratio [CI]", "instructions now/base"),
        *(["simulated instructions now/base"] if sim else []),
        *(["alloc/code/peak"] if res else []),
        "verdict",
    ]
    lines = [f"### pytest-tvmperf: {head}", "", _md_row(columns), "|" + "---|" * len(columns)]
    icon = {Verdict.REGRESSED: "❌", Verdict.INCONCLUSIVE: "⚠️", Verdict.IMPROVED: "✅", Verdict.PASS: "✔️"}
    for r in rows:
        # the verdict: ``⚠️ pass (vs numpy inconclusive)`` where a peer gate could not tell
        mark = icon.get(Verdict.known(str(r.headline_verdict)), "")  # type: ignore[call-overload]
        held = f" (vs {', '.join(r.held_peers)} inconclusive)" if r.headline_verdict != r.verdict else ""
        cells = [
            *row_cells(r),
            *([r.cpu_cell] if sim else []),
            *([f"{r.resources_cell}/{r.peak_cell}"] if res else []),
            f"{mark} {r.verdict_cell}{held}".strip(),
        ]
        lines.append(_md_row([md_code(r.test), *(md_cell(c) for c in cells)]))
    notes = summary_legend(rows) + summary_notes(rows)
    if notes:
        lines += [""] + [f"- {md_text(n)}" for n in notes]
    head, body = peer_cells(rows)
    if body:
        lines += ["", "#### TVM time / peer framework time (side by side; below 1: TVM is faster)", ""]
        lines += [_md_row(head), "|" + "---|" * len(head)]
        lines += [_md_row([md_code(row[0]), *(md_cell(c) for c in row[1:])]) for row in body]
    return "\n".join(lines) + "\n"


#: what Markdown reads as inline syntax (links, images, emphasis, HTML, code, tables), escaped in text
_MARKDOWN_PUNCTUATION = frozenset("\\`*_[]<|!~&")


#: what GitHub turns into a link, a mention or a reference by itself, with no Markdown syntax: a URL
#: (``https://``, ``www.``; trailing punctuation left out, as GitHub leaves it), an e-mail address,
#: ``owner/repo#1``, ``@name``, ``#1``, ``GH-1``
_GITHUB_AUTOLINKS = re.compile(
    r"(?i)\b[a-z][a-z0-9+.-]*://\S*[^\s.,;:!?)'\"\]]|\bwww\.\S*[^\s.,;:!?)'\"\]]|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b[\w.-]+/[\w.-]+#\d+"
    r"|(?<![\w`])@[\w-]+|(?<![\w&])#\d+\b|\bGH-\d+\b"
)


def md_text(text: object) -> str:
    """Text for a Markdown list item or table cell: through :func:`safe`, every character Markdown
    reads as inline syntax escaped, a leading ``#+->`` escaped, and whatever GitHub links by itself
    (a URL, ``www.``, an e-mail address, ``@mention``, ``#1``) put in a code span, where it renders as
    text: data cannot make a link, a mention, a reference, HTML or a heading (issue 66)."""
    out = _defused(safe(text), _escaped)
    return "\\" + out if out[:1] in ("#", "+", "-", ">") else out


def md_cell(text: object) -> str:
    """A table cell of the plugin's own words and numbers (``2.00x [1.90-2.10] > 1.2 exceeded``): ``|``
    escaped, and whatever GitHub links by itself in a code span, as :func:`md_text` does."""
    return _defused(safe(text), lambda part: part.replace("|", "\\|"))


def _defused(shown: str, escape) -> str:
    """``shown`` with every autolink in a code span and the rest through ``escape``."""
    parts, at = [], 0
    for found in _GITHUB_AUTOLINKS.finditer(shown):
        parts += [escape(shown[at : found.start()]), md_code(found.group())]
        at = found.end()
    return "".join(parts) + escape(shown[at:])


def _escaped(text: str) -> str:
    return "".join("\\" + ch if ch in _MARKDOWN_PUNCTUATION else ch for ch in text)


def md_code(text: object) -> str:
    """Text as a Markdown code span in a table cell: a fence longer than any run of backticks in
    it (padded where it starts or ends with one), ``|`` escaped (a table reads it first)."""
    shown = safe(text)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith(("`", " ")) or shown.endswith(("`", " ")) else ""
    return f"{fence}{pad}{shown.replace('|', chr(92) + '|')}{pad}{fence}"


def github_annotation(path: str, line: int, verdict: str, message: str) -> str:
    """A ``::error`` workflow command that GitHub Actions shows on the test's line."""

    def escape(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    props = f"file={escape(path).replace(',', '%2C').replace(':', '%3A')},line={line},title=tvmperf {verdict}"
    return f"::error {props}::{escape(message)}"
