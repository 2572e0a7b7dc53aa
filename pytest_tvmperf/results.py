"""The machine-readable results of a run (``--tvmperf-json``): pure conversion of the
run's outcomes to JSON, and reading such a file back with clear errors.

Schema (``schema_version`` 1, ``kind`` "pytest-tvmperf-results"):

    {"schema_version": 1, "kind": "pytest-tvmperf-results", "created": ISO-8601 UTC,
     "tests": [{"nodeid", "test_id", "executor", "target", "verdict", "note",
                "time": {"median_s", "baseline_s", "ratio", "low", "high", "mode",
                         "confidence", "samples_s", "baseline_samples_s"} | null,
                "kernels": [{"name", "time_s", "baseline_time_s"}] (per-kernel time, may be empty),
                "record": <baseline-entry JSON of this run> | null,
                "baseline": <baseline-entry JSON it was compared with> | null}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from .record import Record
from .schema import SchemaProblem, check_record, check_schema_version
from .store import read_regular_text

RESULTS_SCHEMA_VERSION = 1
RESULTS_KIND = "pytest-tvmperf-results"


class ResultsError(Exception):
    """A results file that cannot be read, with what to do."""


def outcome_json(outcome) -> dict[str, Any]:
    """One test's entry (``outcome`` is a session.Outcome)."""
    time: dict[str, Any] | None = None
    record, baseline = outcome.record, outcome.baseline
    if record is not None and record.timing is not None:
        verdict = outcome.comparison.get("time") if outcome.comparison is not None else None
        decision = verdict.decision if verdict is not None else None
        base_timing = None
        if baseline is not None:
            base_timing = baseline.timings.get(record.timing.machine.fingerprint)
        time = {
            "median_s": record.timing.samples.median,
            "baseline_s": verdict.baseline if verdict is not None else None,
            "ratio": decision.ratio if decision else None,
            "low": decision.low if decision else None,
            "high": decision.high if decision else None,
            "confidence": decision.confidence if decision else None,
            "mode": decision.mode if decision else None,
            "samples_s": list(record.timing.samples.samples),
            "baseline_samples_s": list(base_timing.samples.samples) if base_timing else None,
        }
    return {
        "nodeid": outcome.nodeid,
        "test_id": outcome.test_id,
        "executor": outcome.executor,
        "target": outcome.target,
        "verdict": outcome.verdict,
        "note": outcome.note,
        "time": time,
        "kernels": kernel_rows(record, baseline),
        "message": outcome.message,
        "location": list(outcome.location),
        "record": record.as_json() if record is not None else None,
        "baseline": baseline.as_json() if baseline is not None else None,
        "peers": [_ratio_json(v) for v in getattr(outcome, "peers", ())],
        "relation": _ratio_json(outcome.relation) if getattr(outcome, "relation", None) is not None else None,
    }


def _ratio_json(v) -> dict[str, Any]:
    """A compare.RatioVerdict (TVM over a peer, or one side of a relation over the other)."""
    return {"name": v.name, "ratio": v.ratio, "low": v.low, "high": v.high, "limit": v.limit,
            "status": v.status, "numerator_s": v.numerator_s, "denominator_s": v.denominator_s}


def kernel_rows(record: Record | None, baseline: Record | None) -> list[dict[str, Any]]:
    """Per-kernel time now and in the baseline, slowest added time first."""
    if record is None or record.kernel_time_s is None:
        return []
    before = (baseline.kernel_time_s if baseline is not None else None) or {}
    rows = [{"name": name, "time_s": t, "baseline_time_s": before.get(name)} for name, t in record.kernel_time_s.items()]
    return sorted(rows, key=lambda r: -(r["time_s"] - (r["baseline_time_s"] or 0.0)))


def results_json(entries: Iterable[Mapping[str, Any]], created: str) -> dict[str, Any]:
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": RESULTS_KIND,
        "created": created,
        "tests": sorted(entries, key=lambda e: e["nodeid"]),
    }


def parse_results(text: str, path: Path) -> dict[str, Any]:
    """Validate a results file's text; raise ResultsError naming the file and the fix."""
    hint = f"re-create it with `pytest --tvmperf-json={path}`"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"results file {path} is not valid JSON ({exc.msg} at line {exc.lineno}); it may be truncated: {hint}") from None
    if not isinstance(data, dict) or data.get("kind") != RESULTS_KIND or not isinstance(data.get("tests"), list):
        raise ResultsError(f"results file {path} is not a pytest-tvmperf results file; {hint}")
    if not check_schema_version(data.get("schema_version"), RESULTS_SCHEMA_VERSION):
        raise ResultsError(f"results file {path} has schema version {data.get('schema_version')!r}, this pytest-tvmperf reads "
                           f"version {RESULTS_SCHEMA_VERSION}; {hint}")
    for number, entry in enumerate(data["tests"]):
        try:
            if not isinstance(entry["nodeid"], str) or not isinstance(entry["verdict"], str):
                raise TypeError("nodeid and verdict must be strings")
            if entry.get("record") is not None:
                check_record(entry["record"])
                Record.from_json(entry["record"])
        except SchemaProblem as exc:
            raise ResultsError(f"results file {path}: test entry {number} ({entry['nodeid']}) is malformed: record {exc}; {hint}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsError(f"results file {path}: test entry {number} is malformed ({type(exc).__name__}: {exc}); {hint}") from None
    return data


def load_results(path: Path) -> dict[str, Any]:
    try:
        text = read_regular_text(Path(path))
    except FileNotFoundError:
        raise ResultsError(f"results file {path} does not exist; create it with `pytest --tvmperf-json={path}`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"results file {path} cannot be read ({exc})") from None
    return parse_results(text, Path(path))


def records_of(data: Mapping[str, Any]) -> dict[str, Record]:
    """node id -> the run's Record, from a parsed results file."""
    out: dict[str, Record] = {}
    for entry in data["tests"]:
        if entry.get("record") is not None:
            out[entry["nodeid"]] = Record.from_json(entry["record"])
    return out


HISTORY_KIND = "pytest-tvmperf-history"


def history_line(entries: Iterable[Mapping[str, Any]], created: str) -> dict[str, Any]:
    """One run of ``--tvmperf-history``: per node id, its median time and verdict."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": HISTORY_KIND,
        "created": created,
        # relations (tvmperf.assert_ratio) share their test's node id and have no time of their own
        "tests": {e["nodeid"]: {"median_s": (e["time"] or {}).get("median_s"), "verdict": e["verdict"]}
                  for e in entries if not e.get("relation")},
    }


def parse_history(text: str, path: Path) -> list[dict[str, Any]]:
    """The runs of a history file (one JSON object per line), oldest first."""
    runs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except json.JSONDecodeError:
            raise ResultsError(f"history file {path}, line {number}, is not valid JSON (truncated?); "
                               f"remove that line or the file to start a new history") from None
        if not isinstance(run, dict) or run.get("kind") != HISTORY_KIND:
            raise ResultsError(f"history file {path}, line {number}, is not a pytest-tvmperf history line; "
                               f"point --tvmperf-history at another file")
        if not check_schema_version(run.get("schema_version"), RESULTS_SCHEMA_VERSION):
            raise ResultsError(f"history file {path}, line {number}, has schema version {run.get('schema_version')!r}, "
                               f"this pytest-tvmperf reads version {RESULTS_SCHEMA_VERSION}; start a new history file")
        runs.append(run)
    return runs
