"""The files of a MetaSchedule tuning database (see :mod:`pytest_tvmperf.builder.tuning`):
checked before MetaSchedule reads them, opened, hashed, and searched for each
kernel's best record on a target. TVM is imported lazily."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from pytest_tvmperf.store import trace_check

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
#: the command that creates or refreshes a database
TUNE_COMMAND = "pytest --tvmperf-tune=TRIALS"


class TuningError(Exception):
    """A tuning database that is missing or unreadable, or tuning that cannot run;
    the message names the file and says what to do."""


def _recreate_hint(db_dir: Path) -> str:
    return f"create it with: {TUNE_COMMAND} (it writes {WORKLOAD_FILE} and {RECORD_FILE} into {db_dir})"


def _check_files(db_dir: Path) -> bool:
    """Raise TuningError unless ``db_dir`` holds two well-formed database files:
    one JSON array per line, records pointing at existing workload lines. Returns
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
                elif not (
                    isinstance(row, list)
                    and len(row) == 2
                    and isinstance(row[0], int)
                    and isinstance(row[1], list)
                    and len(row[1]) >= 2
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
    """A database file's text less a last line cut short by a killed tuning (MetaSchedule
    appends one line per measured record; a kill in the middle of a line leaves it
    without its newline). A last line that is whole but lacks its newline gets it."""
    if not text or text.endswith("\n"):
        return text
    head, _, last = text.rpartition("\n")
    try:
        json.loads(last)
    except ValueError:
        return head + "\n" if head else ""
    return text + "\n"


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
    """Rewrite (atomically) the files a killed tuning left with a cut-short last line, so
    that the next record appended starts on a line of its own; returns their names."""
    from pytest_tvmperf.store.files import atomic_write

    torn = torn_files(db_dir)
    for name, text in torn.items():
        atomic_write(Path(db_dir) / name, text)
    return sorted(torn)


def _open_database(db_dir: Path) -> Any:
    """The JSONDatabase in ``db_dir`` (which must exist, with both files well formed). A
    last line cut short by a killed tuning is left out (read from an intact copy; the
    files are not changed: the next tuning repairs them)."""
    import shutil
    import tempfile

    from tvm.s_tir import meta_schedule as ms

    if _check_files(db_dir):
        load_tensor_intrinsics()  # the records name intrinsics, which must be registered to load them
    torn = torn_files(db_dir)
    try:
        if not torn:
            return ms.database.JSONDatabase(
                path_workload=str(Path(db_dir) / WORKLOAD_FILE),
                path_tuning_record=str(Path(db_dir) / RECORD_FILE),
                allow_missing=False,
                module_equality="structural",
            )
        with tempfile.TemporaryDirectory(prefix="tvmperf-tuning-db-") as copy:
            for name in (WORKLOAD_FILE, RECORD_FILE):
                if name in torn:
                    (Path(copy) / name).write_text(torn[name], encoding="utf-8")
                else:
                    shutil.copyfile(Path(db_dir) / name, Path(copy) / name)
            db = ms.database.JSONDatabase(
                path_workload=str(Path(copy) / WORKLOAD_FILE),
                path_tuning_record=str(Path(copy) / RECORD_FILE),
                allow_missing=False,
                module_equality="structural",
            )
            memory = ms.database.MemoryDatabase(module_equality="structural")  # nothing points at the copy
            for record in db.get_all_tuning_records():
                memory.commit_tuning_record(
                    ms.database.TuningRecord(
                        record.trace,
                        memory.commit_workload(record.workload.mod),
                        record.run_secs,
                        record.target,
                        record.args_info,
                    )
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


@contextlib.contextmanager
def _fast_tvmscript_parsing() -> Iterator[None]:
    """Make TVMScript parsing during an import fast.

    Every ``@T.prim_func`` calls ``inspect.stack()``, which looks up the module of
    each frame; the import machinery's frozen frames (``<frozen importlib._bootstrap>``)
    have no module file, so each lookup scans all of ``sys.modules`` -- thousands of
    modules once ``tvm_ffi`` has imported torch. ``tvm.s_tir.tensor_intrin`` parses
    some 250 functions on import, which then takes 30-40 s instead of 4. Telling
    ``inspect`` which modules those frames belong to (what its cache would hold if it
    could find them) removes the scans.
    """
    import inspect as _inspect

    cache = getattr(_inspect, "modulesbyfile", None)
    added = []
    if isinstance(cache, dict):
        for module in ("importlib._bootstrap", "importlib._bootstrap_external"):
            key = f"<frozen {module}>"
            if key not in cache:
                cache[key] = module
                added.append(key)
    try:
        yield
    finally:
        for key in added:
            cache.pop(key, None)


def load_tensor_intrinsics() -> None:
    """Import ``tvm.s_tir.tensor_intrin`` (which registers the tensor intrinsics that
    MetaSchedule's CPU schedule rules use, and that loading a database with tensorized
    records needs) in 4-8 s instead of 30-40 s.

    :func:`tune` calls it. TVM cannot import that module twice into one process (its
    global functions register again and fail), so a test suite whose in-process
    pytester runs tune should call this once before them, e.g. in ``conftest.py``.
    """
    with _fast_tvmscript_parsing():
        import tvm.s_tir.tensor_intrin  # noqa: F401
