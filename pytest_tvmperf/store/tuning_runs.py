"""The tuning runs of a MetaSchedule database: one JSON line per finished run in
``tuning_runs.jsonl`` beside ``database_tuning_record.json``, so a reviewer reads what a
committed database cost to make (``tvmperf tune`` and ``--tvmperf-tune*`` write it;
MetaSchedule never reads it). Lines not as :func:`append_run` writes them are skipped
(the file comes from the repository: untrusted)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from pytest_tvmperf.store.files import atomic_write

RUNS_FILE = "tuning_runs.jsonl"
#: the most lines kept (the oldest go first) and the longest line read
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


def read_runs(db_dir: Path) -> list[TuningRun]:
    """The runs recorded in ``db_dir`` (none where the file is missing, a link or unreadable)."""
    path = Path(db_dir) / RUNS_FILE
    if path.is_symlink() or not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return [run for run in map(_parse, text.splitlines()) if run is not None]


def append_run(db_dir: Path, run: TuningRun) -> None:
    """Add ``run`` to ``db_dir``'s runs (the file rewritten atomically: a crash leaves the
    old one), keeping the last :data:`MAX_RUNS`."""
    runs = [*read_runs(db_dir), run][-MAX_RUNS:]
    text = "".join(json.dumps(asdict(r), sort_keys=True) + "\n" for r in runs)
    atomic_write(Path(db_dir) / RUNS_FILE, text)
