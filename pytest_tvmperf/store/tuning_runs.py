"""The tuning runs of a MetaSchedule database: one JSON line per finished run in
``tuning_runs.jsonl`` beside ``database_tuning_record.json``, so a reviewer reads what a
committed database cost to make (``tvmperf tune`` and ``--tvmperf-tune*`` write it;
MetaSchedule never reads it). Append-only: a run adds its line and never rewrites the others;
lines not as :func:`append_run` writes them are skipped by the reader and kept in the file (it
comes from the repository: untrusted)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from pytest_tvmperf.store.files import append_line

RUNS_FILE = "tuning_runs.jsonl"
#: the most runs read (the latest; the file keeps every line) and the longest line read
MAX_RUNS = 1000
MAX_LINE = 4096


@dataclass(frozen=True)
class TuningRun:
    """One finished tuning run: ``used_s`` of ``budget_s`` (None: a trial count, no
    budget), ``trials`` measured on ``kernels`` kernels, ``records`` written."""

    workload: str
    target: str
    used_s: float
    budget_s: float | None
    trials: int
    kernels: int
    records: int
    tvm: str
    finished: str  # UTC, ISO 8601


_TYPES = {"workload": str, "target": str, "used_s": float, "budget_s": (float, type(None)), "trials": int}
_TYPES |= {"kernels": int, "records": int, "tvm": str, "finished": str}


def _parse(line: str) -> TuningRun | None:
    """A line as :func:`append_run` writes it, else None."""
    if len(line) > MAX_LINE:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {f.name for f in fields(TuningRun)}:
        return None
    for name, kind in _TYPES.items():
        value = data[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = data[name] = float(value)
        if isinstance(value, bool) or not isinstance(value, kind):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, str) and len(value) > 512:
            return None
    return TuningRun(**data)


def read_runs(db_dir: Path) -> tuple[list[TuningRun], int]:
    """The last :data:`MAX_RUNS` runs recorded in ``db_dir`` (none where the file is missing, a link
    or unreadable), and how many lines were skipped (not as :func:`append_run` writes them: another
    field, a byte that is no UTF-8); a skipped line stays in the file as it is."""
    path = Path(db_dir) / RUNS_FILE
    if path.is_symlink() or not path.is_file():
        return [], 0
    try:
        raw = path.read_bytes()
    except OSError:
        return [], 0
    runs, skipped = [], 0
    for line in raw.splitlines():
        try:
            run = _parse(line.decode("utf-8")) if line.strip() else None
        except UnicodeDecodeError:
            run = None
        if run is None:
            skipped += bool(line.strip())
        else:
            runs.append(run)
    return runs[-MAX_RUNS:], skipped


def append_run(db_dir: Path, run: TuningRun) -> None:
    """Append ``run`` to ``db_dir``'s runs: one line, whole or not at all, under the file's lock (two
    tuning runs at once both land); the lines before are never rewritten, even those the reader skips."""
    path = Path(db_dir) / RUNS_FILE
    if path.is_symlink():  # never written through: the link goes, a file of the plugin's own takes its place
        path.unlink()
    append_line(path, json.dumps(asdict(run), sort_keys=True))
