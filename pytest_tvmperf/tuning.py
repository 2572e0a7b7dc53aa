"""MetaSchedule tuning databases for the ``tuned`` pipeline.

A tuning database is a directory holding MetaSchedule's two JSON-lines files,
``database_workload.json`` (one line per tuned kernel: its structural hash and its
TIR) and ``database_tuning_record.json`` (one line per measured schedule: the
kernel's line number, the schedule trace, its run times, the target and argument
shapes). Nothing else is written there: MetaSchedule's log messages go to Python
logging only (``pytest_tvmperf.tuning.<task>`` and ``tvm.s_tir.meta_schedule.*``,
silent unless configured), never to a ``logs`` directory, so the directory can be
committed next to the baselines.

The *tasks* of a program are its kernels: for a Relax module after
``pipelines.fuse_relax`` the fused PrimFuncs (``relax_integration.extract_tasks``,
which merges structurally equal ones), for a PrimFunc-only module each PrimFunc. A
task's record is found by the kernel's structure (not its name) and the exact
target, so a changed workload (another shape, another fusion) or another machine's
target has no record and is reported ``missing`` by :func:`inspect` until it is
tuned there. Kernels with symbolic shapes (a dynamic batch) and kernels already
scheduled cannot be tuned by MetaSchedule: they are left out of ``tasks``, listed in
``untunable``, and keep their untuned form.

:func:`tune` needs ``cloudpickle`` and ``psutil`` (MetaSchedule builds and measures
candidates in worker processes); :func:`inspect` and :func:`apply` need only TVM.
TVM is imported lazily.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
#: how a user creates or refreshes a tuning database
TUNE_COMMAND = "pytest --tvmperf-tune=TRIALS"
#: the most candidates built and measured in one batch (one progress report each)
MAX_TRIALS_PER_ITER = 16
#: the loggers MetaSchedule's per-task messages go to (silent unless configured)
LOGGER = "pytest_tvmperf.tuning"


class TuningError(Exception):
    """A tuning database that is missing or unreadable, or tuning that cannot run;
    the message names the file and says what to do."""


@dataclass(frozen=True)
class TuningState:
    """What a tuning database holds for one program.

    db_dir
        The database directory, as given (for display).
    records_hash
        sha256 (first 16 hex digits) over the canonical JSON (sorted keys) of the
        record :func:`apply` uses for each task, in task order: the kernel's
        structural hash, and the record's trace, run times, target and argument
        shapes. The run times are in on purpose: a re-tune that re-measures or
        replaces a schedule gives another hash, so the hash names the database a
        measurement was taken with; the same files always give the same hash. None
        when no task has a record.
    tasks
        The tunable kernels (PrimFunc names), sorted.
    missing
        Tasks without a successful record for the target (never tuned, tuned for
        another target, or the workload changed since); they are compiled untuned.
    untunable
        Kernels MetaSchedule cannot tune (symbolic shapes, already scheduled); they
        are always compiled untuned and never count as missing.
    """

    db_dir: str
    records_hash: str | None
    tasks: tuple[str, ...]
    missing: tuple[str, ...]
    untunable: tuple[str, ...] = ()
    #: the targets (as their JSON) that the missing tasks do have records for: tuned
    #: on another machine or for another target, rather than never tuned or changed
    other_targets: tuple[str, ...] = ()
    #: the missing tasks that do have records for one of ``other_targets``
    elsewhere: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """True when every tunable task has a record."""
        return not self.missing

    def as_json(self) -> dict[str, Any]:
        return {
            "db_dir": self.db_dir,
            "records_hash": self.records_hash,
            "tasks": list(self.tasks),
            "missing": list(self.missing),
            "untunable": list(self.untunable),
            "other_targets": list(self.other_targets),
            "elsewhere": list(self.elsewhere),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TuningState":
        try:
            return cls(
                db_dir=str(data["db_dir"]),
                records_hash=None if data.get("records_hash") is None else str(data["records_hash"]),
                tasks=tuple(str(t) for t in data.get("tasks", ())),
                missing=tuple(str(t) for t in data.get("missing", ())),
                untunable=tuple(str(t) for t in data.get("untunable", ())),
                other_targets=tuple(str(t) for t in data.get("other_targets", ())),
                elsewhere=tuple(str(t) for t in data.get("elsewhere", ())),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a tuning state: {data!r} ({exc})") from exc


# ---------------------------------------------------------------------------- tasks


def _is_relax(mod: Any) -> bool:
    from tvm import relax

    return any(isinstance(f, relax.Function) for f in mod.functions.values())


def _tunable(func: Any) -> bool:
    """Whether MetaSchedule can tune the PrimFunc ``func``: not already scheduled,
    and only buffer parameters of static shapes (its search fails on a symbolic
    shape with ``parallel_for_dynamic error ... old_rv != nullptr``)."""
    from tvm import tirx
    from tvm.tirx.buffer import BufferType

    if func.attrs is not None and bool(func.attrs.get("tirx.is_scheduled", False)):
        return False
    for param in func.params:
        if not isinstance(param.ty, BufferType):  # a scalar: a dynamic kernel's shape variable
            return False
        if not all(isinstance(dim, tirx.IntImm) for dim in param.shape):
            return False
    return True


def _task_module(func: Any) -> Any:
    """The IRModule MetaSchedule keys a PrimFunc by, as ``extract_tasks`` makes it:
    the function as ``main`` with global symbol ``main`` (so the key does not depend
    on the entry's name; without a global symbol the candidates do not build) and
    ``tirx.noalias``."""
    import tvm

    return tvm.IRModule({"main": func.with_attr("global_symbol", "main").with_attr("tirx.noalias", True)})


def _split_tasks(mod: Any, target: Any) -> tuple[list[tuple[str, Any, float]], list[str]]:
    """(tunable tasks as (name, task module, weight) sorted by name, names of the
    untunable kernels sorted). A task's weight is how often the program calls it."""
    import tvm_ffi
    from tvm import tirx

    tunable: list[tuple[str, Any, float]] = []
    untunable: list[str] = []
    if _is_relax(mod):
        from tvm.s_tir.meta_schedule.relax_integration import extract_tasks

        for task in extract_tasks(mod, target):  # structurally equal kernels are one task
            if _tunable(task.dispatched[0]["main"]):
                tunable.append((str(task.task_name), task.dispatched[0], float(task.weight)))
            else:
                untunable.append(str(task.task_name))
    else:
        for gv, func in sorted(mod.functions_items(), key=lambda kv: kv[0].name_hint):
            if not isinstance(func, tirx.PrimFunc):
                continue
            if not _tunable(func):
                untunable.append(gv.name_hint)
                continue
            task_mod = _task_module(func)
            for i, (name, other, weight) in enumerate(tunable):
                if tvm_ffi.structural_equal(task_mod, other):  # the same kernel again: one task
                    tunable[i] = (name, other, weight + 1)
                    break
            else:
                tunable.append((gv.name_hint, task_mod, 1.0))
    tunable.sort(key=lambda item: item[0])
    return tunable, sorted(untunable)


def tasks_of(mod: Any, target: Any) -> list[tuple[str, Any]]:
    """The tunable tasks of ``mod`` as ``(name, task IRModule)``, sorted by name.

    ``mod`` is a Relax IRModule after ``pipelines.fuse_relax`` (its fused PrimFuncs,
    as ``meta_schedule.relax_integration.extract_tasks`` finds them) or a
    PrimFunc-only IRModule (each PrimFunc). Kernels with symbolic shapes or already
    scheduled are left out (see :class:`TuningState`'s ``untunable``).
    """
    return [(name, task_mod) for name, task_mod, _ in _split_tasks(mod, target)[0]]


# ------------------------------------------------------------------------- database


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
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TuningError(f"tuning database file {path} cannot be read ({exc}); fix it, "
                              f"or delete {db_dir} and re-create it with: {TUNE_COMMAND}") from exc
        count = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            problem = None
            try:
                row = json.loads(line)
            except ValueError as exc:
                problem = f"not JSON ({exc.args[0] if exc.args else exc})"
            else:
                if name == WORKLOAD_FILE:
                    if not (isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) for x in row)):
                        problem = "expected [structural hash, module]"
                elif not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)
                          and isinstance(row[1], list) and len(row[1]) >= 2):
                    problem = "expected [workload index, [trace, run_secs, target, args_info]]"
                elif not 0 <= row[0] < counts[WORKLOAD_FILE]:
                    problem = (f"refers to workload {row[0]}, but {WORKLOAD_FILE} has "
                               f"{counts[WORKLOAD_FILE]} workload(s)")
            if problem:
                raise TuningError(f"tuning database file {path}, line {number}: {problem}; fix the file, "
                                  f"or delete {db_dir} and re-create it with: {TUNE_COMMAND}")
            count += 1
        counts[name] = count
        tensorizes = name == RECORD_FILE and '"Tensorize"' in text
    return tensorizes


def _open_database(db_dir: Path) -> Any:
    """The JSONDatabase in ``db_dir`` (which must exist, with both files well formed)."""
    from tvm.s_tir import meta_schedule as ms

    if _check_files(db_dir):
        load_tensor_intrinsics()  # the records name intrinsics, which must be registered to load them
    try:
        return ms.database.JSONDatabase(
            path_workload=str(Path(db_dir) / WORKLOAD_FILE),
            path_tuning_record=str(Path(db_dir) / RECORD_FILE),
            allow_missing=False,
            module_equality="structural",
        )
    except Exception as exc:  # TVM raises TVMError, ValueError, ... on a bad entry
        first = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
        raise TuningError(f"tuning database {db_dir}: MetaSchedule cannot load {WORKLOAD_FILE} / {RECORD_FILE} "
                          f"({first[0]}); delete {db_dir} and re-create it with: {TUNE_COMMAND}") from exc


def _records_hash(entries: Sequence[Any]) -> str | None:
    if not entries:
        return None
    text = json.dumps(list(entries), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _plain(value: Any) -> Any:
    """TVM containers in a record's JSON -> plain lists, dicts and scalars."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return str(value)


def _target_key(target: Any) -> str:
    """A target as canonical JSON: records match a target only when this is equal."""
    return json.dumps(_plain(target.export()), sort_keys=True)


def _task_records(db: Any, task_mod: Any) -> list[tuple[str, Any]]:
    """The successful records of one task, fastest first, each with its target's key."""
    if not db.has_workload(task_mod):
        return []
    workload = db.commit_workload(task_mod)  # known: returns it, writes nothing
    return [(_target_key(r.target), r) for r in db.get_top_k(workload, max(1, len(db))) if r.target is not None]


def _best_records(db: Any, tasks: Sequence[tuple[str, Any]], target: Any) -> dict[str, Any]:
    """The fastest record of each task measured for exactly ``target``, by task name
    (tasks without one are left out). MetaSchedule's own look-up ignores the target,
    so a database holding records of several machines or targets would otherwise
    hand, say, a CPU schedule to a CUDA build."""
    key = _target_key(target)
    best: dict[str, Any] = {}
    for name, task_mod in tasks:
        match = next((record for k, record in _task_records(db, task_mod) if k == key), None)
        if match is not None:
            best[name] = match
    return best


def inspect(mod: Any, target: Any, db_dir: Path) -> TuningState:
    """Which tasks of ``mod`` have a record for ``target`` in the database at
    ``db_dir``, and a hash of the records :func:`apply` would use. Raises
    :class:`TuningError` when the directory does not exist or its files are missing
    or malformed (the message names the file and the fix)."""
    db = _open_database(Path(db_dir))
    tunable, untunable = _split_tasks(mod, target)
    key = _target_key(target)
    best: dict[str, Any] = {}
    others: set[str] = set()  # targets the missing tasks do have records for
    elsewhere: list[str] = []
    for name, task_mod, _ in tunable:
        records = _task_records(db, task_mod)
        match = next((record for k, record in records if k == key), None)
        if match is not None:
            best[name] = match
        elif records:
            others |= {k for k, _ in records}
            elsewhere.append(name)
    entries = [[str(best[name].workload.as_json()[0]), _plain(best[name].as_json())]
               for name, _, _ in tunable if name in best]
    return TuningState(
        db_dir=str(db_dir),
        records_hash=_records_hash(entries),
        tasks=tuple(name for name, _, _ in tunable),
        missing=tuple(name for name, _, _ in tunable if name not in best),
        untunable=tuple(untunable),
        other_targets=tuple(sorted(others)),
        elsewhere=tuple(elsewhere),
    )


def apply(mod: Any, target: Any, db_dir: Path) -> Any:
    """``mod`` with the best schedule for ``target`` of each task from the database
    at ``db_dir`` applied (those functions get ``tirx.is_scheduled``). Tasks without
    a record for ``target`` and untunable kernels keep their untuned form
    (:func:`inspect` reports them). Raises :class:`TuningError` as :func:`inspect`
    does."""
    from tvm import relax, tirx
    from tvm.s_tir import meta_schedule as ms

    db = _open_database(Path(db_dir))
    tasks = tasks_of(mod, target)
    best = _best_records(db, tasks, target)
    chosen = ms.database.MemoryDatabase(module_equality="structural")  # only the records for this target
    for name, task_mod in tasks:
        record = best.get(name)
        if record is not None:
            chosen.commit_tuning_record(ms.database.TuningRecord(
                record.trace, chosen.commit_workload(task_mod), record.run_secs, record.target, record.args_info))
    if _is_relax(mod):
        with target, chosen:
            return relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
    result = mod.clone()
    for gv, func in mod.functions_items():
        if not isinstance(func, tirx.PrimFunc) or not _tunable(func):
            continue
        scheduled = chosen.query_ir_module(_task_module(func), target, "main")
        if scheduled is None:
            continue
        new = scheduled["main"]
        if func.attrs is not None:  # the global symbol and the rest, as they were
            for key, value in func.attrs.items():
                new = new.with_attr(key, value)
        result.update_func(gv, new.with_attr("tirx.is_scheduled", True))
    return result


# --------------------------------------------------------------------------- tuning


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


def _build(mod: Any, target: Any, _params: Any) -> Any:
    """MetaSchedule's default build function without its import of the tensor
    intrinsics: that import takes 30-40 s in each fresh builder worker (one is started
    per batch) with torch installed, past the build timeout, so every candidate
    failed. A candidate's IR is already scheduled (a tensorized block carries the
    intrinsic's implementation), so building it does not need them."""
    import tvm
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm.tirx.build(mod, target)


def _require_tuning_packages() -> None:
    missing = [name for name in ("cloudpickle", "psutil") if importlib.util.find_spec(name) is None]
    if missing:
        raise TuningError(f"tuning needs {' and '.join(missing)} (MetaSchedule builds and measures candidates "
                          f"in worker processes); install with: pip install {' '.join(missing)}")


def _tuning_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _progress_callback(progress: Callable[[int, int], None], total: int) -> Any:
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class _Progress(PyMeasureCallback):
        """Reports (trials measured so far, trial budget) after each measured batch."""

        def __init__(self) -> None:
            self.done = 0

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
            self.done = min(total, self.done + len(measure_candidates))
            progress(self.done, total)

    return _Progress()


def tune(mod: Any, target: Any, db_dir: Path, trials: int, *,
         progress: Callable[[int, int], None] | None = None, seed: int = 0) -> TuningState:
    """Tune the tasks of ``mod`` with MetaSchedule and add the records to the
    database at ``db_dir`` (created when missing); returns :func:`inspect` afterwards.

    ``trials`` is the total budget of measured candidates, split evenly over the
    tasks (each gets ``ceil(trials / tasks)`` until the budget runs out), measured
    in batches of up to ``MAX_TRIALS_PER_ITER`` per task. There is no learned cost
    model (``cost_model="random"``: no xgboost); the evolutionary search starts from
    the best records already in the database (MetaSchedule takes them whatever their
    target), so tuning again refines them. Builds and measurements run in worker
    processes, whose native warnings go to file descriptor 2.
    ``progress(done, total)`` is called after each measured batch with the trials
    measured so far (the search may end a task early, so ``done`` can stay below
    ``total``). ``seed`` seeds the search. Untunable kernels are skipped.
    """
    from tvm.s_tir import meta_schedule as ms

    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    db_dir = Path(db_dir)
    _require_tuning_packages()
    try:
        db_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TuningError(f"cannot create the tuning database directory {db_dir}: {exc}") from exc
    for name in (WORKLOAD_FILE, RECORD_FILE):
        if not (db_dir / name).exists():
            (db_dir / name).touch()
    database = _open_database(db_dir)
    tasks, _ = _split_tasks(mod, target)
    if not tasks:
        return inspect(mod, target, db_dir)

    per_task = math.ceil(trials / len(tasks))
    cores = _tuning_cores()
    load_tensor_intrinsics()  # the schedule rules for CPU targets load them
    contexts = [
        ms.TuneContext(
            mod=task_mod,
            target=target,
            space_generator="post-order-apply",
            search_strategy="evolutionary",
            task_name=name,
            rand_state=rand_state,
            num_threads=cores,
            logger=logging.getLogger(f"{LOGGER}.{name}"),
        ).clone()
        for (name, task_mod, _), rand_state in zip(tasks, ms.utils.fork_seed(seed, n=len(tasks)))
    ]
    callbacks = list(ms.MeasureCallback.create("default"))
    if progress is not None:
        callbacks.append(_progress_callback(progress, trials))
    with tempfile.TemporaryDirectory(prefix="tvmperf-tune-") as work_dir:  # unused: the database is given
        try:
            ms.tune_tasks(
                tasks=contexts,
                task_weights=[weight for _, _, weight in tasks],
                work_dir=work_dir,
                max_trials_global=max(trials, len(tasks)),  # every kernel gets a trial
                max_trials_per_task=per_task,
                num_trials_per_iter=max(1, min(per_task, MAX_TRIALS_PER_ITER)),
                builder=ms.builder.LocalBuilder(max_workers=cores, f_build=_build),
                runner="local",
                database=database,
                cost_model="random",
                measure_callbacks=callbacks,
                task_scheduler="round-robin",
            )
        except Exception as exc:  # TVM raises RuntimeError, TVMError, ... from the search
            text = [line for line in str(exc).strip().splitlines() if line.strip()]
            raise TuningError(f"MetaSchedule tuning failed ({type(exc).__name__}: {text[-1] if text else ''}); "
                              f"the records measured so far are kept in {db_dir}") from exc
    return inspect(mod, target, db_dir)
