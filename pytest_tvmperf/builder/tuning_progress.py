"""The MetaSchedule measure callback that hands each measured batch to the tuning run
(tuning_run.py) and ends the search when the run says so, and the trials a database
already holds for a target (an earlier, perhaps killed, run's). TVM is imported lazily."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from pytest_tvmperf.builder.tuning_choice import target_key
from pytest_tvmperf.builder.tuning_db import RECORD_FILE, WORKLOAD_FILE, intact_text


class EndOfTuning(Exception):
    """Raised from the measure callback to end the search: the kernel has its trials or
    its time (or Ctrl-C). The records measured so far are in the database already."""


def batch_callback(on_batch: Callable[[int, int], bool]) -> Any:
    """The measure callback that calls ``on_batch(candidates measured, of them valid: built
    and ran)`` after each batch
    and ends the search (raising :class:`EndOfTuning`) when it returns False. An
    exception of ``on_batch`` (Ctrl-C in a progress bar) ends it too, kept in
    ``interrupted`` to be raised after the search."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class _Batches(PyMeasureCallback):
        def __init__(self) -> None:
            self.interrupted: BaseException | None = None

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
            try:
                ok = sum(1 for result in runner_results if result.error_msg is None and result.run_secs)
                go_on = on_batch(len(measure_candidates), ok)
            except BaseException as exc:  # Ctrl-C (or a failing display): the search ends, raised after it
                self.interrupted = exc
                raise EndOfTuning() from None
            if not go_on:
                raise EndOfTuning()

    return _Batches()


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
