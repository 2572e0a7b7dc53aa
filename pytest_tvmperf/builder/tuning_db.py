"""The files of a MetaSchedule tuning database (:mod:`pytest_tvmperf.builder.tuning`):
checked before MetaSchedule reads them, repaired, opened, hashed. TVM is imported lazily."""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

from pytest_tvmperf.store import trace_check
from pytest_tvmperf.store.files import atomic_write

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
#: the command that creates or refreshes a database
TUNE_COMMAND = "pytest --tvmperf-tune=TRIALS"


class TuningError(Exception):
    """A missing or unreadable tuning database, or tuning that cannot run; says what to do."""


def _recreate_hint(db_dir: Path) -> str:
    return f"create it with: {TUNE_COMMAND} (it writes {WORKLOAD_FILE} and {RECORD_FILE} into {db_dir})"


def _check_files(db_dir: Path) -> bool:
    """Raise TuningError unless ``db_dir`` holds two well-formed database files; returns
    whether a record's trace tensorizes (loading it needs the tensor intrinsics)."""
    db_dir = Path(db_dir)
    if not db_dir.is_dir():
        what = "is not a directory" if db_dir.exists() else "does not exist"
        raise TuningError(f"tuning database {db_dir} {what}; {_recreate_hint(db_dir)}")
    counts: dict[str, int] = {}
    tensorizes = False
    for name in (WORKLOAD_FILE, RECORD_FILE):
        path = db_dir / name
        if not path.is_file():
            raise TuningError(f"tuning database {db_dir}: {name} is missing; {_recreate_hint(db_dir)}")
        try:
            text = intact_text(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise TuningError(
                f"tuning database file {path} cannot be read ({exc}); fix it, "
                f"or delete {db_dir} and re-create it with: {TUNE_COMMAND}"
            ) from exc
        count = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            problem = None
            try:
                row = trace_check.parse_line(line)  # bounded: a deep line is an error, never a RecursionError
            except ValueError as exc:
                problem = f"not JSON ({exc.args[0] if exc.args else exc})"
            else:
                if name == WORKLOAD_FILE:
                    if not (isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) for x in row)):
                        problem = "expected [structural hash, module]"
                elif not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)) or not (
                    isinstance(row[1], list) and len(row[1]) >= 2
                ):
                    problem = "expected [workload index, [trace, run_secs, target, args_info]]"
                elif not 0 <= row[0] < counts[WORKLOAD_FILE]:
                    problem = (
                        f"refers to workload {row[0]}, but {WORKLOAD_FILE} has {counts[WORKLOAD_FILE]} workload(s)"
                    )
                problem = problem or trace_check.line_problem(name, row)  # an allowlist before replay
            if problem:
                raise TuningError(
                    f"tuning database file {path}, line {number}: {problem}; fix the file, "
                    f"or delete {db_dir} and re-create it with: {TUNE_COMMAND}"
                )
            count += 1
        counts[name] = count
        tensorizes = name == RECORD_FILE and '"Tensorize"' in text
    return tensorizes


def intact_text(text: str) -> str:
    """A database file's text less a last line cut short by a killed tuning (one without
    its newline that is not JSON); a whole last line without its newline gets it."""
    if not text or text.endswith("\n"):
        return text
    head, _, last = text.rpartition("\n")
    try:
        json.loads(last)
    except ValueError:
        return head + "\n" if head else ""
    return text + "\n"


def db_lines(db_dir: Path, name: str) -> list[str]:
    """The lines of one database file, less blank ones and a last one cut short (:func:`intact_text`)."""
    return [
        line for line in intact_text((Path(db_dir) / name).read_text(encoding="utf-8")).splitlines() if line.strip()
    ]


def torn_files(db_dir: Path) -> dict[str, str]:
    """The database files whose last line a killed tuning cut short, with their intact text."""
    torn = {}
    for name in (WORKLOAD_FILE, RECORD_FILE):
        try:
            text = (Path(db_dir) / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # _check_files names it
            continue
        if intact_text(text) != text:
            torn[name] = intact_text(text)
    return torn


def repair_torn(db_dir: Path) -> list[str]:
    """Rewrite (atomically) the files a killed tuning cut short; returns their names."""
    torn = torn_files(db_dir)
    for name, text in torn.items():
        atomic_write(Path(db_dir) / name, text)
    return sorted(torn)


def _open_database(db_dir: Path) -> Any:
    """The JSONDatabase in ``db_dir`` (checked); a last line cut short by a killed tuning
    is left out (read from an intact copy; the next tuning repairs the files)."""
    from tvm.s_tir import meta_schedule as ms

    def json_database(folder: Any) -> Any:
        return ms.database.JSONDatabase(
            path_workload=str(Path(folder) / WORKLOAD_FILE),
            path_tuning_record=str(Path(folder) / RECORD_FILE),
            allow_missing=False,
            module_equality="structural",
        )

    if _check_files(db_dir):
        load_tensor_intrinsics()  # the records name intrinsics, which must be registered to load them
    torn = torn_files(db_dir)
    try:
        if not torn:
            return json_database(db_dir)
        with tempfile.TemporaryDirectory(prefix="tvmperf-tuning-db-") as copy:
            for name in (WORKLOAD_FILE, RECORD_FILE):
                if name in torn:
                    (Path(copy) / name).write_text(torn[name], encoding="utf-8")
                else:
                    shutil.copyfile(Path(db_dir) / name, Path(copy) / name)
            db = json_database(copy)
            memory = ms.database.MemoryDatabase(module_equality="structural")  # nothing points at the copy
            for record in db.get_all_tuning_records():
                workload = memory.commit_workload(record.workload.mod)
                memory.commit_tuning_record(
                    ms.database.TuningRecord(record.trace, workload, record.run_secs, record.target, record.args_info)
                )
            return memory
    except Exception as exc:  # TVM raises TVMError, ValueError, ... on a bad entry
        first = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
        raise TuningError(
            f"tuning database {db_dir}: MetaSchedule cannot load {WORKLOAD_FILE} / {RECORD_FILE} "
            f"({first[0]}); delete {db_dir} and re-create it with: {TUNE_COMMAND}"
        ) from exc


def _records_hash(entries: Sequence[Any]) -> str | None:
    if not entries:
        return None
    text = json.dumps(list(entries), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load_tensor_intrinsics() -> None:
    """Import ``tvm.s_tir.tensor_intrin`` (MetaSchedule's CPU rules and tensorized records
    need its 250 functions) in 4-8 s, not 30-40 s: each ``@T.prim_func`` calls
    ``inspect.stack()``, which for the import machinery's frozen frames scans all of
    ``sys.modules`` (thousands once ``tvm_ffi`` has imported torch) unless told their
    module. TVM cannot import it twice into one process: a test suite whose in-process
    pytester runs tune should call this once before them, e.g. in ``conftest.py``."""
    cache = getattr(inspect, "modulesbyfile", None)
    added = []
    if isinstance(cache, dict):
        for module in ("importlib._bootstrap", "importlib._bootstrap_external"):
            key = f"<frozen {module}>"
            if key not in cache:
                cache[key] = module
                added.append(key)
    try:
        import tvm.s_tir.tensor_intrin  # noqa: F401
    finally:
        for key in added:
            cache.pop(key, None)
