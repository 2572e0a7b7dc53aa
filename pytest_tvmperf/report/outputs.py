"""The run's report files: results JSON, HTML, history, the GitHub step summary and
annotations. Paths are checked at start-up so a bad one fails before the run."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from pytest_tvmperf.result.text import SummaryRow, github_annotation, markdown_summary
from pytest_tvmperf.report.history import history_line, parse_history
from pytest_tvmperf.result.entry import ResultEntry, ResultsError, results_json
from pytest_tvmperf.result.run_report import ReportSection
from pytest_tvmperf.store.files import atomic_write, read_regular_text
from pytest_tvmperf.judge.verdict import FAILING, peer_failures


def check_writable(path: Path, option: str) -> None:
    """Raise ValueError naming ``option`` when ``path`` cannot be written."""
    parent = path.parent
    if path.is_dir():
        raise ValueError(f"{option}={path}: is a directory; give a file path")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".tvmperf-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{option}={path}: cannot write there ({exc.strerror or exc}); choose a writable path") from None


def read_history(path: Path) -> list[dict[str, Any]]:
    """Previous runs of a history file; an empty list when it does not exist yet."""
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"history file {path} cannot be read ({exc})") from None
    return parse_history(text, path)


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def write_reports(entries: Sequence[ResultEntry], rows: Sequence[SummaryRow], *, json_path: Path | None,
                  html_path: Path | None, history_path: Path | None, history: list[dict[str, Any]],
                  benchmark_json_path: Path | None = None, sections: Sequence[ReportSection] = ()) -> list[str]:
    """Write what was asked for, each file once with every section in it; returns lines
    to show (what was written where)."""
    created = now_iso()
    shown: list[str] = []
    results = results_json(entries, created)
    for section in sections:
        results.update(section.json)
    if json_path is not None:
        atomic_write(json_path, json.dumps(results, indent=2, sort_keys=True) + "\n")
        shown.append(f"results JSON: {json_path}")
    if benchmark_json_path is not None:
        from pytest_tvmperf.report.benchmark_json import benchmark_json

        bench = benchmark_json(entries, created)
        timed = len(bench["benchmarks"])  # each timed test once (an upgrade's two sides count as one)
        for section in sections:
            if section.benchmark is not None:
                bench = section.benchmark(bench)
        atomic_write(benchmark_json_path, json.dumps(bench, indent=4) + "\n")
        shown.append(f"pytest-benchmark JSON ({timed} timed tests): {benchmark_json_path}")
    if history_path is not None:
        line = history_line(entries, created, _commit())
        history = [*history, line]
        with open(history_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")
        shown.append(f"history ({len(history)} runs): {history_path}")
    if html_path is not None:
        from pytest_tvmperf.report.html_report import render_page

        atomic_write(html_path, render_page(entries, created, history if history_path is not None else None,
                                            after_header=[s.html for s in sections if s.html]))
        shown.append(f"HTML report: {html_path}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and rows:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown_summary(rows))
    return shown


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
