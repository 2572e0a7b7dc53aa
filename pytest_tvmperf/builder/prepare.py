"""Build and check: compile a workload for one executor and target (with its pipeline
and tuning database), run it once in a child process, and check its output against the
NumPy reference, also on Hypothesis-drawn shapes. What fails here fails the test before
anything is timed."""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import pytest

from pytest_tvmperf.builder.correctness import check_outputs, mismatch_text
from pytest_tvmperf.builder.executors import CompileError, shorten_tvm_error
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.timer import stopwatch
from pytest_tvmperf.builder.tuning_display import TuningIO
from pytest_tvmperf.values.run_notes import Note
from pytest_tvmperf.workload import Workload, output_specs

if TYPE_CHECKING:
    from pytest_tvmperf.builder.build_context import BuildContext

#: numbers of the files a session loads from its scratch directory: a loaded library's
#: name is never reused (the loader would hand back the library loaded before)
FILE_NUMBERS = itertools.count()


@dataclass(frozen=True)
class Prepared:
    """A workload compiled for one executor and checked against its reference."""

    workload: Workload
    executor: str
    target: Any
    compiled: Any
    inputs: list
    args: list
    expected: list
    out_specs: list
    compile_s: float
    tuning: Any = None  # tuning.TuningState for pipeline="tuned"
    #: the CUDA kernels built to PTX and assembled (cuda_build.DeviceCode), cuda targets only
    device_code: Any = None
    #: seconds of the checking run here, the simulated cost's basis (measure/simulate.py)
    run_s: float | None = None


@dataclass
class Preparer:
    """Compiles and checks the workloads of one test (one target)."""

    #: the run's session (session.py's ``TvmperfSession``), as the builder sees it
    session: "BuildContext"
    target_name: str
    nodeid: str
    #: records the outcome and fails the test: ``fail(verdict, message)``
    fail: Callable[..., NoReturn]
    #: how a tuning is shown and measured (builder/tuning_display.py)
    tuning_io: TuningIO = field(default_factory=TuningIO)
    #: compiled programs exported to run in the child first, by id (reused for a/b timing)
    exports: dict[int, tuple[Any, Path]] = field(default_factory=dict)
    #: the tuning state the test's baseline was measured with (its ``records`` are kept)
    baseline_tuning: Callable[[], Any] = lambda: None
    #: the baseline file that holds an entry of this test, as shown (None: no entry)
    baseline_entry: Callable[[], str | None] = lambda: None

    def prepare(self, workload: Workload, executor_name: str, where: str) -> Prepared:
        """Compile ``workload`` and check it against its reference, also on Hypothesis-drawn shapes."""
        __tracebackhide__ = True
        if not isinstance(workload, Workload):
            raise TypeError(f"tvmperf takes a pytest_tvmperf.Workload, got {type(workload).__name__}")
        executor = get_executor(executor_name)
        target = self.session.target(self.target_name)
        on_target = getattr(executor, "unsupported_on", None)  # an executor for some targets only
        unrunnable = executor.unsupported(workload)
        if unrunnable and not self.session.settings.update and (shown := self.baseline_entry()) is not None:
            # the workload changed under its entry (a Relax model become a PrimFunc): skipping would take the
            # test out of the gate without a word (issue 66); a machine that cannot run a target still skips
            self.fail(
                "error",
                f"tvmperf: {self.nodeid}: {shown} holds a baseline of this test under {executor_name}, but the "
                f"workload no longer runs there ({unrunnable}); skipped, the test would leave the gate silently: "
                f"re-record the test's baselines with --tvmperf-update (and remove this entry with "
                f"--tvmperf-prune), or give the test executors= that name only those it runs under",
            )
        reason = unrunnable or (on_target(target) if on_target else None) or target.skip_reason
        if reason:
            pytest.skip(reason)
        tuning_db, tuning_state = self._tuning(workload, target, where)
        if target.remote is not None and not target.remote.alive:  # given back to the tracker for tuning
            target = self.session.target(self.target_name)
        reading_db = self.session.timing_lock() if tuning_db is not None else contextlib.nullcontext()
        with reading_db, stopwatch() as compile_time:
            try:
                compiled = executor.compile(workload, target, tuning_db)
            except CompileError as exc:
                self.fail("error", f"tvmperf: compiling {where} failed:\n{exc}")
        device_code = self._device_code(compiled, target, where) if target.device_type == "cuda" else None
        built = Prepared(
            workload, executor_name, target, compiled, [], [], [], [], compile_time[0], tuning_state, device_code
        )
        if not target.runnable:  # built and gated on its exact metrics only (measure/plan.py: the "built only" mode)
            return built
        inputs = workload.inputs()
        args = workload.call_args(inputs)
        expected = workload.expected(inputs)
        out_specs = output_specs(expected)
        self._check_signature(workload, inputs, out_specs, where)
        self._run_in_child(compiled, executor_name, workload, args, out_specs, where)
        with stopwatch() as run_time:
            got = self._first_run(compiled, args, out_specs, where)
        mismatch = check_outputs(got, expected, workload.rtol, workload.atol)
        if mismatch:
            self.fail(
                "wrong",
                f"tvmperf: {where} does not match its {workload.reference_name} reference\n"
                + mismatch_text(
                    workload, mismatch, f"(dims {dict(workload.dims)}, seed {workload.seed})" if workload.dims else ""
                ),
            )
        if workload.dim_ranges:
            self._check_symbolic(compiled, workload, where)
        return replace(built, inputs=inputs, args=args, expected=expected, out_specs=out_specs, run_s=run_time[0])

    def _first_run(self, compiled, args, out_specs, where: str):
        """The program's outputs on ``args``; a kernel that runs out of memory fails the
        test saying so (not TVM's raw ``std::bad_alloc`` under a dump of the session)."""
        __tracebackhide__ = True
        try:
            return compiled.run(args, out_specs)
        except Exception as exc:  # an allocation that failed (``std::bad_alloc``, a MemoryError)
            text = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, MemoryError) and not any(
                w in text for w in ("bad_alloc", "Out of memory", "out of memory")
            ):
                raise
            problem = shorten_tvm_error(exc, 1)
        self.fail(
            "error",
            f"tvmperf: {where}: the kernel ran out of memory ({problem}); it allocates more than this "
            f"machine can give (check the shapes it allocates), or run it where more memory is free",
        )

    def _device_code(self, compiled, target, where: str):
        """The CUDA kernels built with nvcc and ``ptxas -v`` (the build check without a GPU, and the
        resource metrics); None without nvcc/ptxas (on a GPU machine TVM builds with NVRTC)."""
        __tracebackhide__ = True
        from pytest_tvmperf.builder.cuda_build import DeviceCompileError, device_code
        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain

        toolchain = find_toolchain()
        if toolchain.missing:
            return None
        arch = str(target.config.get("arch", ""))
        try:
            return device_code(compiled, arch, toolchain)
        except DeviceCompileError as exc:
            problem = str(exc)
        self.fail("error", f"tvmperf: compiling {where} failed: its CUDA kernels do not build for {arch}:\n{problem}")

    def _check_signature(self, workload: Workload, inputs, out_specs, where: str) -> None:
        """A call the entry function cannot take fails here, naming the arguments."""
        __tracebackhide__ = True
        from pytest_tvmperf.builder.pipelines import prim_module
        from pytest_tvmperf.builder.signature import prim_signature, relax_signature, signature_problem

        try:
            params = (
                relax_signature(workload.program, workload.entry)
                if workload.kind == "relax"
                else prim_signature(prim_module(workload.program, workload.entry), workload.entry)
            )
        except Exception:  # a program this check cannot read: TVM's own error at the call
            return
        given = [(tuple(a.shape), str(a.dtype)) for a in inputs]
        weights, outputs = [n for n, _ in workload.params], [(tuple(s), d) for s, d in out_specs]
        problem = signature_problem(workload.name, workload.entry, workload.kind, params, given, weights, outputs)
        if problem is not None and problem.verdict == "wrong":
            self.fail(
                "wrong", f"tvmperf: {where} does not match its {workload.reference_name} reference\n{problem.message}"
            )
        if problem is not None:
            self.fail("error", f"tvmperf: {where}: {problem.message}")

    def _run_in_child(self, compiled, executor: str, workload: Workload, args, out_specs, where: str) -> None:
        """Run the artifact once in a child process first: a crash fails this test, not the session."""
        __tracebackhide__ = True
        path = self.session.scratch_dir() / f"isolated-{next(FILE_NUMBERS)}-{executor}.so"  # never a name loaded before
        from pytest_tvmperf.store.disk import room_problem

        no_room = room_problem(path.parent)  # LLVM ends the process on a failed write: checked first
        if no_room is not None:
            self.fail(
                "error",
                f"tvmperf: {where}: the compiled library cannot be exported to run it in a child process: {no_room}",
            )
        try:
            compiled.export(str(path))
        except Exception:  # no toolchain to export with: it runs in the session, as a/b timing is off
            return
        self.exports[id(compiled)] = (compiled, path)
        if getattr(compiled, "is_remote", False):  # an RPC device runs it in its own process
            return
        from pytest_tvmperf.builder.host_cpu import crash_note

        target = self.session.target(self.target_name)
        crash = self.session.sandbox().run(path, executor, workload.entry, target.device_type, args, out_specs)
        if crash is not None:
            self.fail(
                "error",
                f"tvmperf: {where}: the compiled kernel {crash.what} ({crash.how}) when run in a child "
                f"process; nothing was run in the session"
                + (f"\nthe child's last words:\n{crash.stderr}" if crash.stderr else "")
                + crash_note(crash.how, target.config),
            )
        run_from = getattr(compiled, "run_from", None)
        if run_from is not None and target.device_type == "cpu":  # the code the child ran, without a JIT compile here
            with contextlib.suppress(Exception):  # not loadable here: the in-memory module runs, as before
                run_from(str(path))

    def _tuning(self, workload: Workload, target, where: str):
        """For ``pipeline="tuned"``: the tuning database (tuned first with ``--tvmperf-tune``)
        and its state; a missing or unusable one fails the test saying how to fix it."""
        __tracebackhide__ = True
        if workload.pipeline != "tuned":
            return None, None
        from pytest_tvmperf.builder import tuning
        from pytest_tvmperf.builder.pipelines import tuning_module
        from pytest_tvmperf.builder.tuning_run import BudgetTooSmall
        from pytest_tvmperf.builder.tuning_state import TuningView

        settings = self.session.settings
        db = Path(self.session.rootpath, workload.tuning_db) if workload.tuning_db else settings.tuning_db
        shown = self.session.shown(db)
        tvm_target = target.tvm_target()
        tuned_now = False
        problem = too_small = None
        tune_here = self.session.accept_command(self.nodeid, first=("--tvmperf-tune=TRIALS",))
        try:
            module = tuning_module(workload, tvm_target)
            # the machine-wide lock: xdist workers tune one at a time, and never read a
            # database another worker is appending to
            with self.session.timing_lock():
                wants_tuning = bool(settings.tune_trials or settings.tune_budget_s)
                if wants_tuning and self.session.claim_tuning((workload.name, self.target_name, str(db))):
                    self._tune(module, tvm_target, db, workload, target)
                    tuned_now = True
                pinned = None if tuned_now else self._pinned()
                state = tuning.inspect(module, tvm_target, db, settings.tuned, pinned)
        except BudgetTooSmall as exc:
            too_small = exc
        except tuning.TuningError as exc:
            problem = str(exc)
        except Exception as exc:  # the fused module itself failed to build: TVM's own error, shortened
            problem = f"preparing the kernels to tune failed:\n{shorten_tvm_error(exc)}"
        if too_small is not None:  # a usage error: the run stops (exit 4, as a bad option)
            message = (
                f"tvmperf: {where}: {too_small}. Run again with --tvmperf-tune-budget={too_small.smallest} "
                f"(or: tvmperf tune --budget {too_small.smallest})"
            )
            if not self.tuning_io.exits:  # an xdist worker: the test fails with it
                self.fail("error", message)
            pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)
        if problem is not None:  # failed outside the except block: no chained traceback
            self.fail("error", f"tvmperf: {where}: {problem}")
        if tuned_now and state.missing and not state.left_out:
            self.fail(
                "error",
                f"tvmperf: {where}: tuning found no valid schedule for "
                f"{len(state.missing)} of {len(state.tasks)} kernel(s) ({', '.join(state.missing[:6])}): "
                f"every candidate failed to build or run; raise --tvmperf-tune or --tvmperf-tune-budget",
            )
        if state.left_out:
            from pytest_tvmperf.builder.tuning_choice import left_out_line

            self.session.report.note(left_out_line(shown, state.left_out, state.here), Note.TUNING)
        if settings.tuned == "exact":
            self._exact_only(state, shown, target, tvm_target, where, tune_here)
        elif state.missing and state.records_hash is None and state.tasks:
            # no record applies to any kernel: gated untuned, said once in the summary and in the test's note
            self.session.report.note(
                f"tvmperf: tuning database {shown} has no record that applies to any kernel of {workload.name} on "
                f"{state.here}: gated untuned; tune here with: {tune_here}",
                Note.TUNING,
            )
            state = replace(
                state, source=f"untuned: {shown} has no record that applies here ({len(state.tasks)} kernel(s))"
            )
        elif state.missing:
            untuned = f"{len(state.missing)} untuned ({', '.join(state.missing[:4])}{', ...' if len(state.missing) > 4 else ''})"
            state = replace(state, source="; ".join(n for n in (state.source, untuned) if n))
        return TuningView(db, pinned, settings.tuned), replace(state, db_dir=shown)

    def _pinned(self):
        """The records (task -> digest) the test's baseline was measured with, if any."""
        try:
            stored = self.baseline_tuning()
        except Exception:  # noqa: BLE001 - an unreadable baseline is reported where it is compared
            return None
        records = (stored or {}).get("records") if isinstance(stored, dict) else None
        return {str(k): str(v) for k, v in records.items()} if isinstance(records, dict) else None

    def _tune(self, module, tvm_target, db: Path, workload: Workload, target) -> None:
        """Tune ``module`` into ``db`` (``--tvmperf-tune`` / ``--tvmperf-tune-budget``)."""
        from pytest_tvmperf.builder import tuning

        settings = self.session.settings
        devices = None
        if target.remote is not None:  # measured on the key's devices (README, "Tuning on the farm")
            devices = tuning.RpcDevices(target.remote.tracker, target.remote.name.key)
            self.session.release_device(self.target_name)  # the runner asks the tracker for it
        label = workload.name + (f" on rpc:{devices.key}" if devices else "")
        tuning.tune(
            module,
            tvm_target,
            db,
            settings.tune_trials,
            budget_s=settings.tune_budget_s,
            display=self.tuning_io.display(label),
            devices=devices,
            workload=label,
            clock=self.tuning_io.tuner.clock,
            tuner=self.tuning_io.tuner.make,
        )

    def _exact_only(self, state, shown: str, target, tvm_target, where: str, tune_here: str) -> None:
        """``--tvmperf-tuned=exact``: every kernel needs a record of this exact target."""
        __tracebackhide__ = True
        if state.missing and set(state.missing) <= set(state.elsewhere):
            # tuned, but on another machine or for another target: like a time baseline of
            # another machine, shown (a skip with the reason), neither failed nor gated
            self.session.report.note(self.nodeid, Note.UNTUNED)  # the summary says what to run
            pytest.skip(
                f"the tuning database {shown} has no records for this target ({target.name}: "
                f"{tvm_target.export().get('mcpu', '')}, {len(state.missing)} of {len(state.tasks)} kernel(s)) "
                f"but has some for {len(state.other_targets)} other target(s) (--tvmperf-tuned=exact); "
                f"tune here with: {tune_here}"
            )
        if state.missing:
            self.fail(
                "error",
                f"tvmperf: {where}: the tuning database {shown} is stale: {len(state.missing)} of "
                f"{len(state.tasks)} kernel(s) have no tuning record ({', '.join(state.missing[:6])}"
                f"{', ...' if len(state.missing) > 6 else ''}); the workload changed since it was tuned, "
                f"or it was never tuned for this target.\nre-tune with: {tune_here}",
            )

    def _check_symbolic(self, compiled, workload: Workload, where: str) -> None:
        """Run the artifact on Hypothesis-drawn shapes and values (derandomized: CI is reproducible)."""
        __tracebackhide__ = True
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        dims_strategy = st.fixed_dictionaries(
            {d: st.integers(lo, hi) for d, (lo, hi) in sorted(workload.dim_ranges.items())}
        )
        failures: list[str] = []
        fixed = dict(derandomize=True, database=None, deadline=None, print_blob=False)

        @settings(
            max_examples=self.session.settings.hypothesis_examples, suppress_health_check=list(HealthCheck), **fixed
        )
        @given(dims=dims_strategy, seed=st.integers(0, 2**31 - 1))
        def run_example(dims, seed):
            inputs = workload.inputs(seed=seed, dims=dims)
            expected = workload.expected(inputs)
            got = compiled.run(workload.call_args(inputs), output_specs(expected))
            mismatch = check_outputs(got, expected, workload.rtol, workload.atol)
            if mismatch:
                failures.append(mismatch_text(workload, mismatch, f"(dims {dims}, seed {seed})"))
                raise AssertionError(failures[-1])

        with contextlib.suppress(AssertionError):
            run_example()
        if failures:  # outside the except: the mismatch is printed once, not with a chained copy
            self.fail(
                "wrong",
                f"tvmperf: {where} does not match its {workload.reference_name} reference on a "
                f"Hypothesis-drawn shape\n{failures[-1]}",
            )
