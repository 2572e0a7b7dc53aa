"""One small class per executor behind the :class:`Executor` protocol: ``vm-bytecode`` and
``vm-compiled`` run a Relax IRModule on ``relax.VirtualMachine``, ``prim`` calls TE/TIR
PrimFuncs built with ``tvm.compile``. TVM is imported lazily.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from pytest_tvmperf.builder.code_size import CodeSize, kernel_names, measure_code_size
from pytest_tvmperf.builder.pipelines import lower_relax, prim_module, schedule_prim
from pytest_tvmperf.builder.vm_alloc import AllocCounter, Allocations
from pytest_tvmperf.builder.vm_metrics import kernel_count, parse_bytecode, planned_storage
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.builder.targets import TargetSpec
from pytest_tvmperf.builder.timer import SampleFn
from pytest_tvmperf.workload import Workload
from pytest_tvmperf.values.executor_rows import PRIM_KIND, is_prim

OutSpec = tuple[tuple[int, ...], str]

#: why an executor cannot read what the VM allocates at run time (alloc_bytes n/a)
NOT_INSTRUMENTED = (
    "vm-compiled runs no VM instructions to instrument: its allocations are compiled into the "
    "host code (vm-bytecode counts them)"
)
NO_VM = "prim calls one kernel with no VM: the harness allocates its outputs, the program nothing"


class CompileError(Exception):
    """TVM failed to compile a workload; the message is the shortened TVM error."""


def shorten_tvm_error(exc: BaseException, max_lines: int = 12) -> str:
    """The useful tail of a TVM error: drop the C++/Python traceback frames. With
    ``max_lines=1``, the error's statement on one line: from its last line naming an error
    (``XError: ...``) or else its first, continuation lines joined, spaces collapsed, at
    most 240 characters (``Invalid A.shape[0] on argument #0 when calling: `main(A: ...)`, expected 256``)."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    keep = [line for line in lines if not line.lstrip().startswith(("File ", "at ", "0x")) and "frame #" not in line]
    keep = keep or lines
    if max_lines != 1:
        return f"{type(exc).__name__}: " + "\n".join(keep[-max_lines:])
    start = max((i for i, s in enumerate(keep) if re.match(r"\s*[\w.]*(Error|Exception|Check failed)\b", s)), default=0)
    text = re.sub(r"^[\w.]*(Error|Exception):\s*", "", " ".join(" ".join(s.split()) for s in keep[start:]))
    return f"{type(exc).__name__}: " + (text if len(text) <= 240 else text[:237] + "...")


class Compiled(Protocol):
    """A compiled program. ``sampler``: seconds per call, a sample per call (a ``time_evaluator``
    loop of ``min_repeat_ms``); ``listing``: VM bytecode per function (None in compiled mode,
    prim); ``call_times``: per run, seconds in each callee (``vm.set_instrument``, bytecode
    mode); ``export``: a shared library (a/b timing); ``executed_allocations``: one entry
    call's run-time allocations, or why not (n/a); ``code_size``: by kernel, or why not
    (``library``: this build exported, read instead of generating the code again)."""

    def run(self, args: Sequence[np.ndarray], out_specs: Sequence[OutSpec]) -> list[np.ndarray]: ...
    def sampler(self, args: Sequence[np.ndarray], out_specs: Sequence[OutSpec], min_repeat_ms: int) -> SampleFn: ...
    def static_metrics(self) -> ExactMetrics: ...
    def listing(self) -> dict[str, str] | None: ...
    def call_times(self, args: Sequence[np.ndarray], runs: int, clock: SampleFn) -> list[dict[str, float]] | None: ...
    def export(self, path: str) -> None: ...
    def executed_calls(self, args: Sequence[np.ndarray]) -> dict[str, int] | None: ...
    def executed_allocations(self, args: Sequence[np.ndarray]) -> "Allocations | str": ...
    def code_size(self, library: Path | None = None) -> "CodeSize | str": ...


class Executor(Protocol):
    name: str

    def unsupported(self, workload: Workload) -> str | None:
        """Why this executor cannot run ``workload``, or None when it can."""

    def compile(self, workload: Workload, target: TargetSpec, tuning_db: Path | None = None) -> Compiled:
        """Compile with ``workload.pipeline`` (``tuning_db``: the database of ``tuned``)."""


def _to_numpy_outputs(result: Any) -> list[np.ndarray]:
    import tvm

    if isinstance(result, tvm.runtime.Tensor):
        return [result.numpy()]
    if hasattr(result, "__len__"):  # a tuple of outputs
        out: list[np.ndarray] = []
        for item in result:
            out.extend(_to_numpy_outputs(item))
        return out
    return [np.asarray(result)]


def _device_args(args: Sequence[np.ndarray], dev) -> list[Any]:
    import tvm

    return [tvm.runtime.tensor(np.ascontiguousarray(a), dev) for a in args]


def _load_library(path: str, wrap: Callable[[Any], Any]) -> Any:
    import tvm

    with _quiet_native_stderr():  # TVM logs a "Scope Loaded" warning per VM executable
        return wrap(tvm.runtime.load_module(path))


@dataclass
class _VMCompiled:
    executable: Any
    lowered: Any
    entry: str
    exec_mode: str
    dev: Any
    #: the same executable loaded from its exported library (:meth:`run_from`), which runs
    #: without compiling anything here
    loaded: Any = None
    #: the last instrumented call's arguments and what it counted (:meth:`_instrumented`)
    _last_instrumented: Any = None

    def _vm(self):
        from tvm import relax

        return relax.VirtualMachine(self.executable if self.loaded is None else self.loaded, self.dev)

    def run_from(self, path: str) -> None:
        """Run the library this build was exported to at ``path`` from now on: the same
        machine code, without the JIT compilation that running the in-memory module
        first costs (seconds for a network). Its export and IR stay the in-memory ones."""
        from tvm import relax

        self.loaded = _load_library(path, relax.VMExecutable)

    def run(self, args, out_specs):
        return _to_numpy_outputs(self._vm()[self.entry](*_device_args(args, self.dev)))

    def caller(self, args, out_specs):
        """One call of the entry on ``args`` already on the device (sandbox/peak.py measures it)."""
        vm, device_args = self._vm(), _device_args(args, self.dev)
        return lambda: vm[self.entry](*device_args)

    def sampler(self, args, out_specs, min_repeat_ms):
        vm = self._vm()
        vm.set_input(self.entry, *_device_args(args, self.dev))
        evaluator = vm.time_evaluator("invoke_stateful", self.dev, number=1, repeat=1, min_repeat_ms=min_repeat_ms)
        return lambda: float(evaluator(self.entry).results[0])

    def static_metrics(self):
        if self.exec_mode == "bytecode":
            code = parse_bytecode(self.executable.as_text())
            instructions, by_callee = code.counts(), code.by_callee()
        else:  # compiled mode has no bytecode: n/a, never 0
            instructions = by_callee = None
        return ExactMetrics(
            instructions=instructions,
            by_callee=by_callee,
            kernels=kernel_count(self.lowered),
            storage_bytes=planned_storage(self.lowered),
        )

    def export(self, path):
        with _quiet_native_stderr():  # TVM logs a "Scope Saving" warning per VM executable
            self.executable.export_library(path)

    def listing(self):
        return parse_bytecode(self.executable.as_text()).texts() if self.exec_mode == "bytecode" else None

    def call_times(self, args, runs, clock):
        if self.exec_mode != "bytecode":
            return None
        per_run: list[dict[str, float]] = []
        started: list[float] = []

        def timed(func, func_symbol, before_run, ret_value, *_args):
            if before_run:
                started.append(clock())
            else:
                name = str(func_symbol)
                per_run[-1][name] = per_run[-1].get(name, 0.0) + clock() - started.pop()
            return 0

        vm = self._vm()
        device_args = _device_args(args, self.dev)
        vm[self.entry](*device_args)  # warm-up, not instrumented
        vm.set_instrument(timed)
        for _ in range(runs):
            per_run.append({})
            vm[self.entry](*device_args)
        return per_run

    def executed_calls(self, args):
        return self._instrumented(args)[0] if self.exec_mode == "bytecode" else None

    def executed_allocations(self, args):
        return self._instrumented(args)[1] if self.exec_mode == "bytecode" else NOT_INSTRUMENTED

    def _instrumented(self, args) -> tuple[dict[str, int], "Allocations | str"]:
        """The calls one call of the entry executed by callee, and what it allocated (cached by ``args``)."""
        if self._last_instrumented is not None and self._last_instrumented[0] is args:
            return self._last_instrumented[1]
        calls: dict[str, int] = {}
        allocs = AllocCounter()

        def count(func, func_symbol, before_run, ret_value, *call_args):
            name = str(func_symbol)
            if before_run:
                calls[name] = calls.get(name, 0) + 1
            allocs.observe(name, before_run, ret_value, call_args)
            return 0

        vm = self._vm()
        vm.set_instrument(count)
        vm[self.entry](*_device_args(args, self.dev))
        measured = (calls, allocs.result())
        self._last_instrumented = (args, measured)
        return measured

    def code_size(self, library=None):
        return measure_code_size(
            self.executable.mod, kernel_names(self.lowered) if self.lowered is not None else (), library
        )


@dataclass(frozen=True)
class VMExecutor:
    """Relax VirtualMachine in ``bytecode`` or ``compiled`` exec mode."""

    exec_mode: str

    @property
    def name(self) -> str:
        return f"vm-{self.exec_mode}"

    def unsupported(self, workload):
        if workload.kind != "relax":
            return (
                f"executor {self.name} runs Relax IRModules; {workload.name} is a TE/TIR PrimFunc "
                "(run it under 'prim', e.g. @pytest.mark.tvmperf(executors=['prim']))"
            )

    def compile(self, workload, target, tuning_db=None):
        compiled = build_vm(workload, target, tuning_db, self.exec_mode)
        return compiled if target.remote is None else target.remote.wrap(compiled, self.name, workload.entry)


def build_vm(workload: Workload, target: TargetSpec, tuning_db: Any, exec_mode: str, config: Any = None) -> Any:
    """``workload`` lowered by its pipeline and built for the VM (under the pass ``config``)."""
    import tvm
    from tvm import relax

    tvm_target = target.tvm_target()
    try:
        with tvm.transform.PassContext(config=config) if config else contextlib.nullcontext():
            lowered = lower_relax(workload.program, tvm_target, workload.pipeline, tuning_db)
            executable = relax.build(lowered, tvm_target, relax_pipeline=None, exec_mode=exec_mode)
    except Exception as exc:  # TVM raises many types (TVMError, InternalError, ...)
        raise CompileError(shorten_tvm_error(exc)) from exc
    return _VMCompiled(executable, lowered, workload.entry, exec_mode, target.device())


@dataclass
class _PrimCompiled:
    lib: Any
    program: Any
    entry: str
    dev: Any
    #: the same library loaded from its export (:meth:`run_from`)
    loaded: Any = None

    def _args(self, args, out_specs):
        import tvm

        outs = [tvm.runtime.empty(shape, dtype, self.dev) for shape, dtype in out_specs]
        return _device_args(args, self.dev) + outs, outs

    @property
    def _runs(self):
        return self.lib if self.loaded is None else self.loaded

    def run_from(self, path: str) -> None:
        """As :meth:`_VMCompiled.run_from`."""
        import tvm

        self.loaded = _load_library(path, tvm.runtime.Executable)

    def run(self, args, out_specs):
        all_args, outs = self._args(args, out_specs)
        self._runs[self.entry](*all_args)
        return [o.numpy() for o in outs]

    def caller(self, args, out_specs):
        """As :meth:`_VMCompiled.caller`; the outputs are allocated before, as a caller does."""
        all_args, _ = self._args(args, out_specs)
        func = self._runs[self.entry]
        return lambda: func(*all_args)

    def sampler(self, args, out_specs, min_repeat_ms):
        all_args, _ = self._args(args, out_specs)
        evaluator = self._runs.mod.time_evaluator(self.entry, self.dev, number=1, repeat=1, min_repeat_ms=min_repeat_ms)
        return lambda: float(evaluator(*all_args).results[0])

    def static_metrics(self):
        return ExactMetrics(kernels=kernel_count(self.program))

    def export(self, path):
        self.lib.export_library(path)

    # no VM: no bytecode listing, call times or executed calls (None)
    def listing(self): ...
    def call_times(self, args, runs, clock): ...
    def executed_calls(self, args): ...

    def executed_allocations(self, args):
        return NO_VM

    def code_size(self, library=None):
        return measure_code_size(self.lib.mod, kernel_names(self.program) if self.program is not None else (), library)


@dataclass(frozen=True)
class PrimExecutor:
    """A TE/TIR operator compiled with ``tvm.compile`` and called directly."""

    name: str = "prim"

    def unsupported(self, workload):
        if workload.kind != PRIM_KIND:
            return (
                f"executor prim runs TE/TIR PrimFuncs; {workload.name} is a Relax IRModule "
                "(run it under vm-bytecode or vm-compiled)"
            )

    def compile(self, workload, target, tuning_db=None):
        import tvm

        program = prim_module(workload.program, workload.entry)
        try:
            program = schedule_prim(program, target.tvm_target(), workload.pipeline, tuning_db)
            lib = tvm.compile(program, target=target.tvm_target())
        except Exception as exc:
            raise CompileError(shorten_tvm_error(exc)) from exc
        compiled = _PrimCompiled(lib, program, workload.entry, target.device())
        return compiled if target.remote is None else target.remote.wrap(compiled, self.name, workload.entry)


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence what native code writes to file descriptor 2 for the duration."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def load_artifact(path: str, executor: str, entry: str, target: TargetSpec) -> Compiled:
    """A compiled artifact written by ``Compiled.export``, loaded to be timed again."""
    import tvm
    from tvm import relax

    module = _load_library(path, lambda loaded: loaded)
    dev = target.device()
    if is_prim(executor):
        return _PrimCompiled(tvm.runtime.Executable(module), None, entry, dev)
    exec_mode = "bytecode" if executor == "vm-cudagraph" else executor.removeprefix("vm-")
    return _VMCompiled(relax.VMExecutable(module), None, entry, exec_mode, dev)


#: copies of each artifact timed in turn, to average out memory-placement bias
PLACEMENTS = 3


class PlacedSampler:
    """Samples taken in turn from ``placements`` copies of one artifact, each loaded from
    its own file with its own input buffers: where code and data land in memory moves one
    copy's time by a few percent, the same in every sample of it, and only other
    placements average that bias out. :meth:`reloaded` loads fresh copies (new
    placements), so a confirming re-measure does not inherit the first one's bias."""

    def __init__(self, load: Callable[[], list[Callable[[], float]]]) -> None:
        self._load = load
        self._turn = itertools.cycle(load())

    def __call__(self) -> float:
        return next(self._turn)()

    def reloaded(self) -> "PlacedSampler":
        return PlacedSampler(self._load)


def placed_sampler(
    path: Path,
    executor: str,
    entry: str,
    target: TargetSpec,
    args: Sequence[np.ndarray],
    out_specs: Sequence[OutSpec],
    min_repeat_ms: int,
    scratch: Path,
    placements: int = PLACEMENTS,
) -> PlacedSampler:
    """A :class:`PlacedSampler` of the artifact at ``path``. Each copy gets a file name
    never used before (a name loaded before would give back that library); they are made
    from a private copy in ``scratch``, so reloading works after ``path`` is gone."""

    def fresh_copy(source: str | Path, tag: str) -> str:
        fd, copy = tempfile.mkstemp(prefix=f"{Path(path).stem}.{tag}.", suffix=".so", dir=scratch)
        os.close(fd)
        shutil.copyfile(source, copy)
        return copy

    source = fresh_copy(path, "source")

    def load() -> list[Callable[[], float]]:
        return [
            load_artifact(fresh_copy(source, str(i)), executor, entry, target).sampler(args, out_specs, min_repeat_ms)
            for i in range(placements)
        ]

    return PlacedSampler(load)
