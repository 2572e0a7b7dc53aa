"""MetaSchedule as the tuning run's :class:`~tuning_run.Tuner` (see
:mod:`pytest_tvmperf.builder.tuning`): one ``tune_tasks`` call per kernel and share, ended
by a measure callback when the run says so, the candidates built in this process and run
in the runner's worker process (kept for the run), the evolutionary search sized for the
random cost model, the RPC devices. TVM is imported lazily."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pytest_tvmperf.builder.tuning_db import TuningError, load_tensor_intrinsics

#: the most candidates built and measured in one batch (one progress report each)
MAX_TRIALS_PER_ITER = 16
#: the loggers MetaSchedule's per-task messages go to (silent unless configured)
LOGGER = "pytest_tvmperf.builder.tuning"


class EndOfTuning(Exception):
    """Raised from the measure callback to end the search (the records are in the database)."""


def batch_callback(on_batch: Callable[[int, int], bool]) -> Any:
    """The measure callback that calls ``on_batch(candidates measured, of them valid: built
    and ran)`` after each batch and ends the search (raising :class:`EndOfTuning`) when it
    returns False. An exception of ``on_batch`` (Ctrl-C in a progress bar) ends it too,
    kept in ``interrupted`` to be raised after the search."""
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
        config = ms.runner.RPCConfig(
            tracker_host=host,
            tracker_port=port,
            tracker_key=self.key,
            session_priority=1,
            session_timeout_sec=RPC_SESSION_TIMEOUT_S,
        )
        return ms.runner.RPCRunner(rpc_config=config, max_workers=1)


def _in_process_builder() -> Any:
    """A MetaSchedule builder that builds the candidates here, one after another: its
    LocalBuilder starts a fresh pool of worker processes for every batch, each importing
    TVM (8 s on a busy 2-core machine: a kernel's first batch took 20 s). The candidates
    still run in the runner's worker process, so one that crashes does not take this one
    with it. Built as MetaSchedule's default build function does, less its import of the
    tensor intrinsics (a candidate's IR is already scheduled)."""
    import tvm
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
    from tvm.s_tir.meta_schedule.builder.local_builder import default_export
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    @derived_object
    class _InProcess(PyBuilder):
        def build(self, build_inputs: list) -> list:
            results = []
            for build_input in build_inputs:
                try:
                    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(build_input.mod)
                    results.append(BuilderResult(default_export(tvm.tirx.build(mod, build_input.target)), None))
                except Exception as exc:  # noqa: BLE001 - this candidate fails to build: MetaSchedule's own result
                    results.append(BuilderResult(None, f"in-process build: {type(exc).__name__}: {exc}"))
            return results

    return _InProcess()


#: the evolutionary search's population and rounds of mutation (MetaSchedule's defaults, 512
#: and 4, are for its learned cost model to rank): with the random cost model more of them
#: only cost time, two thirds of a batch's (ms.Profiler, tiny MLP). The mutants still start
#: from the best records in the database.
SEARCH_POPULATION = 64
SEARCH_ROUNDS = 1


class _MetaSchedule:
    """The :class:`~tuning_run.Tuner` of MetaSchedule: one ``tune_tasks`` call per kernel
    and share, ended after a batch by the run (:func:`batch_callback`). The
    builder and the runner (its worker process) are made once and kept for all calls."""

    def __init__(
        self, tasks: list, target: Any, database: Any, devices: RpcDevices | None, seed: int, db_dir: Path
    ) -> None:
        self.tasks, self.target, self.database, self.devices = tasks, target, database, devices
        self.seed, self.db_dir, self.calls = seed, db_dir, 0
        self._builder: Any = None
        self._runner: Any = None

    def start(self) -> None:
        """Load the tensor intrinsics (the schedule rules for CPU targets use them) while
        the runner's worker process starts (it imports TVM): both take seconds, and the
        worker's import runs on another core."""
        made: dict[str, Any] = {}

        def make_runner() -> None:
            try:
                made["runner"] = self._new_runner()
            except BaseException as exc:  # noqa: BLE001 - raised below, in this thread
                made["error"] = exc

        worker = threading.Thread(target=make_runner, name="tvmperf-tuning-runner", daemon=True)
        worker.start()
        try:
            load_tensor_intrinsics()
        finally:
            worker.join()
        if "error" in made:
            raise made["error"]
        self._runner = made["runner"]
        self._measure()

    def _new_runner(self) -> Any:
        from tvm.s_tir import meta_schedule as ms

        return self.devices.runner() if self.devices is not None else ms.runner.LocalRunner()

    def _measure(self) -> tuple[Any, Any]:
        if self._builder is None:
            self._builder = _in_process_builder()
        if self._runner is None:
            self._runner = self._new_runner()
        return self._builder, self._runner

    def tune(self, kernel: int, trials: int, on_batch: Callable[[int, int], bool]) -> None:
        from tvm.s_tir import meta_schedule as ms

        name, task_mod, weight = self.tasks[kernel]
        try:
            cores = max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            cores = max(1, os.cpu_count() or 1)
        self.calls += 1
        context = ms.TuneContext(
            mod=task_mod,
            target=self.target,
            space_generator="post-order-apply",
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=SEARCH_POPULATION, init_min_unmeasured=16, genetic_num_iters=SEARCH_ROUNDS
            ),
            task_name=name,
            rand_state=ms.utils.fork_seed(self.seed + kernel, n=self.calls)[-1],
            num_threads=cores,
            logger=logging.getLogger(f"{LOGGER}.{name}"),
        ).clone()
        callback = batch_callback(on_batch)
        builder, runner = self._measure()
        with tempfile.TemporaryDirectory(prefix="tvmperf-tune-") as work_dir:  # unused: the database is given
            try:
                ms.tune_tasks(
                    tasks=[context],
                    task_weights=[weight],
                    work_dir=work_dir,
                    max_trials_global=trials,
                    max_trials_per_task=trials,
                    num_trials_per_iter=max(1, min(trials, MAX_TRIALS_PER_ITER)),
                    builder=builder,
                    runner=runner,
                    database=self.database,
                    cost_model="random",
                    # the first one adds each record to the database
                    measure_callbacks=[*ms.MeasureCallback.create("default"), callback],
                    task_scheduler="round-robin",
                )
            except Exception as exc:  # TVM raises RuntimeError, TVMError, ... from the search
                text = [line for line in str(exc).strip().splitlines() if line.strip()]
                if callback.interrupted is None and _behind(exc, EndOfTuning):  # the run ended the kernel: done
                    return
                if callback.interrupted is not None or _behind(exc, KeyboardInterrupt):
                    # Ctrl-C inside a Python callback reaches here through TVM as a RuntimeError
                    if isinstance(callback.interrupted, Exception):
                        raise callback.interrupted from exc
                    raise KeyboardInterrupt() from None
                raise TuningError(
                    f"MetaSchedule tuning failed ({type(exc).__name__}: {text[-1] if text else ''}); "
                    f"the records measured so far are kept in {self.db_dir}"
                ) from exc


def _behind(exc: BaseException, kind: type) -> bool:
    """Whether an exception of ``kind`` is in ``exc``'s chain or in its text (TVM's of a callback's)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return kind.__name__ in "".join(traceback.format_exception(exc))
