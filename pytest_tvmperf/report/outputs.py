"""The run's report files (JSON, HTML, history, step summary, annotations); paths checked at start-up."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from pytest_tvmperf.result.markdown import github_annotation, markdown_summary
from pytest_tvmperf.result.text import SummaryRow
from pytest_tvmperf.report.history import history_line, read_runs
from pytest_tvmperf.result.entry import ResultEntry, ResultsError, results_json
from pytest_tvmperf.result.run_report import ReportSection
from pytest_tvmperf.store.files import append_line, atomic_write, read_regular_text, write_advice
from pytest_tvmperf.judge.verdict import FAILING, peer_failures


def check_writable(path: Path, option: str) -> None:
    """Raise ValueError naming ``option`` when ``path`` cannot be written."""
    if path.is_dir():
        raise ValueError(f"{option}={path}: is a directory; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".tvmperf-probe-", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(
            f"{option}={path}: cannot write there ({exc.strerror or exc}); {write_advice(exc, str(path.parent))}, "
            f"or choose another path"
        ) from None


def read_history(path: Path) -> list[dict[str, Any]]:
    """Previous runs of a history file; an empty list when it does not exist yet."""
    return read_history_warned(path)[0]


def read_history_warned(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """Previous runs of a history file, and a warning when its torn last line is left out."""
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        return [], None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"history file {path} cannot be read ({exc})") from None
    return read_runs(text, path)


def append_history(path: Path, line: dict[str, Any]) -> None:
    """Add one run's line to the history file: appended whole or not at all, under the file's lock
    (two runs at once both land; a torn line is kept, and skipped by the reader)."""
    append_line(path, json.dumps(line, sort_keys=True))


def write_reports(
    entries: Sequence[ResultEntry],
    rows: Sequence[SummaryRow],
    *,
    json_path: Path | None,
    html_path: Path | None,
    history_path: Path | None,
    history: list[dict[str, Any]],
    benchmark_json_path: Path | None = None,
    sections: Sequence[ReportSection] = (),
    notes: Sequence[str] = (),
    markdown_path: Path | None = None,
) -> tuple[list[str], list[str]]:
    """Write each file asked for once, whole, each on its own (one not written keeps no other from
    it); return what was written where, and the errors. ``notes``: step-summary warnings."""
    created = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    shown: list[str] = []
    errors: list[str] = []

    def attempt(what: str, path: Path | str, write, done: str = "") -> None:
        """``write()``, then show ``done``; an OSError is one of the errors."""
        try:
            write()
            if done:
                shown.append(done)
        except OSError as exc:
            errors.append(f"{what} {path} not written: {exc.strerror or exc} ({write_advice(exc, 'its directory')})")

    results = results_json(entries, created)
    for section in sections:
        results.update(section.json)
    if json_path is not None:
        text = json.dumps(results, indent=2, sort_keys=True) + "\n"
        attempt("results JSON", json_path, lambda: atomic_write(json_path, text), f"results JSON: {json_path}")
    if benchmark_json_path is not None:

        def write_benchmark() -> None:
            from pytest_tvmperf.report.benchmark_json import benchmark_json

            bench = benchmark_json(entries, created)
            timed = len(bench["benchmarks"])  # each timed test once (an upgrade's two sides count as one)
            for section in sections:
                if section.benchmark is not None:
                    bench = section.benchmark(bench)
            atomic_write(benchmark_json_path, json.dumps(bench, indent=4) + "\n")
            shown.append(f"pytest-benchmark JSON ({timed} timed tests): {benchmark_json_path}")

        attempt("pytest-benchmark JSON", benchmark_json_path, write_benchmark)
    if history_path is not None:
        line = history_line(entries, created, _commit())
        history = [*history, line]
        done = f"history ({len(history)} runs): {history_path}"
        attempt("history", history_path, lambda: append_history(history_path, line), done)
    if html_path is not None:
        from pytest_tvmperf.report.html_report import render_page

        page = render_page(
            entries, created, history if history_path is not None else None, [s.html for s in sections if s.html]
        )
        attempt("HTML report", html_path, lambda: atomic_write(html_path, page), f"HTML report: {html_path}")
    if markdown_path is not None:
        changes = "".join(s.markdown for s in sections if s.markdown)
        done = f"baseline changes (Markdown, for a PR comment): {markdown_path}"
        attempt("baseline changes", markdown_path, lambda: atomic_write(markdown_path, changes), done)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    extra = "".join("\n" + s.markdown for s in sections if s.markdown and s.summary_markdown)
    if summary and (rows or notes or extra):

        def write_summary() -> None:
            text = markdown_summary(rows) if rows else "### pytest-tvmperf\n"
            if notes:
                text += "\n" + "".join(f"- ⚠️ {n}\n" for n in notes)
            text += extra
            with open(summary, "a", encoding="utf-8") as f:
                f.write(text)

        attempt("step summary ($GITHUB_STEP_SUMMARY)", summary, write_summary)
    return shown, errors


def _commit() -> str | None:
    """The commit this run measured (pytest-benchmark's git look-up), for the history."""
    try:
        from pytest_benchmark.utils import get_commit_info

        info = get_commit_info()
    except Exception:  # no git, no pytest-benchmark: a history line without a commit
        return None
    commit = info.get("id")
    if not commit or commit in ("unknown", "unversioned"):
        return None
    return f"{commit[:12]}{'+dirty' if info.get('dirty') else ''}"


def annotations(entries: Sequence[ResultEntry]) -> list[str]:
    """``::error`` lines for failed tests, when running under GitHub Actions."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return []
    out = []
    for e in entries:
        if (e.verdict in FAILING or peer_failures(e.peers)) and e.message:
            path, line = e.location
            out.append(github_annotation(path or e.nodeid.split("::")[0], int(line or 1), e.verdict, e.message))
    return out
