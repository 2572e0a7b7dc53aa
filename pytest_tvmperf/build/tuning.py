"""MetaSchedule tuning databases for the ``tuned`` pipeline.

A tuning database is a directory holding MetaSchedule's two JSON-lines files,
``database_workload.json`` (one line per tuned kernel: its structural hash and its
TIR) and ``database_tuning_record.json`` (one line per measured schedule: the
kernel's line number, the schedule trace, its run times, the target and argument
shapes). Nothing else is written there: MetaSchedule's log messages go to Python
logging only (``pytest_tvmperf.build.tuning.<task>`` and ``tvm.s_tir.meta_schedule.*``,
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

import importlib.util
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_tvmperf.build.tuning_tasks import (  # noqa: F401  (tasks_of re-exported)
    _is_relax,
    _tunable,
    _task_module,
    _split_tasks,
    tasks_of,
)
from pytest_tvmperf.build.tuning_db import (  # noqa: F401  (re-exported: TuningError and the file names)
    RECORD_FILE,
    TUNE_COMMAND,
    WORKLOAD_FILE,
    TuningError,
    load_tensor_intrinsics,
    _recreate_hint,
    _check_files,
    _open_database,
    _records_hash,
    _plain,
    _target_key,
    _task_records,
    _best_records,
)

#: how a user creates or refreshes a tuning database
#: the most candidates built and measured in one batch (one progress report each)
MAX_TRIALS_PER_ITER = 16
#: the loggers MetaSchedule's per-task messages go to (silent unless configured)
LOGGER = "pytest_tvmperf.build.tuning"


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


#: MetaSchedule's RPC runner: the longest one candidate's session (connect, upload, run) may
#: take on a device before it counts as failed (its default, 10 s, is short for a busy device)
RPC_SESSION_TIMEOUT_S = 120


@dataclass(frozen=True)
class RpcDevices:
    """Where to measure tuning candidates instead of this machine: the devices a TVM
    RPC tracker offers under ``key`` (MetaSchedule's RPC runner asks it for one per
    candidate batch; the builds stay on the host)."""

    tracker: tuple[str, int]
    key: str

    def runner(self) -> Any:
        from tvm.s_tir import meta_schedule as ms

        host, port = self.tracker
        config = ms.runner.RPCConfig(tracker_host=host, tracker_port=port, tracker_key=self.key,
                                     session_priority=1, session_timeout_sec=RPC_SESSION_TIMEOUT_S)
        return ms.runner.RPCRunner(rpc_config=config, max_workers=1)


def tune(mod: Any, target: Any, db_dir: Path, trials: int, *,
         progress: Callable[[int, int], None] | None = None, seed: int = 0,
         devices: RpcDevices | None = None) -> TuningState:
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
    ``devices``: measure the candidates on RPC devices (MetaSchedule's RPC runner) instead
    of this machine; ``target`` is then the device's.
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
                runner=devices.runner() if devices is not None else "local",
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
