"""The history of runs (``--tvmperf-history``), and reading it back for the HTML trends and
``tvmperf history`` (pure). Schema (``schema_version`` 1, ``kind`` "pytest-tvmperf-history"), one line per run:

    {"schema_version": 1, "kind": "pytest-tvmperf-history", "created": ISO-8601 UTC,
     "commit": "abc123def456+dirty" (optional),
     "tests": {nodeid: {"median_s", "verdict", "baseline" (optional)}}}

``baseline``: 12 hex digits naming the baseline the run compared with (its program's IR
with its weights, else its exact metrics): where it differs from the run before, the
baseline was re-recorded and accepted between them, and the HTML trend marks it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pytest_tvmperf.result.entry import RESULTS_SCHEMA_VERSION, ResultEntry, ResultsError, no_long_int
from pytest_tvmperf.values.json_fields import Fields, check_schema_version, loads

HISTORY_KIND = "pytest-tvmperf-history"


def history_line(entries: Iterable[ResultEntry], created: str, commit: str | None = None) -> dict[str, Any]:
    """One run's history line: per node id, its median and verdict; the commit, if any."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": HISTORY_KIND,
        "created": created,
        **({"commit": commit} if commit else {}),
        # relations (tvmperf.assert_ratio) share their test's node id and have no time of their own
        "tests": {
            e.nodeid: {
                "median_s": e.time.median_s if e.time is not None else None,
                "verdict": str(e.verdict),
                **({"baseline": baseline_digest(e)} if e.baseline is not None else {}),
            }
            for e in entries
            if e.relation is None
        },
    }


def baseline_digest(entry: ResultEntry) -> str | None:
    """12 hex digits naming the baseline compared with: of its IR with weights, else its exact metrics."""
    base = entry.baseline
    if base is None:
        return None
    if base.ir is not None:
        return base.ir.program_key[:12]
    return hashlib.sha256(json.dumps(base.exact.as_json(), sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class HistoryRun:
    """One run of a history file, read leniently for the trends (a bad point reads as none)."""

    created: str | None
    #: node id -> (median_s or None, verdict)
    tests: dict[str, tuple[float | None, str]]
    #: the git commit the run measured (``abc123def456+dirty``); None when not recorded
    commit: str | None = None
    #: node id -> the digest of the baseline it was compared with (:func:`baseline_digest`)
    baselines: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, data: Any) -> HistoryRun:
        f = Fields(data, "", strict=False)
        tests = f.obj("tests")
        points, baselines = {}, {}
        for nodeid in tests.data if tests is not None else ():
            point = tests.obj(nodeid)
            if point is not None:
                points[nodeid] = (point.number("median_s"), point.text("verdict", nullable=True))
                digest = point.text("baseline", None, nullable=True)
                if digest:
                    baselines[nodeid] = digest
        return cls(f.text("created", None, nullable=True), points, f.text("commit", None, nullable=True), baselines)


def _not_a_history(text: str, path: Path) -> ResultsError:
    """A file that is no history at all (a baseline file, another tool's): left alone."""
    try:
        whole = loads(text)
    except (ValueError, RecursionError):
        whole = None
    what = "not a pytest-tvmperf history file (its first line is no history line)"
    if isinstance(whole, dict) and {"tests", "schema_version"} <= whole.keys() and whole.get("kind") != HISTORY_KIND:
        what = "a pytest-tvmperf baseline file"
    return ResultsError(
        f"--tvmperf-history={path}: that file is {what}; it was left as it is: point --tvmperf-history "
        f"at a file of its own, e.g. tvmperf-history.jsonl"
    )


def read_runs(text: str, path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The runs of a history file, oldest first, and a warning naming the lines that are no JSON (a
    write cut short, e.g. on a full disk: skipped, kept in the file as they are); ResultsError names the
    file and the line of any other problem."""
    runs, skipped = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fix = "remove that line (the other runs are kept), or point --tvmperf-history at another file"
        try:
            run = loads(line)
        except json.JSONDecodeError:
            if not runs and number == 1:
                raise _not_a_history(text, path) from None
            skipped.append(number)
            continue
        except (ValueError, RecursionError) as exc:
            raise ResultsError(f"history file {path}, line {number}, cannot be read as JSON ({exc}); {fix}") from None
        no_long_int(run, f"history file {path}, line {number}", fix)
        if not isinstance(run, dict) or run.get("kind") != HISTORY_KIND:
            if not runs:
                raise _not_a_history(text, path) from None
            raise ResultsError(f"history file {path}, line {number}, is not a pytest-tvmperf history line; {fix}")
        if not check_schema_version(run.get("schema_version"), RESULTS_SCHEMA_VERSION):
            raise ResultsError(
                f"history file {path}, line {number}, has schema version {run.get('schema_version')!r}, "
                f"this pytest-tvmperf reads version {RESULTS_SCHEMA_VERSION}; point --tvmperf-history "
                f"at a new file"
            )
        runs.append(run)
    warning = None
    if skipped:
        warning = (
            f"history file {path}: line(s) {', '.join(map(str, skipped))} cannot be read as JSON (a write cut "
            f"short, e.g. on a full disk, or an edit) and are skipped; they are kept in the file as they are"
        )
    return runs, warning
