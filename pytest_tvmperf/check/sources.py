"""What is timed beside today's program, and the store and build work it takes: the
baseline's own program (its IR rebuilt here, or its old-form compiled artifact), peer
frameworks, and today's program exported and loaded back as a later run will load it (or
its IR saved for ``--tvmperf-update``). Fails a test only through the ``fail`` given."""

from __future__ import annotations

import hashlib
import shutil
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn

import numpy as np
import pytest

from pytest_tvmperf.builder import executors
from pytest_tvmperf.store.artifacts import PendingArtifact, artifact_relpath, export_pending
from pytest_tvmperf.store.artifacts import problem as artifact_problem
from pytest_tvmperf.store.files import write_advice
from pytest_tvmperf.builder.correctness import check_outputs, mismatch_text
from pytest_tvmperf.builder.executors import shorten_tvm_error
from pytest_tvmperf.judge.compare import AB_SAME
from pytest_tvmperf.builder.timer import SampleFn, python_sampler
from pytest_tvmperf.measure.peer_device import peer_for_device, timing_args
from pytest_tvmperf.measure.threads import same_threads, tvm_threads
from pytest_tvmperf.builder.prepare import FILE_NUMBERS, Prepared
from pytest_tvmperf.values.node_ids import display_path
from pytest_tvmperf.values.run_notes import Note
from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.workload import PeerUnavailable, Workload
from pytest_tvmperf.values.executor_rows import PRIM_KIND, kind_of

if TYPE_CHECKING:
    from pytest_tvmperf.session import TvmperfSession


#: why an old-form baseline's compiled library is not loaded (one test's note, the run's summary line)
UNTRUSTED_NOTE = (
    "the baseline's compiled library {path} (the old form) is not loaded: it is native code, and a "
    "change to the baseline directory alone must not run code; a/b timing is off for this test "
    "(re-record with --tvmperf-update to store the IR instead, or pass --tvmperf-trust-artifacts=on "
    "for baselines you trust)"
)
UNTRUSTED_SUMMARY = (
    "baselines of the old form (a compiled .so) compared without a/b timing: their libraries are "
    "not loaded unless --tvmperf-trust-artifacts=on (re-record with --tvmperf-update to store the IR)"
)


@dataclass(frozen=True)
class ProgramCheck:
    """Today's build against the baseline's stored program: is it the same program (the
    same IR and weights, under the TVM version that recorded it), and which weights
    changed (one line, "" when none did or nothing is known)."""

    same: bool = False
    weights: str = ""


def program_check(compiled, baseline) -> ProgramCheck:
    """Compare ``compiled`` with the program ``baseline`` recorded: its lowered IR encodes
    to the same bytes as the stored IR file, in the form the baseline was stored, with the
    same weights, under the TVM version that recorded it (another version's code generation
    may differ for the same IR). Timing the two side by side would time the same code twice."""
    import tvm

    from pytest_tvmperf.builder.rebuild import lowered_module
    from pytest_tvmperf.store import lowered_ir
    from pytest_tvmperf.store.weight_changes import change_line

    ref = baseline.ir
    module = lowered_module(compiled)
    if ref is None or module is None:
        return ProgramCheck()
    same_tvm = str(baseline.tvm_version) == str(tvm.__version__)
    node = lambda w: (f"the tensor at IR node {w.node}", w.sha256)  # noqa: E731
    try:
        kernels = True
        if ref.seeded or ref.functions:
            data, files, described, pieces = lowered_ir.encode_stored(module)
            before = [(w.describe(), w.sha256) for w in ref.seeded] + [node(w) for w in ref.weights]
            after = [(w.describe(), w.sha256) for w in described] + [node(w) for w in files]
            stored = sorted((f.name, f.sha256) for f in ref.functions)
            kernels = stored == sorted((name, hashlib.sha256(piece).hexdigest()) for name, piece in pieces)
        else:
            data, files = lowered_ir.encode_split(module)
            before, after = [node(w) for w in ref.weights], [node(w) for w in files]
        weights = change_line(before, after) if ref.weights or ref.seeded else ""
        if hashlib.sha256(data).hexdigest() == ref.sha256 and sorted(before) == sorted(after) and kernels:
            return ProgramCheck(same_tvm, weights)
        # an IR recorded before weights were stored apart holds them inline
        old_form = bool(files) and not (ref.seeded or ref.functions or ref.weights)
        inline = old_form and hashlib.sha256(lowered_ir.encode(module)).hexdigest() == ref.sha256
        return ProgramCheck(inline and same_tvm, weights)
    except Exception:  # noqa: BLE001 - an IR that does not serialize: not known to be the same
        return ProgramCheck()


def same_program(compiled, baseline) -> bool:
    """Is ``compiled`` the program ``baseline`` recorded (:func:`program_check`)."""
    return program_check(compiled, baseline).same


def weights_note(line: str, seeded: bool) -> str:
    """A failure's line saying which weights changed, and what the baseline is timed with."""
    timed = (
        "with seeded values of its weights' dtypes and shapes (kernel timing does not depend on finite, normal "
        "values; --tvmperf-baseline-weights=exact records them bit for bit)"
        if seeded
        else "with its own recorded weights"
    )
    return f"the program's weights differ from the baseline's: {line}; the baseline's program is timed {timed}"


@dataclass
class TimingSources:
    """The samplers one test times side by side."""

    session: "TvmperfSession"
    nodeid: str
    test_id: str
    executor: str
    target_name: str
    baseline_file: Path
    peer_limits: Mapping[str, float]
    #: records the outcome and fails the test: ``fail(verdict, message)``
    fail: Callable[..., NoReturn]
    #: programs already exported to run in the child, by id (reused, not exported again)
    exports: dict[int, tuple[Any, Path]] = field(default_factory=dict)
    #: what an update stores of the weights: ``seeded`` (the default) or ``exact``
    baseline_weights: str = "seeded"
    #: :meth:`checked_program`'s answers, by (id of the build, sha256 of the baseline's IR)
    _same: dict[tuple[int, str | None], tuple[Any, ProgramCheck]] = field(default_factory=dict)

    def peer_samplers(self, prep: Prepared, where: str) -> dict[str, SampleFn]:
        """Samplers of the peer frameworks asked for (``--tvmperf-peers``, and those
        gated by ``vs_<peer>``), each checked against the NumPy reference first."""
        __tracebackhide__ = True
        workload = prep.workload
        wanted = sorted(set(self.session.settings.peers) | set(self.peer_limits))
        samplers: dict[str, SampleFn] = {}
        for name in wanted:
            factory = workload.peers.get(name)
            if factory is None:
                if name in self.peer_limits:
                    have = ", ".join(sorted(workload.peers)) or "none"
                    self.fail(
                        "error",
                        f"tvmperf: {where}: vs_{name} is set but the workload has no {name} peer "
                        f"(its peers: {have}); add one with Workload(peers={{'{name}': factory}})",
                    )
                continue
            try:
                run = factory()
                if prep.target.remote is None:  # a torch module runs on the test's GPU (measure/peer_device.py)
                    run = peer_for_device(run, prep.target.device_type)
            except (ImportError, PeerUnavailable) as exc:
                if name in self.peer_limits:
                    pytest.skip(f"peer {name} is not available, so vs_{name} cannot be checked: {exc}")
                self.session.report.note(f"peer {name} not timed: {exc}")
                continue
            with same_threads(tvm_threads()):
                got = run(*prep.inputs)
            got = [np.asarray(g) for g in got] if isinstance(got, (list, tuple)) else [np.asarray(got)]
            mismatch = check_outputs(got, prep.expected, workload.rtol, workload.atol)
            if mismatch:
                self.fail(
                    "wrong",
                    f"tvmperf: peer {name} of {where} does not match the {workload.reference_name} "
                    f"reference, so their times are not comparable\n{mismatch_text(workload, mismatch)}",
                )
            samplers[name] = python_sampler(run, timing_args(run, prep.inputs), self.session.settings.min_repeat_ms)
        return samplers

    def baseline_source(
        self, baseline, fingerprint, target, workload, args, out_specs, notes, compiled=None
    ) -> BaselineSource:
        """The stored ``baseline`` as what today's program is judged against, with a sampler of its own
        program where one can run here: its IR rebuilt (``ab`` ``rebuilt``), or for an old-form entry the
        compiled artifact saved on this machine (``artifact``); why not goes into ``notes`` (``ab`` ""). A damaged
        IR file fails the test. No sampler (``ab`` ``same``) for the baseline's own program
        (:func:`same_program`) under ``--tvmperf-same-program=skip``."""
        __tracebackhide__ = True
        stored = BaselineSource(baseline)
        if baseline is None or self.session.settings.artifact_dir is None:
            return stored
        if baseline.ir is not None and compiled is not None:
            checked = self.checked_program(compiled, baseline)
            if checked.weights:  # a weight change is reported as such, whatever the baseline stored of the weights
                notes.append(weights_note(checked.weights, bool(baseline.ir.seeded)))
            if checked.same and self.session.settings.same_program == "skip":
                self._check_ir(baseline.ir)  # not needed to time, still the baseline's: a damaged file fails
                return BaselineSource(baseline, ab=AB_SAME)
        if baseline.ir is not None:  # the entry's program as last recorded (a kept .so may be older)
            sampler, changed = self._rebuilt_sampler(baseline.ir, fingerprint, target, workload, args, out_specs, notes)
            return BaselineSource(baseline, sampler, "rebuilt", inputs=changed) if sampler is not None else stored
        timing = baseline.timings.get(fingerprint)
        if timing is not None and timing.artifact is not None:  # the old form: this machine's library
            if not self.session.settings.trust_artifacts:  # native code from baselines/: never loaded unasked
                notes.append(UNTRUSTED_NOTE.format(path=timing.artifact))
                self.session.report.note(UNTRUSTED_SUMMARY)
                return stored
            sampler = self._artifact_sampler(timing, target, workload, args, out_specs, notes)
            return BaselineSource(baseline, sampler, "artifact") if sampler is not None else stored
        return stored

    def checked_program(self, compiled, baseline) -> ProgramCheck:
        """:func:`program_check`, once per build and baseline IR (the simulated cost asks before the timing does)."""
        key = (id(compiled), baseline.ir.sha256 if baseline.ir is not None else None)
        if key not in self._same:
            self._same[key] = (compiled, program_check(compiled, baseline))  # the build kept: its id stays its own
        return self._same[key][1]

    def _artifact_sampler(self, timing, target, workload, args, out_specs, notes):
        path = self.session.settings.baseline_dir / timing.artifact
        shown = self.session.shown(path)
        problem = artifact_problem(path, timing.artifact_sha256, shown)
        copy = self.session.scratch_dir() / f"baseline-{next(FILE_NUMBERS)}-{path.name}"
        if problem is None:  # what runs is a private copy, checked again and run in a child first
            shutil.copyfile(path, copy)
            problem = artifact_problem(copy, timing.artifact_sha256, shown)
        got: list = []
        if problem is None:
            problem = self.try_library(copy, target, workload, args, out_specs, f"baseline artifact {shown}", got)
            if problem is None:
                return got[0]
        notes.append(problem)
        return None

    def try_library(self, copy: Path, target, workload, args, out_specs, what: str, out: list):
        """Run the library at ``copy`` in the child, then load it here and take one sample:
        None with the sampler appended to ``out``, else why not."""
        return self._try_library(copy, target, workload, args, out_specs, what, out)[0]

    def _try_library(
        self, copy: Path, target, workload, args, out_specs, what: str, out: list, inputs: str = "today's inputs"
    ) -> tuple[str | None, bool]:
        """:meth:`try_library` on ``args`` (described as ``inputs``), and whether it crashed the child."""
        crash = (
            None
            if target.remote is not None  # an RPC device runs it in its own process
            else self.session.sandbox().run(copy, self.executor, workload.entry, target.device_type, args, out_specs)
        )
        if crash is not None:
            from pytest_tvmperf.builder.host_cpu import crash_note

            return (
                f"{what} crashed the child process that loaded it ({crash.how}); "
                f"ignored, nothing of it was loaded in the session (re-record with --tvmperf-update)"
                + crash_note(crash.how, target.config)
            ), True
        bound = float(self.session.settings.child_timeout)
        stop = (
            f"tvmperf: {self.nodeid}: {what} did not return within {bound:g} s (--tvmperf-child-timeout) when "
            f"called in the session (its one run in the child process returned): the run is stopped here, "
            f"since a program that came with the baseline must not hang it. Re-record the baseline with "
            f"--tvmperf-update, or restore the baseline directory from version control"
        )
        try:
            sampler = self._bounded(self.placed_sampler(copy, target, workload, self.executor, args, out_specs), stop)
            sampler()  # the old program must accept today's inputs
        except Exception as exc:  # an artifact of another signature or TVM
            return f"{what} cannot time {inputs} ({shorten_tvm_error(exc, 1)})", False
        out.append(sampler)
        return None, False

    def _check_ir(self, ref) -> tuple[Path, str]:
        """The baseline's IR file (its path and how it is shown), checked against the entry's
        sha256; a missing or damaged one fails the test naming the file, the test and the field."""
        __tracebackhide__ = True
        from pytest_tvmperf.store import lowered_ir

        path = self.session.settings.baseline_dir / ref.path
        shown = self.session.shown(path)
        try:
            lowered_ir.check_file(path, ref, shown, self.test_id, self.session.shown(self.baseline_file))
        except lowered_ir.IRFileError as exc:
            problem = str(exc)
        else:
            return path, shown
        self.fail("error", f"tvmperf: {self.nodeid}: {problem}")  # outside the except: no chained traceback

    def _rebuilt_sampler(self, ref, fingerprint, target, workload, args, out_specs, notes):
        """The baseline's IR rebuilt for this machine (cached by IR hash and host), and its sampler: on
        today's inputs, else (they changed shape) on its own signature's, with what changed; (None, "") and why not."""
        __tracebackhide__ = True
        from pytest_tvmperf.builder import rebuild
        from pytest_tvmperf.store import lowered_ir, user_cache

        path, shown = self._check_ir(ref)
        for fresh in (False, True):
            try:
                builder = rebuild.build_in_child(self.session.sandbox(), path, self.executor, target, ref)
                load = partial(lowered_ir.load, path, ref)
                library, cached = rebuild.cached_library(
                    fingerprint, self.executor, ref.program_key, load, target, fresh=fresh, builder=builder
                )
            except lowered_ir.IRLoadError as exc:
                problem = f"baseline IR {shown} cannot be loaded: {exc}"
            except user_cache.UnsafeCache as exc:  # never built into, nor loaded from, a directory of others'
                problem = f"the baseline is not rebuilt: {exc}"
            except OSError as exc:  # the cache cannot be written (a full disk): no fault of TVM's
                problem = (
                    f"baseline IR {shown} is not rebuilt: its build cannot be written in the plugin's cache "
                    f"{user_cache.cache_root()} ({type(exc).__name__}: {exc.strerror or exc})"
                )
            except Exception as exc:  # code generation failed: TVM's own error, shortened
                import tvm

                problem = (
                    f"baseline IR {shown} cannot be rebuilt by TVM {tvm.__version__} for {self.target_name} "
                    f"({shorten_tvm_error(exc, 2)})"
                )
            else:
                copy = self.session.scratch_dir() / f"baseline-{next(FILE_NUMBERS)}-{library.name}"
                shutil.copyfile(library, copy)
                got: list = []
                what = f"the baseline rebuilt from IR {shown}"
                problem, crashed = self._try_library(copy, target, workload, args, out_specs, what, got)
                if problem is None:
                    return got[0], ""
                if not crashed:  # another signature (the inputs changed shape): timed on inputs of its own
                    sampler, changed, why = self._own_inputs_sampler(
                        path, ref, copy, target, workload, args, out_specs, what
                    )
                    if sampler is not None:
                        return sampler, changed
                    problem = f"{problem}; {why}"
                if cached:  # a cached library is only a shortcut: drop it, build again once
                    rebuild.drop(library)
                    continue
            break
        notes.append(
            f"{problem}; a/b timing is off for this test; the time falls back to the comparison with stored "
            "numbers (normalized)"
        )
        return None, ""

    def _own_inputs_sampler(
        self, ir_path: Path, ref, copy: Path, target, workload, args, out_specs, what: str
    ) -> tuple[Any, str, str]:
        """The rebuilt baseline at ``copy`` timed on inputs of its own entry's signature (builder/own_inputs.py),
        read off its IR in the child and run there first: (sampler, what changed, "") or (None, "", why not)."""
        from pytest_tvmperf.builder import own_inputs
        from pytest_tvmperf.store.inflate import max_ir_bytes

        reply = self.session.sandbox().signature(ir_path, self.executor, workload.entry, ref.as_json())
        params = reply.get("params")
        if params is None:
            why = reply.get("load_error") or reply.get("error") or reply.get("crash") or "no answer"
            return None, "", f"its own signature cannot be read ({why})"
        try:
            checked = own_inputs.params_from_json(params)
        except ValueError as exc:
            return None, "", f"its own signature cannot be read ({exc})"
        today_args = [(np.shape(a), str(np.asarray(a).dtype)) for a in args]
        kind = kind_of(self.executor)
        plan, why = own_inputs.plan_own_inputs(checked, kind, today_args, out_specs, max_ir_bytes())
        if plan is None:
            return None, "", f"no inputs of its own signature are made: {why}"
        got: list = []
        own_args, own_specs = own_inputs.own_arrays(plan.args), plan.out_specs() if kind == PRIM_KIND else out_specs
        inputs = f"inputs of its own signature ({plan.changed})"
        problem, _ = self._try_library(copy, target, workload, own_args, own_specs, what, got, inputs)
        if problem is not None:
            return None, "", problem
        return got[0], plan.changed, ""

    @property
    def keeps_library(self) -> bool:
        """``--tvmperf-update`` keeps the compiled library (the old ``so`` form), not the IR."""
        s = self.session.settings
        return s.update and s.artifact_dir is not None and s.baseline_program == "so"

    def save_ir(self, compiled) -> PendingArtifact | None:
        """``--tvmperf-update`` in the ``ir`` form: the program's IR before code generation,
        written under a temporary name; None when nothing is to be kept or it has no IR."""
        from pytest_tvmperf.builder.rebuild import lowered_module
        from pytest_tvmperf.store import lowered_ir

        s = self.session.settings
        module = lowered_module(compiled)
        if not s.update or s.artifact_dir is None or s.baseline_program != "ir" or module is None:
            return None
        __tracebackhide__ = True
        try:
            pending = lowered_ir.save_pending(module, s.artifact_dir, seeded=self.baseline_weights == "seeded")
        except OSError as exc:  # a read-only or full artifact directory: this test's record cannot be kept
            where = display_path(s.artifact_dir / lowered_ir.IR_DIR, self.session.rootpath)
            problem = (
                f"tvmperf: {self.nodeid}: cannot write the program's IR into {where} "
                f"({exc.strerror or exc}): {write_advice(exc, 'that directory')} (or give another with "
                f"--tvmperf-artifacts=DIR); this test writes no baseline, the others keep theirs"
            )
        except lowered_ir.UnstorableIR as exc:  # recorded, the gate would refuse it: no baseline nobody can use
            problem = (
                f"tvmperf: {self.nodeid}: the program's IR cannot be stored as its baseline: {exc}. A stored IR "
                f"may only hold what the plugin's own builds store (the lists of "
                f"pytest_tvmperf/store/ir_check.py), so every later gate would refuse to rebuild it. This test "
                f"writes no baseline, the others keep theirs: record it with --tvmperf-baseline-program=so "
                f"(the compiled library, usable on this machine only), or report the construct so the lists "
                f"can hold it"
            )
        else:
            self.session.exported.append(pending)  # removed at session end unless committed
            for part in pending.parts:  # weights and kernels stored apart from the IR, committed with it
                self.session.exported.append(part)
                self.session.store.queue_artifact(part)
            return pending
        self.fail("error", problem)  # outside the except: no chained traceback

    def placed_sampler(self, path: Path, target, workload: Workload, executor: str, args, out_specs):
        ms = self.session.settings.min_repeat_ms
        if target.remote is not None:
            return target.remote.placed_sampler(path, executor, workload.entry, args, out_specs, ms)
        scratch = self.session.scratch_dir()
        return executors.placed_sampler(path, executor, workload.entry, target, args, out_specs, ms, scratch)

    def exported_sampler(self, prep, fingerprint: str, side: str | None = None) -> tuple[PendingArtifact | None, Any]:
        """``prep``'s build exported and its sampler over the library loaded back, as a baseline's (else in memory)."""
        pending = self.export(prep.compiled, fingerprint, side)
        if pending is None:
            sampler = prep.compiled.sampler(prep.args, prep.out_specs, self.session.settings.min_repeat_ms)
        else:
            args = (prep.target, prep.workload, prep.executor, prep.args, prep.out_specs)
            sampler = self.placed_sampler(pending.temp, *args)
        if prep.target.remote is not None:  # an RPC device's calls have their own deadline (farm/remote.py)
            return pending, sampler
        return pending, self.guarded(sampler, "today's program" + (f" ({side})" if side else ""))

    def guarded(self, sampler, what: str):
        """``sampler`` with each call bounded by ``--tvmperf-child-timeout``, as the baseline's program is
        (sandbox/watchdog.py): a program that returns on its first call (in the child) and loops from its
        second would otherwise hang the session in native code, past Ctrl-C (issue 66)."""
        bound = float(self.session.settings.child_timeout)
        stop = (
            f"tvmperf: {self.nodeid}: {what} did not return within {bound:g} s (--tvmperf-child-timeout) when "
            f"timed in the session (its first run, in the child process, returned): the run is stopped here "
            f"rather than hang until the CI job's time-out. A call that loops only from its second run: state "
            f"the kernel keeps between calls; a program this slow: give a larger --tvmperf-child-timeout"
        )
        return self._bounded(sampler, stop)

    def _bounded(self, sampler, stop: str):
        """``sampler``, each call within ``--tvmperf-child-timeout``; past it ``stop`` is printed and the run ends."""
        from pytest_tvmperf.sandbox.watchdog import GuardedSampler

        return GuardedSampler(sampler, float(self.session.settings.child_timeout), stop, self.session.last_words)

    def export(self, compiled, fingerprint: str, side: str | None = None) -> PendingArtifact | None:
        """Export the compiled artifact: to its place among the baselines when updating (renamed
        into place at session end), else (and for ``side``, of an ``assert_ratio``) to scratch."""
        settings = self.session.settings
        module_key = str(self.baseline_file.relative_to(settings.baseline_dir).with_suffix(""))
        relpath = artifact_relpath(fingerprint, module_key, self.test_id + (f"::{side}" if side else ""))
        keep = self.keeps_library and side is None
        root = settings.artifact_dir if keep else self.session.scratch_dir()
        try:
            exported = self.exports.get(id(compiled))
            pending = export_pending(compiled, root / relpath, source=exported[1] if exported else None)
            self.session.exported.append(pending)  # removed at session end unless committed
            return pending
        except Exception as exc:  # no C toolchain to link a shared library: time in memory
            self.session.report.note(
                f"compiled artifacts cannot be exported here, a/b timing is off ({shorten_tvm_error(exc, 2)})",
                Note.EXPORT,
            )
            return None
