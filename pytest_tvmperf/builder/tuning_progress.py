"""A tuning run's progress: the MetaSchedule measure callback that reports each task's
trials and ends a task at its trials or its share of the time budget (tuning_budget.py),
and the trials a database already holds for a target (an earlier, perhaps killed, run's).
TVM is imported lazily."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from pytest_tvmperf.builder.tuning_budget import TaskPlan, over_budget, shares
from pytest_tvmperf.builder.tuning_choice import target_key
from pytest_tvmperf.builder.tuning_db import RECORD_FILE, WORKLOAD_FILE, intact_text


#: a task's trial cap when only a time budget is given (the budget ends the search)
BUDGET_ONLY_TRIALS = 1000

#: progress(task, trials measured for the target so far, the task's trial target or None, seconds spent on it)
Progress = Callable[[str, int, "int | None", float], None]


class EndOfTuning(Exception):
    """Raised from the measure callback to end the search: the time budget is spent (or
    Ctrl-C). The records measured so far are in the database already."""


def budget_stopper(names: list[str], plans: list[TaskPlan], weights: list[float], budget_s: float | None,
             progress: Progress | None) -> Any:
    """The measure callback that reports each task's progress and ends a task once it
    has its trials or has spent its share of the time budget (tuning_budget.py)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class _Stopper(PyMeasureCallback):
        def __init__(self) -> None:
            n = len(names)
            self.done = [0] * n
            self.spent = [0.0] * n
            self.best: list[float | None] = [None] * n
            self.stopped = [False] * n
            self.last = time.monotonic()
            self.interrupted: BaseException | None = None
            self.pending: set[int] = set()  # tasks that spent their allowance, ended at the next callback

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
            now = time.monotonic()
            self.spent[task_id] += now - self.last
            self.done[task_id] += len(measure_candidates)
            for result in runner_results:
                if result.error_msg is None and result.run_secs:
                    secs = sum(float(t) for t in result.run_secs) / len(result.run_secs)
                    if self.best[task_id] is None or secs < self.best[task_id]:
                        self.best[task_id] = secs
            plan = plans[task_id]
            try:
                if progress is not None:
                    progress(names[task_id], plan.done_before + self.done[task_id], plan.target_trials or None,
                             self.spent[task_id])
            except BaseException as exc:  # Ctrl-C (or a failing bar): the search ends, raised after it
                self.interrupted = exc
                raise EndOfTuning() from None
            if budget_s is not None:
                self._budget(task_scheduler, task_id)
            self.last = time.monotonic()

        def _budget(self, task_scheduler, task_id: int) -> None:
            """End this task once it spent its allowance. MetaSchedule cannot end a task from
            its own measure callback (it asks the task for candidates right after), so a task
            is ended from the next callback of another one, and the search as a whole (by
            raising) once every task is spent; a task not yet measured still gets its first
            batch when the whole budget is spent."""
            records = task_scheduler.tasks_
            for i, record in enumerate(records):
                self.stopped[i] = self.stopped[i] or bool(record.is_terminated)
            share = shares(weights, self.best, [float(r.flop) for r in records])
            if over_budget(budget_s, self.spent, share, [s or i in self.pending for i, s in enumerate(self.stopped)],
                           task_id):
                self.pending.add(task_id)
            for i in sorted(self.pending - {task_id}):
                if not self.stopped[i]:
                    task_scheduler.terminate_task(i)
                    self.stopped[i] = True
            if all(s or i in self.pending for i, s in enumerate(self.stopped)):
                raise EndOfTuning()

    return _Stopper()


def measured_counts(db_dir: Path, db: Any, tasks: list[tuple[str, Any]], target: Any) -> dict[str, int]:
    """How many trials each task already has measured for exactly ``target`` in the
    database (successful or not): what an earlier, perhaps killed, tuning did."""
    import json

    key = target_key(target)
    index_of: dict[str, str] = {}
    for name, task_mod in tasks:
        if db.has_workload(task_mod):
            index_of[str(db.commit_workload(task_mod).as_json()[0])] = name
    if not index_of:
        return {}
    shash_at: list[str] = []
    for line in intact_text((Path(db_dir) / WORKLOAD_FILE).read_text(encoding="utf-8")).splitlines():
        if line.strip():
            shash_at.append(str(json.loads(line)[0]))
    counts: dict[str, int] = {}
    for line in intact_text((Path(db_dir) / RECORD_FILE).read_text(encoding="utf-8")).splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        name = index_of.get(shash_at[row[0]]) if 0 <= row[0] < len(shash_at) else None
        if name is not None and len(row[1]) > 2 and json.dumps(row[1][2], sort_keys=True) == key:
            counts[name] = counts.get(name, 0) + 1
    return counts
