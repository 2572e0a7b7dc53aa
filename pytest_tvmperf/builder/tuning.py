"""MetaSchedule tuning databases for the ``tuned`` pipeline: a directory holding
MetaSchedule's two JSON-lines files, ``database_workload.json`` (per tuned kernel:
structural hash, TIR) and ``database_tuning_record.json`` (per measured schedule: the
kernel's line number, trace, run times, target, argument shapes), and the runs' summary
(store/tuning_runs.py); MetaSchedule logs to Python logging only
(``pytest_tvmperf.builder.tuning.<task>``), so it can be committed next to the baselines.

A task (a kernel, tuning_tasks.py) finds its record by its structure, not its name, so a
changed workload's is ``missing`` (:func:`inspect`) until tuned again; which record
applies on this target: tuning_choice.py. :func:`tune` needs ``cloudpickle`` and
``psutil`` (MetaSchedule's worker processes); :func:`inspect` and :func:`apply` only TVM.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pytest_tvmperf.builder.tuning_tasks import _is_relax, _tunable, _task_module, _split_tasks, tasks_of
from pytest_tvmperf.builder.tuning_db import RECORD_FILE, WORKLOAD_FILE, TuningError, db_lines, repair_torn
from pytest_tvmperf.builder.tuning_db import _check_files, _open_database, _records_hash
from pytest_tvmperf.builder.timer import wall_clock
from pytest_tvmperf.builder.tuning_budget import plan_trials, shares, summary_line
from pytest_tvmperf.builder.tuning_state import TuningState, TuningView, view_of
from pytest_tvmperf.builder.tuning_ms import RpcDevices, _MetaSchedule
from pytest_tvmperf.builder.tuning_run import Display, Kernel, NoDisplay, Tuner, run
from pytest_tvmperf.builder.tuning_choice import record_digest, record_entry, resolve, source_note, target_json
from pytest_tvmperf.builder.tuning_choice import target_key, target_label
from pytest_tvmperf.store.tuning_runs import TuningRun, append_run


def inspect(
    mod: Any, target: Any, db_dir: Path, mode: str = "any", pinned: Mapping[str, str] | None = None
) -> TuningState:
    """Which tasks of ``mod`` have a record that applies to ``target`` in the database at
    ``db_dir`` (tuning_choice.py), and a hash of the records :func:`apply` uses. Raises
    :class:`TuningError` for a missing or malformed database, naming the file and the fix."""
    db_dir, mode, pinned = view_of(db_dir, mode, pinned)
    db = _open_database(db_dir)
    tunable, untunable = _split_tasks(mod, target)
    found = resolve(db, [(name, task_mod) for name, task_mod, _ in tunable], target, mode, pinned)
    chosen = [found.chosen[name] for name, _, _ in tunable if name in found.chosen]
    here = target_label(target_json(target))
    return TuningState(
        db_dir=str(db_dir),
        records_hash=_records_hash([record_entry(c.record) for c in chosen]),
        tasks=tuple(name for name, _, _ in tunable),
        missing=tuple(name for name, _, _ in tunable if name not in found.chosen),
        untunable=tuple(untunable),
        other_targets=found.other_targets,
        elsewhere=found.elsewhere,
        portable=tuple(c.task for c in chosen if not c.exact),
        source=source_note(chosen, len(tunable), here),
        left_out=tuple(item.describe() for item in found.left_out),
        here=here,
        records={c.task: record_digest(c.record) for c in chosen} or None,
    )


def apply(
    mod: Any, target: Any, db_dir: "Path | TuningView", mode: str = "any", pinned: Mapping[str, str] | None = None
) -> Any:
    """``mod`` with the record :func:`inspect` chooses for each task applied (marked
    ``tirx.is_scheduled``); the other kernels keep their untuned form."""
    from tvm import relax, tirx
    from tvm.s_tir import meta_schedule as ms

    db_dir, mode, pinned = view_of(db_dir, mode, pinned)
    db = _open_database(db_dir)
    tasks = tasks_of(mod, target)
    found = resolve(db, tasks, target, mode, pinned)
    chosen = ms.database.MemoryDatabase(module_equality="structural")  # only the records used here
    for name, task_mod in tasks:
        if name in found.chosen:
            r, workload = found.chosen[name].record, chosen.commit_workload(task_mod)
            chosen.commit_tuning_record(ms.database.TuningRecord(r.trace, workload, r.run_secs, target, r.args_info))
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


def tune(
    mod: Any,
    target: Any,
    db_dir: Path,
    trials: int | None = None,
    *,
    budget_s: float | None = None,
    display: Display | None = None,
    seed: int = 0,
    devices: RpcDevices | None = None,
    workload: str = "",
    clock: Callable[[], float] = wall_clock,
    tuner: Callable[[Sequence[Kernel]], Tuner] | None = None,
) -> TuningState:
    """Tune the tasks of ``mod`` into the database at ``db_dir`` (created when missing), then
    :func:`inspect` it. ``trials``: ``ceil(trials / tasks)`` per task, an earlier or killed
    tuning's included; ``budget_s``: wall-clock seconds (tuning_budget.py, tuning_run.py).
    Each record is appended at once (a killed tuning keeps what it measured); no learned
    cost model (no xgboost). ``clock``, ``tuner``: for tests (None: MetaSchedule);
    ``devices``: RPC devices to measure on instead (``target`` is then theirs)."""
    if trials is None and budget_s is None:
        raise ValueError("tune needs trials or a time budget")
    if trials is not None and trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if budget_s is not None and not budget_s > 0:
        raise ValueError(f"the time budget must be > 0 s, got {budget_s}")
    began = clock()
    db_dir = Path(db_dir)
    display = display if display is not None else NoDisplay()
    label = workload or "the workload"
    missing = [name for name in ("cloudpickle", "psutil") if importlib.util.find_spec(name) is None]
    if missing:
        raise TuningError(
            f"tuning needs {' and '.join(missing)} (MetaSchedule builds and measures candidates "
            f"in worker processes); install with: pip install {' '.join(missing)}"
        )
    try:
        db_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TuningError(f"cannot create the tuning database directory {db_dir}: {exc}") from exc
    for name in (WORKLOAD_FILE, RECORD_FILE):
        if not (db_dir / name).exists():
            (db_dir / name).touch()
    _check_files(db_dir)
    repair_torn(db_dir)  # a killed tuning's cut-short last line: the next record starts a line of its own
    database = _open_database(db_dir)
    all_tasks, _ = _split_tasks(mod, target)
    done_before = measured_counts(db_dir, database, [(n, m) for n, m, _ in all_tasks], target)
    plans_all = plan_trials([n for n, _, _ in all_tasks], trials, done_before)
    todo = [(task, plan) for task, plan in zip(all_tasks, plans_all) if plan.remaining != 0]
    if not todo:
        return inspect(mod, target, db_dir)
    tasks = [task for task, _ in todo]
    share = shares([weight for _, _, weight in tasks], [None] * len(tasks), [_flops(m) for _, m, _ in tasks])
    kernels = [Kernel(name, sh, plan.remaining) for (name, _, _), sh, (_, plan) in zip(tasks, share, todo)]
    measure = tuner(kernels) if tuner is not None else _MetaSchedule(tasks, target, database, devices, seed, db_dir)
    records_before = len(db_lines(db_dir, RECORD_FILE))
    try:
        outcome = run(label, kernels, budget_s, measure, clock, display, began)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"tuning interrupted; the records measured so far are kept in {db_dir}") from None
    written = len(db_lines(db_dir, RECORD_FILE)) - records_before
    display.summary(summary_line(label, outcome.used_s, budget_s, outcome.trials, written, outcome.kernels))
    _keep_run(db_dir, label, target, outcome, budget_s, written)
    return inspect(mod, target, db_dir)


def _keep_run(db_dir: Path, workload: str, target: Any, outcome: Any, budget_s: float | None, written: int) -> None:
    """The run's time, trials and records, kept with the records (store/tuning_runs.py)."""
    import tvm

    run = TuningRun(
        workload=workload[:512],
        target=str(target)[:512],
        used_s=round(float(outcome.used_s), 3),
        budget_s=None if budget_s is None else float(budget_s),
        trials=int(outcome.trials),
        kernels=int(outcome.kernels),
        records=int(written),
        tvm=str(tvm.__version__),
        finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    try:
        append_run(db_dir, run)
    except OSError as exc:  # the records are written; only their summary is lost
        warnings.warn(f"tvmperf: could not keep the tuning run in {db_dir}: {exc}", stacklevel=2)


def _flops(task_mod: Any) -> float:
    """A task's estimated FLOPs (0 where TVM cannot estimate them)."""
    from tvm.s_tir.analysis import estimate_tir_flops

    try:
        return max(0.0, float(estimate_tir_flops(task_mod)))
    except Exception:  # noqa: BLE001 - an estimate only: the task gets the smallest share
        return 0.0


def measured_counts(db_dir: Path, db: Any, tasks: list[tuple[str, Any]], target: Any) -> dict[str, int]:
    """How many trials (successful or not) each task already has for exactly ``target``."""
    key = target_key(target)
    index_of = {str(db.commit_workload(m).as_json()[0]): name for name, m in tasks if db.has_workload(m)}
    if not index_of:
        return {}
    shash_at = [str(json.loads(line)[0]) for line in db_lines(db_dir, WORKLOAD_FILE)]
    counts: dict[str, int] = {}
    for row in map(json.loads, db_lines(db_dir, RECORD_FILE)):
        name = index_of.get(shash_at[row[0]]) if 0 <= row[0] < len(shash_at) else None
        if name is not None and len(row[1]) > 2 and json.dumps(row[1][2], sort_keys=True) == key:
            counts[name] = counts.get(name, 0) + 1
    return counts
