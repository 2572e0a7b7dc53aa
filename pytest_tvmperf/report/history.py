"""The history of runs (``--tvmperf-history``): one JSON line per run, each test's median
time and verdict, and reading such a file back for the HTML report's trends and
``tvmperf history`` (pure).

Schema (``schema_version`` 1, ``kind`` "pytest-tvmperf-history"), one line per run:

    {"schema_version": 1, "kind": "pytest-tvmperf-history", "created": ISO-8601 UTC,
     "commit": "abc123def456+dirty" (optional), "tests": {nodeid: {"median_s", "verdict"}}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pytest_tvmperf.result.entry import RESULTS_SCHEMA_VERSION, ResultEntry, ResultsError, loads, no_long_int
from pytest_tvmperf.values.json_fields import Fields, check_schema_version

HISTORY_KIND = "pytest-tvmperf-history"


def history_line(entries: Iterable[ResultEntry], created: str, commit: str | None = None) -> dict[str, Any]:
    """One run of ``--tvmperf-history``: per node id, its median time and verdict, and
    the commit measured (git, when there is one)."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": HISTORY_KIND,
        "created": created,
        **({"commit": commit} if commit else {}),
        # relations (tvmperf.assert_ratio) share their test's node id and have no time of their own
        "tests": {e.nodeid: {"median_s": e.time.median_s if e.time is not None else None, "verdict": str(e.verdict)}
                  for e in entries if e.relation is None},
    }


@dataclass(frozen=True)
class HistoryRun:
    """One run of a history file, read leniently for the page's trends: a test whose
    point is not an object, or a median that is not a number, reads as no point."""

    created: str | None
    #: node id -> (median_s or None, verdict)
    tests: dict[str, tuple[float | None, str]]
    #: the git commit the run measured (``abc123def456+dirty``); None when not recorded
    commit: str | None = None

    @classmethod
    def read(cls, data: Any) -> HistoryRun:
        f = Fields(data, "", strict=False)
        tests = f.obj("tests")
        points = {}
        for nodeid in tests.data if tests is not None else ():
            point = tests.obj(nodeid)
            if point is not None:
                points[nodeid] = (point.number("median_s"), point.text("verdict", nullable=True))
        return cls(f.text("created", None, nullable=True), points, f.text("commit", None, nullable=True))


def parse_history(text: str, path: Path) -> list[dict[str, Any]]:
    """The runs of a history file (one JSON object per line), oldest first."""
    runs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fix = "remove that line or the file to start a new history"
        try:
            run = loads(line)
        except json.JSONDecodeError:
            raise ResultsError(f"history file {path}, line {number}, is not valid JSON (truncated?); {fix}") from None
        except (ValueError, RecursionError) as exc:
            raise ResultsError(f"history file {path}, line {number}, cannot be read as JSON ({exc}); {fix}") from None
        no_long_int(run, f"history file {path}, line {number}", fix)
        if not isinstance(run, dict) or run.get("kind") != HISTORY_KIND:
            raise ResultsError(f"history file {path}, line {number}, is not a pytest-tvmperf history line; "
                               f"point --tvmperf-history at another file")
        if not check_schema_version(run.get("schema_version"), RESULTS_SCHEMA_VERSION):
            raise ResultsError(f"history file {path}, line {number}, has schema version {run.get('schema_version')!r}, "
                               f"this pytest-tvmperf reads version {RESULTS_SCHEMA_VERSION}; start a new history file")
        runs.append(run)
    return runs
