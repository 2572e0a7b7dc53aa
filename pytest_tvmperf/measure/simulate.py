"""Simulated cost: per-kernel instruction and estimated-cycle counts from valgrind's
callgrind, identical on every x86 machine (docs/gate.md, "Simulated cost").

:class:`SimulatedCost`, the metric source, compiles each workload once more for the
pinned portable target :data:`PINNED_TARGET` (never the host's ``mcpu``: valgrind cannot
run AVX-512, and counts must not depend on the host) and has the session's one
:class:`SimProcess` (only tvm_ffi and NumPy, started under callgrind on first use) run it
once instrumented; ``callgrind.py`` reads the dump.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pytest_tvmperf.measure import callgrind
from pytest_tvmperf.measure.metric_sources import SourceDied, SourceFailed

# sim_env.py's names, here too: tests replace host_problem on this module
from pytest_tvmperf.measure.sim_env import PINNED_DESCRIPTION, describe_setup, harness_env, host_problem
from pytest_tvmperf.measure.sim_env import valgrind_command, valgrind_version
from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS, KernelMetric
from pytest_tvmperf.values.executor_rows import is_prim, simulated_executors

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.config.per_test import TestSettings

#: the target the simulated build is compiled for, on every machine
PINNED_TARGET: Mapping[str, Any] = {"kind": "llvm", "mcpu": "haswell", "num-cores": 1}
METRICS = tuple(m for m in KERNEL_METRICS if m.name in ("cpu_instructions", "est_cycles"))
EXECUTORS = simulated_executors()
#: bounded waits: the measuring process's start-up, and one kernel's simulation (where the
#: test's settings give none: a request's deadline is --tvmperf-child-timeout)
STARTUP_TIMEOUT_S = 600.0
REQUEST_TIMEOUT_S = 600.0
#: a wait for the measuring process longer than this says so, once, with its deadline
WAIT_NOTICE_S = 30.0
#: one call's time under callgrind with cache simulation, in native run times (one TVM
#: thread, the pinned build): measured 50-100x (docs/gate.md); the prediction takes the top
SLOWDOWN = 100.0
#: the longest predicted simulated call (~1.2 s native); past it, skipped up front with one line
SIMULATE_BUDGET_S = 120.0
#: what to do about a simulated cost that cannot be counted (the docs' section)
WHAT_TO_DO = (
    "give the workload a scaled-down simulate_as=smaller_workload (counted in its place), or "
    "--tvmperf-simulate=off (marker simulate='off')"
)


def predicted_s(run_s: float | None, slowdown: float = SLOWDOWN) -> float | None:
    return None if run_s is None or not run_s > 0 else run_s * slowdown


def too_long(name: str, run_s: float | None) -> str | None:
    """The line saying ``name``'s simulated cost is skipped up front, past its budget; None if it fits."""
    predicted = predicted_s(run_s)
    if predicted is None or predicted <= SIMULATE_BUDGET_S:
        return None
    return (
        f"skipped {name} up front (not waited for): one run takes {run_s:.3g} s here, so ~{predicted:.0f} s "
        f"under valgrind (~{SLOWDOWN:g}x), past its {SIMULATE_BUDGET_S:g} s budget; {WHAT_TO_DO}"
    )


def warm_run_s(prepared) -> float | None:
    """Seconds of one more (warm) call of the prepared program, None where it cannot run."""
    from pytest_tvmperf.builder.timer import stopwatch

    try:
        with stopwatch() as elapsed:
            prepared.compiled.run(prepared.args, prepared.out_specs)
    except Exception:  # noqa: BLE001 - the prediction only: the test's own run already passed
        return None
    return elapsed[0]


def keep_log(log: Path, root: Path | None = None) -> Path | None:
    """A copy of a failed process's log the next run keeps (``$TVMPERF_CACHE_DIR/simulate-logs``), or None."""
    from pytest_tvmperf.store import user_cache

    try:
        folder = (root or user_cache.cache_root()) / "simulate-logs"
        folder.mkdir(parents=True, exist_ok=True)
        kept = folder / f"valgrind-{os.getpid()}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        shutil.copyfile(log, kept)
        return kept
    except OSError:
        return None


class RequestFailed(SourceFailed):
    """One request failed in its own child (a crashing kernel); the process serves the next tests."""


def simulate_choice(settings: "TestSettings") -> tuple[str, str]:
    """("on" | "off" | "auto", where it was set) of one test's settings (command line >
    the test's marker > ini > default, "auto": on where valgrind is present)."""
    if settings.simulate == "auto":
        return "auto", "default"
    where = "--tvmperf-simulate=off" if "simulate" in settings.pinned else "simulate=off: ini or the test's marker"
    return settings.simulate, where


def simulated_gate_note(time_status: str, comparison) -> str:
    """'simulated cost gated (cpu_instructions, est_cycles)' for the summary row when the
    time was not gated (no time baseline for this machine) but the simulated counts were."""
    from pytest_tvmperf.judge.verdict import Verdict

    if time_status != Verdict.NOT_GATED:
        return ""
    verdicts = [(m.name, comparison.get(m.name)) for m in METRICS]
    gated = [name for name, v in verdicts if v is not None and v.status not in (Verdict.NA, Verdict.NOT_GATED)]
    return f"simulated cost gated ({', '.join(gated)})" if gated else ""


@dataclass
class SimProcess:
    """The session's one measuring process under callgrind, started on first use."""

    workdir: Path
    startup_s: float = 0.0
    _proc: subprocess.Popen | None = None
    _returncode: int | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def start(self) -> None:
        out_file = self.workdir / "cg.out.%p"  # one file per process: each request is counted in its own child
        started = time.monotonic()
        with open(self.workdir / "valgrind.log", "w") as log:
            self._proc = subprocess.Popen(
                valgrind_command(out_file),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=harness_env(os.environ, out_file),
                cwd=self.workdir,
            )
        hello = self._read(STARTUP_TIMEOUT_S, "starting")
        if not hello.get("on_valgrind"):
            raise SourceFailed("the measuring process did not run under valgrind")
        self.startup_s = time.monotonic() - started

    def measure(
        self,
        library: Path,
        func: str,
        inputs: Sequence[Path],
        vm: bool,
        timeout: float = REQUEST_TIMEOUT_S,
        notify: Callable[[str], None] | None = None,
        test: str = "",
    ) -> Path:
        """Run ``func`` of ``library`` once on ``inputs`` (.npy files) instrumented; the dump's path.
        ``timeout``: the request's deadline; a wait past :data:`WAIT_NOTICE_S` is said to ``notify``."""
        if self._proc is None:
            self.start()
        request = dict(id=next(self._ids), lib=str(library), func=func, inputs=[str(p) for p in inputs], vm=vm)
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except OSError:
            self.close()
            raise SourceDied(
                f"the measuring process (valgrind) is gone{self._how}; {self._kept_log()}; {WHAT_TO_DO}"
            ) from None
        doing = f"simulating {func}" + (f" of {test}" if test else "")  # the workload's name
        answer = self._read(timeout, doing, notify, "--tvmperf-child-timeout")
        if not answer.get("ok"):
            raise RequestFailed(f"simulating {func} failed: {answer.get('error')}")
        dumps = answer.get("dump") or []
        if not dumps:
            raise RequestFailed(f"simulating {func}: callgrind wrote no dump")
        return Path(dumps[-1])

    def _read(
        self, timeout: float, doing: str, notify: Callable[[str], None] | None = None, bound_by: str = ""
    ) -> dict:
        assert self._proc is not None and self._proc.stdout is not None
        first = min(timeout, WAIT_NOTICE_S) if notify is not None else timeout
        ready, _, _ = select.select([self._proc.stdout], [], [], first)
        if not ready and first < timeout and notify is not None:  # a long wait says what it waits for
            by = f" ({bound_by})" if bound_by else ""
            notify(
                f"tvmperf: {doing} under valgrind: still waiting after {first:.0f} s; "
                f"it is stopped at {timeout:.0f} s{by}"
            )
            ready, _, _ = select.select([self._proc.stdout], [], [], timeout - first)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            why = "took longer than %ds" % timeout if not ready else "ended" + self._how
            error = SourceFailed if doing == "starting" else SourceDied  # it died measuring a test
            raise error(f"the measuring process (valgrind) {why} while {doing}; {self._kept_log()}; {WHAT_TO_DO}")
        return json.loads(line)

    def _kept_log(self) -> str:
        """Where its log can be read: a copy the next run's clean-up of scratch folders leaves."""
        kept = keep_log(self.workdir / "valgrind.log")
        return f"its log is kept as {kept}" if kept is not None else f"see its log {self.workdir / 'valgrind.log'}"

    @property
    def _how(self) -> str:
        """' (killed by SIGKILL)', ' (exit status 1)' for the process :meth:`close` ended."""
        code = self._returncode
        if code is None:
            return ""
        from pytest_tvmperf.sandbox.child import death

        return f" ({'killed by ' if code < 0 else ''}{death(code)})"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()  # the harness ends at end of input
            proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        self._returncode = proc.returncode


def _write_inputs(prepared, folder: Path) -> list[Path]:
    """The call's arguments (of ``simulate_as`` if any) as .npy files, for ``prim`` with zeroed outputs."""
    import numpy as np

    smaller = prepared.workload.simulate_as
    args, out_specs = prepared.args, prepared.out_specs
    if smaller is not None:
        from pytest_tvmperf.workload import output_specs

        inputs = smaller.inputs()
        args, out_specs = smaller.call_args(inputs), output_specs(smaller.expected(inputs))
    arrays = [np.ascontiguousarray(a) for a in args]
    if is_prim(prepared.executor):
        arrays += [np.zeros(shape, dtype) for shape, dtype in out_specs]
    for i, array in enumerate(arrays):
        np.save(folder / f"arg{i}.npy", array)
    return [folder / f"arg{i}.npy" for i in range(len(arrays))]


@dataclass
class SimulatedCost:
    """The metric source: ``cpu_instructions`` and ``est_cycles`` per kernel."""

    name: str = "simulated cost"
    metrics: tuple[KernelMetric, ...] = METRICS
    _process: SimProcess | None = None
    _workdir: Any = None  #: store/sweep.py OwnedDir
    _broken: str | None = None  # the measuring process failed: no further test tries it
    _requests: Any = field(default_factory=lambda: itertools.count())
    _setup: str | None = None
    #: writes one line to the terminal now (the session's, set by session.metric_sources)
    notify: Callable[[str], None] | None = None

    def unavailable(self, prepared, settings) -> str | None:
        choice, where = simulate_choice(settings)
        if choice == "off":
            return f"switched off ({where})"
        if (problem := host_problem()) is not None:
            return problem
        if self._broken is not None:
            return self._broken
        if prepared.executor not in EXECUTORS:
            return f"executor {prepared.executor} is not simulated (only {', '.join(EXECUTORS)})"
        if getattr(prepared.target, "device_type", "cpu") != "cpu":
            return f"target {prepared.target.name} is not simulated (CPU targets only)"
        if prepared.workload.pipeline == "tuned":
            return "pipeline 'tuned' is not simulated (tuning records are per target; the pinned target has none)"
        return None

    def setup(self, prepared, settings) -> str:
        """The pinned target, LLVM's major version, valgrind's version and the cache model."""
        if self._setup is None:
            from tvm.target import codegen

            self._setup = describe_setup(str(codegen.llvm_version_major()), valgrind_version())
        smaller = prepared.workload.simulate_as
        return self._setup if smaller is None else f"{self._setup}; scaled down to {smaller.name}"

    def collect(self, prepared, settings) -> Mapping[str, Mapping[str, int]]:
        """Compile for the pinned target, simulate one call, read the dump; failures are SourceFailed."""
        from pytest_tvmperf.builder.executors import CompileError
        from pytest_tvmperf.builder.executor_choice import get_executor
        from pytest_tvmperf.builder.targets import TargetSpec

        workload = prepared.workload.simulate_as or prepared.workload
        where = f"{workload.name} ({PINNED_DESCRIPTION})"
        if prepared.workload.simulate_as is None and too_long(workload.name, getattr(prepared, "run_s", None)):
            # the checking run was the program's first (one-time costs, a busy machine): a warm run decides
            line = too_long(workload.name, warm_run_s(prepared))
            if line:
                raise SourceFailed(line)  # said up front: a network of seconds would hold the run for minutes
        try:
            compiled = get_executor(prepared.executor).compile(workload, TargetSpec("llvm-sim", dict(PINNED_TARGET)))
            # fixed-width names: paths of the same length in every session (the loader's allocations,
            # hence the heap the kernels' buffers land in, do not move with them)
            folder = self.workdir() / f"req{next(self._requests):06d}"
            folder.mkdir()
            library = folder / "sim.so"  # a new name per request: a loaded library is never loaded again
            compiled.export(str(library))
            inputs = _write_inputs(prepared, folder)
        except (CompileError, OSError, RuntimeError) as exc:
            raise SourceFailed(
                f"preparing {where} failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from None
        from pytest_tvmperf.measure import sim_cache

        vm = not is_prim(prepared.executor)
        digest = None
        if sim_cache.enabled():
            digest = sim_cache.key(library, inputs, workload.entry, vm, self.setup(prepared, settings))
        counts = sim_cache.load(digest) if digest else None
        if counts is not None:  # this build on these inputs was counted before: the same count
            shutil.rmtree(folder, ignore_errors=True)
            return counts
        try:
            if self._process is None:
                self._process = SimProcess(self.workdir())
            dump = self._process.measure(
                library,
                workload.entry,
                inputs,
                vm=vm,
                timeout=float(getattr(settings, "child_timeout_s", REQUEST_TIMEOUT_S)),
                notify=self.notify,
                test=workload.name,
            )
        except RequestFailed:
            raise  # this test's request only: the process serves the next ones from the same state
        except SourceFailed as exc:
            self._broken = str(exc)  # the process is gone: the next tests say so instead of waiting again
            raise
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        try:
            with open(dump) as text:
                profile = callgrind.parse(text)
        except (OSError, ValueError) as exc:
            raise SourceFailed(f"reading the callgrind dump of {where} failed: {exc}") from None
        finally:
            dump.unlink(missing_ok=True)
        counts = callgrind.per_kernel(profile, str(library))
        if digest:
            sim_cache.save(digest, counts)
        return counts

    def workdir(self) -> Path:
        if self._workdir is None:
            from pytest_tvmperf.store.sweep import make_owned

            self._workdir = make_owned("sim")
        return self._workdir.path

    def close(self) -> None:
        """Stop the measuring process and remove its files (at the session's end)."""
        if self._process is not None:
            self._process.close()
            self._process = None
        if self._workdir is not None:
            log = self._workdir.path / "valgrind.log"
            if self._broken is not None and log.is_file():  # a message names it: kept (the next run removes it)
                for child in self._workdir.path.iterdir():
                    if child != log and not child.name.startswith(".tvmperf-run"):
                        shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
                self._workdir.release()
            else:
                self._workdir.remove()
            self._workdir = None
