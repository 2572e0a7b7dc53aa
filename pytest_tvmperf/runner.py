"""What ``tvmperf.check(workload)`` does for one test id: compile, check against
NumPy (and on Hypothesis-drawn shapes), measure, compare with the baseline, decide."""

from __future__ import annotations

import contextlib
import itertools
import shutil
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping

import numpy as np
import pytest

from .compare import MetricVerdict, RatioVerdict, compare, compare_time, peer_verdicts, relation_verdict
from .correctness import check_outputs
from .disturbance import clean
from .artifacts import PendingArtifact, artifact_relpath, discard, export_pending, verified
from .gate import confirm
from .executors import CompileError, get_executor, placed_sampler, shorten_tvm_error
from .machine import current_machine
from .measure import SampleFn, TimeSamples, Timer, TimingTask, kernel_times, python_sampler, stopwatch
from .options import Limit
from .peers import same_threads, tvm_thread_count, tvm_threads
from .record import Record, Timing
from .reference import REFERENCE_NAME
from .report import missing_baseline_message, peer_lines, regression_message, relation_message
from .session import Outcome, TvmperfSession, junit_properties
from .store import BaselineError
from .workload import PeerUnavailable, Workload


@dataclass(frozen=True)
class Combo:
    """One executor x target combination: a test id suffix like ``llvm-vm-bytecode``."""

    target: str
    executor: str

    @property
    def id(self) -> str:
        return f"{self.target}-{self.executor}"


@dataclass(frozen=True)
class Variant:
    """One side of ``tvmperf.assert_ratio``: a workload, under another executor than
    the test's when ``executor`` is given (e.g. ``vm-compiled`` against ``vm-bytecode``)."""

    workload: Workload
    executor: str | None = None
    label: str | None = None

    def describe(self, default_executor: str) -> str:
        if self.label:
            return self.label
        return f"{self.workload.name}" + (f" [{self.executor}]" if self.executor and self.executor != default_executor else "")


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


#: numbers of the files a session loads from its scratch directory: a loaded library's
#: name is never reused (the loader would hand back the library loaded before)
_FILE_NUMBERS = itertools.count()

ProgressBar = Callable[[str], ContextManager[Callable[[int, int], None]]]


@contextlib.contextmanager
def _no_progress(_desc: str):
    yield None


def _display_path(path: Path, rootpath: Path) -> str:
    try:
        return str(path.relative_to(rootpath))
    except ValueError:
        return str(path)


@dataclass
class Tvmperf:
    """The ``tvmperf`` fixture: ``tvmperf.check(workload)`` once per test."""

    session: TvmperfSession
    combo: Combo
    nodeid: str
    test_id: str
    baseline_file: Path
    thresholds: Mapping[str, Limit]
    timer: Timer
    location: tuple[str, int] = ("", 0)
    user_properties: list = field(default_factory=list)
    peer_limits: Mapping[str, float] = field(default_factory=dict)
    progress: ProgressBar = _no_progress
    _checked: bool = False
    _ratios: int = 0
    _peers_timed: tuple[str, ...] = ()
    _outcome_id: str = ""  # the summary id of the assert_ratio under way
    _peers_unconfirmed: frozenset[str] = frozenset()
    _threads_note: str = ""  # the summary's word when timing fell back to fewer threads
    #: compiled programs exported to run in the child first, by id (reused for a/b timing)
    _exports: dict[int, tuple[Any, Path]] = field(default_factory=dict)

    def variant(self, workload: Workload, executor: str | None = None, label: str | None = None) -> Variant:
        """``workload`` under another executor, for :meth:`assert_ratio`."""
        if executor is not None:
            get_executor(executor)  # an unknown name is an error here, not at timing
        return Variant(workload, executor, label)

    def _add(self, outcome: Outcome) -> Outcome:
        """Keep the outcome for the summary and reports, and put its figures on the
        test's JUnit XML properties."""
        outcome = replace(outcome, location=self.location)
        self.session.add(outcome)
        self.user_properties.extend(junit_properties(outcome))
        return outcome

    @property
    def executor(self) -> str:
        return self.combo.executor

    @property
    def target(self) -> str:
        return self.combo.target

    def _fail(self, verdict: str, message: str, **fields) -> None:
        __tracebackhide__ = True
        self._add(Outcome(self.nodeid, self._outcome_id or self.test_id, self.executor, self.target, verdict,
                          message=message, **fields))
        pytest.fail(message, pytrace=False)

    def _prepare(self, workload: Workload, executor_name: str, where: str) -> Prepared:
        """Compile ``workload`` (with its pipeline, and tuning database when tuned) and
        check it against its NumPy reference, also on Hypothesis-drawn shapes."""
        __tracebackhide__ = True
        if not isinstance(workload, Workload):
            raise TypeError(f"tvmperf takes a pytest_tvmperf.Workload, got {type(workload).__name__}")
        executor = get_executor(executor_name)
        target = self.session.target(self.target)
        reason = executor.unsupported(workload) or target.skip_reason
        if reason:
            pytest.skip(reason)
        tuning_db, tuning_state = self._tuning(workload, target, where)
        reading_db = self.session.timing_lock() if tuning_db is not None else contextlib.nullcontext()
        with reading_db, stopwatch() as compile_time:
            try:
                compiled = executor.compile(workload, target, tuning_db)
            except CompileError as exc:
                self._fail("error", f"tvmperf: compiling {where} failed:\n{exc}")
        inputs = workload.inputs()
        args = [*inputs, *(a for _, a in workload.params)]
        expected = workload.expected(inputs)
        out_specs = [(e.shape, str(e.dtype)) for e in expected]
        self._check_signature(workload, inputs, out_specs, where)
        self._run_in_child(compiled, executor_name, workload, args, out_specs, where)
        mismatch = check_outputs(compiled.run(args, out_specs), expected, workload.rtol, workload.atol)
        if mismatch:
            self._fail("wrong", f"tvmperf: {where} does not match its NumPy reference\n" + mismatch.message(f"(dims {dict(workload.dims)}, seed {workload.seed})" if workload.dims else ""))
        if workload.dim_ranges:
            self._check_symbolic(compiled, workload, where)
        return Prepared(workload, executor_name, target, compiled, inputs, args, expected, out_specs, compile_time[0], tuning_state)

    def _check_signature(self, workload: Workload, inputs, out_specs, where: str) -> None:
        """A call the entry function cannot take fails here, naming the arguments."""
        __tracebackhide__ = True
        from .pipelines import prim_module
        from .signature import prim_signature, relax_signature, signature_problem

        try:
            params = (relax_signature(workload.program, workload.entry) if workload.kind == "relax"
                      else prim_signature(prim_module(workload.program, workload.entry), workload.entry))
        except Exception:  # a program this check cannot read: TVM's own error at the call
            return
        problem = signature_problem(workload.name, workload.entry, workload.kind, params,
                                    [(tuple(a.shape), str(a.dtype)) for a in inputs],
                                    [n for n, _ in workload.params], [(tuple(s), d) for s, d in out_specs])
        if problem is not None and problem.verdict == "wrong":
            self._fail("wrong", f"tvmperf: {where} does not match its NumPy reference\n{problem.message}")
        if problem is not None:
            self._fail("error", f"tvmperf: {where}: {problem.message}")

    def _run_in_child(self, compiled, executor: str, workload: Workload, args, out_specs, where: str) -> None:
        """Run the compiled artifact once in a child process first (isolation.py): a
        kernel that crashes fails this test, and the session goes on."""
        __tracebackhide__ = True
        path = self.session.scratch_dir() / f"isolated-{next(_FILE_NUMBERS)}-{executor}.so"  # never a name loaded before
        try:
            compiled.export(str(path))
        except Exception:  # no toolchain to export with: it runs in the session, as a/b timing is off
            return
        self._exports[id(compiled)] = (compiled, path)
        crash = self.session.sandbox().run(path, executor, workload.entry, self.target, args, out_specs)
        if crash is not None:
            self._fail("error", f"tvmperf: {where}: the compiled kernel crashed ({crash.how}) when run in a child "
                                f"process; nothing was run in the session"
                                + (f"\nthe child's last words:\n{crash.stderr}" if crash.stderr else ""))

    def _tuning(self, workload: Workload, target, where: str):
        """For ``pipeline="tuned"``: the tuning database (tuned first with
        ``--tvmperf-tune``) and its state; a missing database, or one without records
        for some of the workload's kernels, fails the test saying how to fix it."""
        __tracebackhide__ = True
        if workload.pipeline != "tuned":
            return None, None
        from . import tuning
        from .pipelines import tuning_module

        settings = self.session.settings
        db = Path(self.session.rootpath, workload.tuning_db) if workload.tuning_db else settings.tuning_db
        shown = _display_path(db, self.session.rootpath)
        tvm_target = target.tvm_target()
        tuned_now = False
        try:
            module = tuning_module(workload, tvm_target)
            # the machine-wide lock: xdist workers tune one at a time, and never read a
            # database another worker is appending to
            with self.session.timing_lock():
                if settings.tune_trials and self.session.claim_tuning((workload.name, self.target, str(db))):
                    with self.progress(f"tuning {workload.name}") as progress:
                        tuning.tune(module, tvm_target, db, settings.tune_trials, progress=progress)
                    tuned_now = True
                state = tuning.inspect(module, tvm_target, db)
            problem = None
        except tuning.TuningError as exc:
            problem = str(exc)
        except Exception as exc:  # the fused module itself failed to build: TVM's own error, shortened
            problem = f"preparing the kernels to tune failed:\n{shorten_tvm_error(exc)}"
        if problem is not None:  # failed outside the except block: no chained traceback
            self._fail("error", f"tvmperf: {where}: {problem}")
        if tuned_now and state.missing:
            self._fail("error", f"tvmperf: {where}: tuning with {settings.tune_trials} trials found no valid schedule for "
                                f"{len(state.missing)} of {len(state.tasks)} kernel(s) ({', '.join(state.missing[:6])}): "
                                f"every candidate failed to build or run; raise --tvmperf-tune")
        if state.missing and set(state.missing) <= set(state.elsewhere):
            # tuned, but on another machine or for another target: like a time baseline of
            # another machine, shown (a skip with the reason), neither failed nor gated
            pytest.skip(f"the tuning database {shown} has no records for this target ({target.name}: "
                        f"{tvm_target.export().get('mcpu', '')}, {len(state.missing)} of {len(state.tasks)} kernel(s)) "
                        f"but has some for {len(state.other_targets)} other target(s); tune here with: "
                        f"{self.session.accept_command(self.nodeid, first=('--tvmperf-tune=TRIALS',))}")
        if state.missing:
            self._fail("error", f"tvmperf: {where}: the tuning database {shown} is stale: {len(state.missing)} of "
                                f"{len(state.tasks)} kernel(s) have no tuning record ({', '.join(state.missing[:6])}"
                                f"{', ...' if len(state.missing) > 6 else ''}); the workload changed since it was tuned, "
                                f"or it was never tuned for this target.\nre-tune with: "
                                f"{self.session.accept_command(self.nodeid, first=('--tvmperf-tune=TRIALS',))}")
        return db, replace(state, db_dir=shown)

    def _peer_samplers(self, prep: Prepared, where: str) -> dict[str, SampleFn]:
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
                    self._fail("error", f"tvmperf: {where}: vs_{name} is set but the workload has no {name} peer "
                                        f"(its peers: {have}); add one with Workload(peers={{'{name}': factory}})")
                continue
            try:
                run = factory()
            except (ImportError, PeerUnavailable) as exc:
                if name in self.peer_limits:
                    pytest.skip(f"peer {name} is not available, so vs_{name} cannot be checked: {exc}")
                self.session.peer_problems.add(f"peer {name} not timed: {exc}")
                continue
            with same_threads(tvm_threads()):
                got = run(*prep.inputs)
            got = [np.asarray(g) for g in got] if isinstance(got, (list, tuple)) else [np.asarray(got)]
            mismatch = check_outputs(got, prep.expected, workload.rtol, workload.atol)
            if mismatch:
                self._fail("wrong", f"tvmperf: peer {name} of {where} does not match the NumPy reference, so their "
                                    f"times are not comparable\n{mismatch.message('')}")
            samplers[name] = python_sampler(run, prep.inputs, self.session.settings.min_repeat_ms)
        return samplers

    def check(self, workload: Workload) -> Outcome:
        """Compile ``workload`` for this test's executor and target, check its output
        against the NumPy reference, measure it and gate it against the baseline.

        Fails the test on a compile error, a wrong or non-finite output, a missing
        baseline or a regression; skips it when the combination cannot run here."""
        __tracebackhide__ = True
        if self._checked:
            raise RuntimeError("tvmperf.check() was already called in this test: use one check per test (one baseline entry per test id)")
        self._checked = True
        if not isinstance(workload, Workload):
            raise TypeError(f"tvmperf.check() takes a pytest_tvmperf.Workload, got {type(workload).__name__}")
        where = f"{workload.name} on {self.target}/{self.executor}"
        prep = self._prepare(workload, self.executor, where)
        compiled, target, args, out_specs = prep.compiled, prep.target, prep.args, prep.out_specs
        peers = self._peer_samplers(prep, where)

        exact = replace(compiled.static_metrics(), calls=compiled.executed_calls(args))
        listing = compiled.listing()
        with self.session.timing_lock():
            per_kernel = kernel_times(compiled, args)
        target_json = target.as_json()
        machine = current_machine(target_json)

        def make_record(samples: TimeSamples, artifact: PendingArtifact | None = None) -> Record:
            relpath = str(artifact.final.relative_to(self.session.settings.baseline_dir)) if artifact else None
            return Record(
                workload=workload.name,
                executor=self.executor,
                target=target_json,
                tvm_version=machine.tvm_version,
                exact=exact,
                timings={machine.fingerprint: Timing(machine, samples, relpath, artifact.sha256 if artifact else None)},
                compile_s=prep.compile_s,
                bytecode=listing,
                kernel_time_s=per_kernel,
                pipeline=workload.pipeline,
                tuning=prep.tuning.as_json() if prep.tuning else None,
            )

        baseline = self._baselines().get(self.test_id)
        notes: list[str] = []
        # Time the artifact as a later run will load it (exported and loaded back), so
        # a/b timing compares like with like: a JIT-compiled module in memory runs a few
        # percent apart from the same code loaded from a shared library.
        pending = self._export(compiled, machine.fingerprint)
        task = TimingTask(
            workload=(self._placed_sampler(pending.temp, target, workload, self.executor, args, out_specs) if pending
                      else compiled.sampler(args, out_specs, self.session.settings.min_repeat_ms)),
            reference=self.session.reference_sampler(target),
            reference_name=REFERENCE_NAME,
            baseline=(None if self.session.settings.update
                      else self._baseline_sampler(baseline, machine.fingerprint, target, workload, args, out_specs, notes)),
            peers=peers,
        )
        rounds = self.session.settings.repeat
        threads: list[int | None] = [None]  # None: TVM's own thread count

        def measure(n: int) -> TimeSamples:
            with self.session.timing_lock(), tvm_thread_count(threads[0]), same_threads(tvm_threads()):
                return self.timer(task, n)

        samples = measure(rounds)
        fewer = self._fewer_threads(samples, task)
        if fewer is not None:
            threads[0], note = fewer
            notes.append(note)
            self._threads_note = f"timed at {threads[0]} TVM thread(s): machine busy"
            samples = measure(rounds)
        self._peers_timed = tuple(sorted(peers))
        samples = self._confirm_peers(samples, lambda: measure(2 * rounds), notes)
        keep = pending is not None and self.session.settings.update and self.session.settings.artifact_dir is not None
        if pending is not None and not keep:
            discard(pending)
        if self.session.settings.update:
            if keep:
                self.session.queue_artifact(pending)
            kept, screened = clean(samples)  # the baseline keeps the rounds the machine left alone
            busy = (f"recorded on a busy machine ({screened.describe()}): re-record on a quiet one for a "
                    f"trustworthy baseline" if screened is not None and screened.busy else "")
            return self._record(make_record(kept, pending if keep else None), busy)
        return self._decide(make_record(samples), baseline, lambda: measure(2 * rounds), make_record, notes)

    def assert_ratio(self, numerator: "Workload | Variant", denominator: "Workload | Variant", at_most: float) -> RatioVerdict:
        """Assert that ``numerator`` takes at most ``at_most`` times the time of
        ``denominator``, both compiled, checked and timed side by side in this process
        (e.g. dynamic batch vs static batch, compiled vs bytecode, bound vs run-time
        weights). Needs no baseline. Fails when the whole confidence interval of the
        ratio lies above ``at_most``; an interval across it is inconclusive
        (``--tvmperf-inconclusive``)."""
        __tracebackhide__ = True
        if not (isinstance(at_most, (int, float)) and 0 < at_most < float("inf")):
            raise ValueError(f"assert_ratio(at_most={at_most!r}): give the largest allowed time ratio, e.g. at_most=1.5")
        sides = [v if isinstance(v, Variant) else Variant(v) for v in (numerator, denominator)]
        self._ratios += 1  # the summary names it by test id; the message and JSON by its sides
        shown_id = f"{self.test_id} ratio" + (f" {self._ratios}" if self._ratios > 1 else "")
        self._outcome_id = shown_id
        try:
            return self._assert_ratio(sides, float(at_most), shown_id)
        finally:
            self._outcome_id = ""

    def _assert_ratio(self, sides: list["Variant"], at_most: float, shown_id: str) -> RatioVerdict:
        __tracebackhide__ = True
        preps = []
        for side in sides:
            executor = side.executor or self.executor
            preps.append(self._prepare(side.workload, executor, f"{side.workload.name} on {self.target}/{executor}"))
        label = f"{sides[0].describe(self.executor)} / {sides[1].describe(self.executor)}"
        samplers = []
        for i, prep in enumerate(preps):
            pending = self._export(prep.compiled, "relation", side=f"ratio{self._ratios}.{i}")
            if pending is not None:
                samplers.append(self._placed_sampler(pending.temp, prep.target, prep.workload, prep.executor, prep.args, prep.out_specs))
            else:
                samplers.append(prep.compiled.sampler(prep.args, prep.out_specs, self.session.settings.min_repeat_ms))
        task = TimingTask(workload=samplers[0], baseline=samplers[1])
        policy = self.session.time_policy()
        rounds = self.session.settings.repeat

        def judge(samples: TimeSamples) -> RatioVerdict:
            if samples.baseline is None:
                self._fail("error", f"tvmperf: {self.nodeid}: the timer returned no samples of the right side of "
                                    f"{label}: a tvmperf_timer must time TimingTask.baseline too")
            return relation_verdict(label, samples, float(at_most), policy.alpha, policy.noise_ratio)

        def measure(n: int) -> TimeSamples:
            with self.session.timing_lock():
                return self.timer(task, n)

        checked = confirm(measure(rounds), lambda s: {label: judge(s)}, lambda: measure(2 * rounds),
                          self.session.settings.confirm)
        verdict = checked.verdicts[label]
        notes = []
        if checked.second is not None:
            first, second = checked.first[label], checked.second[label]
            if label in checked.disagreed:
                notes.append(f"the measurements disagree ({first.ratio:.2f}x, then {second.ratio:.2f}x): inconclusive")
            else:
                notes.append(f"first measurement {first.status} at {first.describe()}; re-measured: {verdict.status}")
        exact = [replace(p.compiled.static_metrics(), calls=p.compiled.executed_calls(p.args)) for p in preps]
        message = relation_message(label, verdict, exact[0], exact[1], notes)
        status = {"exceeded": "regressed"}.get(verdict.status, verdict.status)
        self._add(Outcome(self.nodeid, shown_id, self.executor, self.target, status,
                          message=message if status != "pass" else "", relation=verdict))
        if verdict.status == "exceeded":
            pytest.fail(message, pytrace=False)
        if verdict.status == "inconclusive":
            self._inconclusive(message)
        return verdict

    def _confirm_peers(self, samples: TimeSamples, remeasure: Callable[[], TimeSamples], notes: list[str]) -> TimeSamples:
        """A gated peer past its limit (or unclear) is measured again, as a time
        regression is: the pooled samples decide, and a gate fails only when each
        measurement alone is past the limit too."""
        if not self.session.settings.confirm or not self.peer_limits:
            return samples
        policy = self.session.time_policy()

        def gated(s: TimeSamples) -> dict[str, RatioVerdict]:
            try:
                verdicts = peer_verdicts(s, self.peer_limits, policy.alpha, policy.noise_ratio, wanted=self._peers_timed)
            except ValueError:
                return {}  # reported by _peer_verdicts
            return {v.name: v for v in verdicts if v.limit is not None}

        checked = confirm(samples, gated, remeasure)
        if checked.second is None:
            return samples
        self._peers_unconfirmed = checked.disagreed
        for name, v in checked.first.items():
            if v.status != "pass" and name in checked.second:
                notes.append(f"peer {name}: first measurement {v.status} at {v.describe()}, then "
                             f"{checked.second[name].describe()}; the pooled samples decide")
        return checked.samples

    def _fewer_threads(self, samples: TimeSamples, task: TimingTask) -> tuple[int, str] | None:
        """A multi-threaded kernel on a machine too busy to give it its threads (one
        descheduled thread stalls the kernel at its barrier): time at one thread instead,
        both sides of the a/b pair alike. Only for the a/b comparison, whose two sides
        share the thread pool; stored samples of another thread count are not comparable."""
        asked = tvm_threads()
        if asked <= 1 or task.baseline is None or self.session.settings.update:
            return None
        _, screened = clean(samples)
        if screened is None or not screened.busy:
            return None
        return 1, (f"timed at 1 of {asked} TVM threads, both sides alike: the machine could not give {asked} "
                   f"({screened.share_disturbed:.0%} of samples preempted at {asked})")

    def _inconclusive(self, message: str) -> None:
        __tracebackhide__ = True
        policy_name = self.session.settings.inconclusive
        if policy_name == "fail":
            pytest.fail(message + "\n(--tvmperf-inconclusive=fail)", pytrace=False)
        if policy_name == "warn":
            warnings.warn(TvmperfInconclusive(message), stacklevel=2)

    def _check_symbolic(self, compiled, workload: Workload, where: str) -> None:
        """Run the compiled artifact on shapes and values drawn by Hypothesis
        (derandomized: the same examples in every run, so CI is reproducible)."""
        __tracebackhide__ = True
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        dims_strategy = st.fixed_dictionaries({d: st.integers(lo, hi) for d, (lo, hi) in sorted(workload.dim_ranges.items())})
        failures: list[str] = []

        @settings(max_examples=self.session.settings.hypothesis_examples, derandomize=True, database=None,
                  deadline=None, suppress_health_check=list(HealthCheck), print_blob=False)
        @given(dims=dims_strategy, seed=st.integers(0, 2**31 - 1))
        def run_example(dims, seed):
            inputs = workload.inputs(seed=seed, dims=dims)
            args = [*inputs, *(a for _, a in workload.params)]
            expected = workload.expected(inputs)
            got = compiled.run(args, [(e.shape, str(e.dtype)) for e in expected])
            mismatch = check_outputs(got, expected, workload.rtol, workload.atol)
            if mismatch:
                failures.append(mismatch.message(f"(dims {dims}, seed {seed})"))
                raise AssertionError(failures[-1])

        try:
            run_example()
        except AssertionError:
            self._fail("wrong", f"tvmperf: {where} does not match its NumPy reference on a Hypothesis-drawn shape\n{failures[-1]}")

    def _baselines(self) -> dict[str, Record]:
        __tracebackhide__ = True
        try:  # read even when updating: a broken file is reported, never overwritten
            return self.session.baselines(self.baseline_file)
        except BaselineError as exc:
            problem = str(exc)
        self._fail("error", f"tvmperf: {problem}")  # outside the except: no chained traceback
        raise AssertionError("unreachable")  # pragma: no cover

    def _baseline_sampler(self, baseline, fingerprint, target, workload, args, out_specs, notes):
        """A sampler of the baseline's own compiled artifact, when one was saved on this
        machine and still matches; why not goes into ``notes``."""
        timing = baseline.timings.get(fingerprint) if baseline else None
        if timing is None or timing.artifact is None or self.session.settings.artifact_dir is None:
            return None
        path = self.session.settings.baseline_dir / timing.artifact
        shown = _display_path(path, self.session.rootpath)
        problem = verified(path, timing.artifact_sha256, shown)
        copy = self.session.scratch_dir() / f"baseline-{next(_FILE_NUMBERS)}-{path.name}"
        if problem is None:  # what runs is a private copy, checked again and run in a child first
            shutil.copyfile(path, copy)
            problem = verified(copy, timing.artifact_sha256, shown)
        if problem is None:
            crash = self.session.sandbox().run(copy, self.executor, workload.entry, self.target, args, out_specs)
            if crash is not None:
                problem = (f"baseline artifact {shown} crashed the child process that loaded it ({crash.how}); "
                           f"ignored, nothing of it was loaded in the session (re-record with --tvmperf-update)")
        if problem is None:
            try:
                sampler = self._placed_sampler(copy, target, workload, self.executor, args, out_specs)
                sampler()  # the old program must accept today's inputs
                return sampler
            except Exception as exc:  # an artifact of another signature or TVM
                problem = f"baseline artifact {shown} cannot time today's inputs ({shorten_tvm_error(exc, 1)})"
        notes.append(problem)
        return None

    def _placed_sampler(self, path: Path, target, workload: Workload, executor: str, args, out_specs):
        return placed_sampler(path, executor, workload.entry, target, args, out_specs,
                              self.session.settings.min_repeat_ms, self.session.scratch_dir())

    def _export(self, compiled, fingerprint: str, side: str | None = None) -> PendingArtifact | None:
        """Export the compiled artifact: to its place among the baselines when updating
        (renamed into place at session end), else to the run's scratch directory.
        ``side`` names one side of an ``assert_ratio``: always scratch."""
        settings = self.session.settings
        module_key = str(self.baseline_file.relative_to(settings.baseline_dir).with_suffix(""))
        relpath = artifact_relpath(fingerprint, module_key, self.test_id + (f"::{side}" if side else ""))
        keep = settings.update and settings.artifact_dir is not None and side is None
        root = settings.artifact_dir if keep else self.session.scratch_dir()
        try:
            exported = self._exports.get(id(compiled))
            pending = export_pending(compiled, root / relpath, source=exported[1] if exported else None)
            self.session.exported.append(pending)  # removed at session end unless committed
            return pending
        except Exception as exc:  # no C toolchain to link a shared library: time in memory
            self.session.export_problem = f"compiled artifacts cannot be exported here, a/b timing is off ({shorten_tvm_error(exc, 2)})"
            return None

    def _peer_verdicts(self, record: Record) -> tuple[RatioVerdict, ...]:
        policy = self.session.time_policy()
        try:
            verdicts = peer_verdicts(record.timing.samples, self.peer_limits, policy.alpha, policy.noise_ratio,
                                     wanted=self._peers_timed)
        except ValueError as exc:
            self._fail("error", f"tvmperf: {self.nodeid}: {exc}")
        # a gate the confirmation re-measure did not bear out (each measurement alone
        # past the limit) is inconclusive, not failed
        return tuple(v.held() if v.name in self._peers_unconfirmed and v.status == "exceeded" else v
                     for v in verdicts)

    def _gate_peers(self, peers: tuple[RatioVerdict, ...], message: str) -> None:
        """Fail when TVM takes more than ``vs_<peer>`` times a peer's time."""
        __tracebackhide__ = True
        if any(p.status == "exceeded" for p in peers):
            pytest.fail(message, pytrace=False)
        if any(p.status == "inconclusive" for p in peers):
            self._inconclusive(message)

    def _record(self, record: Record, note: str = "") -> Outcome:
        __tracebackhide__ = True
        self.session.queue_update(self.baseline_file, self.test_id, record)
        peers = self._peer_verdicts(record)
        gated = [p for p in peers if p.status in ("exceeded", "inconclusive")]
        message = ""
        if gated:
            message = "\n".join([f"tvmperf: {self.nodeid}: TVM against its peer frameworks (baseline recorded all the same)",
                                  *peer_lines(peers)])
        outcome = self._add(Outcome(self.nodeid, self.test_id, self.executor, self.target,
                                    "slower than peer" if any(p.status == "exceeded" for p in peers) else "recorded",
                                    record=record, peers=peers, message=message, note=note))
        if gated:
            self._gate_peers(peers, message)
        return outcome

    def _decide(self, record: Record, baseline: Record | None, remeasure, make_record, notes: list[str]) -> Outcome:
        __tracebackhide__ = True
        shown_path = _display_path(self.baseline_file, self.session.rootpath)
        if baseline is None:
            self._fail("no baseline", missing_baseline_message(self.nodeid, self.test_id, shown_path,
                                                                   self.session.accept_command(self.nodeid)), record=record,
                       note="no baseline: run pytest --tvmperf-update to create it")
        tuning_note = ""
        if baseline.pipeline != record.pipeline:
            notes.append(f"compile pipeline changed: {baseline.pipeline} -> {record.pipeline}")
        elif (dict(baseline.target) == dict(record.target)  # each target has its own records
              and (baseline.tuning or {}).get("records_hash") != (record.tuning or {}).get("records_hash")):
            old = (baseline.tuning or {}).get("records_hash")
            new = (record.tuning or {}).get("records_hash")
            notes.append(f"tuning database records changed since the baseline ({old} -> {new}): "
                         f"re-record with pytest --tvmperf-update if the new schedules are intended")
            tuning_note = "tuning database records changed since the baseline"
        policy = self.session.time_policy()

        def judge(samples: TimeSamples) -> dict[str, MetricVerdict]:
            return {"time": compare_time(make_record(samples), baseline, self.thresholds["time"], policy)}

        checked = confirm(record.timing.samples, judge, remeasure, self.session.settings.confirm)
        record = make_record(checked.samples)
        time_verdict = checked.verdicts["time"]
        comparison = compare(record, baseline, self.thresholds, policy).with_verdict(time_verdict)
        if checked.second is not None:
            first, second = checked.first["time"], checked.second["time"]
            if "time" in checked.disagreed:
                word = (f"regressed on all samples, but the measurements disagree ({first.decision.ratio:.2f}x, "
                        f"then {second.decision.ratio:.2f}x): inconclusive")
            else:
                word = "confirmed" if time_verdict.status == first.status else f"not confirmed (now {time_verdict.status})"
            notes.append(f"first measurement {first.status} at {first.decision.describe()}; re-measured with "
                         f"{len(checked.samples.samples)} samples in all: {word}")
        held = (f"time inconclusive: {time_verdict.reason.split(':')[0]}"  # one summary line per kind of reason
                if time_verdict.reason and time_verdict.status == "inconclusive" else "")
        summary_note = "; ".join(n for n in (self._threads_note, held, tuning_note) if n)
        if time_verdict is not None and time_verdict.status == "not gated" and time_verdict.note:
            summary_note = "; ".join(n for n in (f"time shown, not gated: {time_verdict.note}", tuning_note) if n)
        peers = self._peer_verdicts(record)
        peer_exceeded = any(p.status == "exceeded" for p in peers)
        peer_open = any(p.status == "inconclusive" for p in peers)
        if comparison.status in ("regressed", "inconclusive") or not (peer_exceeded or peer_open):
            message = regression_message(self.nodeid, shown_path, record, baseline, comparison, notes,
                                         self.session.accept_command(self.nodeid))
            if peers:
                message += "\nagainst peer frameworks, timed side by side:\n" + "\n".join(peer_lines(peers))
        else:
            word = "slower than its limit against" if peer_exceeded else "not clearly within its limit against"
            message = "\n".join([f"tvmperf: {self.nodeid}: TVM is {word} a peer framework (timed side by side; "
                                  f"the baseline comparison passed)", *peer_lines(peers), *(f"  note: {n}" for n in notes)])
        status = comparison.status
        if peer_exceeded and status != "regressed":
            status = "slower than peer"
        shown = comparison.status in ("regressed", "inconclusive") or peer_exceeded or peer_open
        outcome = self._add(Outcome(self.nodeid, self.test_id, self.executor, self.target, status,
                                    record=record, baseline=baseline, comparison=comparison, note=summary_note,
                                    message=message if shown else "", peers=peers))
        if comparison.regressions or peer_exceeded:
            pytest.fail(message, pytrace=False)
        if comparison.inconclusive or peer_open:
            self._inconclusive(message)
        return outcome


class TvmperfInconclusive(UserWarning):
    """A time verdict that the noise left open (see --tvmperf-inconclusive)."""
