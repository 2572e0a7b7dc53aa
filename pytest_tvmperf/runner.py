"""What ``tvmperf.check(workload)`` does for one test id: compile, check against
NumPy (and on Hypothesis-drawn shapes), measure, compare with the baseline, decide."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

import pytest

from .compare import compare
from .correctness import check_outputs
from .artifacts import PendingArtifact, artifact_relpath, discard, export_pending, verified
from .executors import CompileError, get_executor, placed_sampler, shorten_tvm_error
from .machine import current_machine
from .measure import TimeSamples, Timer, TimingTask, kernel_times, stopwatch
from .options import Limit
from .record import Record, Timing
from .reference import REFERENCE_NAME
from .report import missing_baseline_message, regression_message
from .session import Outcome, TvmperfSession, junit_properties
from .store import BaselineError
from .workload import Workload


@dataclass(frozen=True)
class Combo:
    """One executor x target combination: a test id suffix like ``llvm-vm-bytecode``."""

    target: str
    executor: str

    @property
    def id(self) -> str:
        return f"{self.target}-{self.executor}"


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
    _checked: bool = False

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
        self._add(Outcome(self.nodeid, self.test_id, self.executor, self.target, verdict, message=message, **fields))
        pytest.fail(message, pytrace=False)

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
        executor = get_executor(self.executor)
        target = self.session.target(self.target)
        reason = executor.unsupported(workload) or target.skip_reason
        if reason:
            pytest.skip(reason)
        where = f"{workload.name} on {self.target}/{self.executor}"

        with stopwatch() as compile_time:
            try:
                compiled = executor.compile(workload, target)
            except CompileError as exc:
                self._fail("error", f"tvmperf: compiling {where} failed:\n{exc}")

        inputs = workload.inputs()
        args = [*inputs, *(a for _, a in workload.params)]
        expected = workload.expected(inputs)
        out_specs = [(e.shape, str(e.dtype)) for e in expected]
        mismatch = check_outputs(compiled.run(args, out_specs), expected, workload.rtol, workload.atol)
        if mismatch:
            self._fail("wrong", f"tvmperf: {where} does not match its NumPy reference\n" + mismatch.message(f"(dims {dict(workload.dims)}, seed {workload.seed})" if workload.dims else ""))
        if workload.dim_ranges:
            self._check_symbolic(compiled, workload, where)

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
                compile_s=compile_time[0],
                bytecode=listing,
                kernel_time_s=per_kernel,
            )

        baseline = self._baselines().get(self.test_id)
        notes: list[str] = []
        # Time the artifact as a later run will load it (exported and loaded back), so
        # a/b timing compares like with like: a JIT-compiled module in memory runs a few
        # percent apart from the same code loaded from a shared library.
        pending = self._export(compiled, machine.fingerprint)
        task = TimingTask(
            workload=(self._placed_sampler(pending.temp, target, workload, args, out_specs) if pending
                      else compiled.sampler(args, out_specs, self.session.settings.min_repeat_ms)),
            reference=self.session.reference_sampler(target),
            reference_name=REFERENCE_NAME,
            baseline=(None if self.session.settings.update
                      else self._baseline_sampler(baseline, machine.fingerprint, target, workload, args, out_specs, notes)),
        )
        rounds = self.session.settings.repeat

        def measure(n: int) -> TimeSamples:
            with self.session.timing_lock():
                return self.timer(task, n)

        samples = measure(rounds)
        keep = pending is not None and self.session.settings.update and self.session.settings.artifact_dir is not None
        if pending is not None and not keep:
            discard(pending)
        if self.session.settings.update:
            if keep:
                self.session.queue_artifact(pending)
            return self._record(make_record(samples, pending if keep else None))
        return self._decide(make_record(samples), baseline, lambda: measure(2 * rounds), make_record, notes)

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
            self._fail("error", f"tvmperf: {exc}")
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
        if problem is None:
            try:
                sampler = self._placed_sampler(path, target, workload, args, out_specs)
                sampler()  # the old program must accept today's inputs
                return sampler
            except Exception as exc:  # an artifact of another signature or TVM
                problem = f"baseline artifact {shown} cannot time today's inputs ({shorten_tvm_error(exc, 1)})"
        notes.append(problem)
        return None

    def _placed_sampler(self, path: Path, target, workload: Workload, args, out_specs):
        return placed_sampler(path, self.executor, workload.entry, target, args, out_specs,
                              self.session.settings.min_repeat_ms, self.session.scratch_dir())

    def _export(self, compiled, fingerprint: str) -> PendingArtifact | None:
        """Export the compiled artifact: to its place among the baselines when updating
        (renamed into place at session end), else to the run's scratch directory."""
        settings = self.session.settings
        module_key = str(self.baseline_file.relative_to(settings.baseline_dir).with_suffix(""))
        relpath = artifact_relpath(fingerprint, module_key, self.test_id)
        root = settings.artifact_dir if settings.update and settings.artifact_dir is not None else self.session.scratch_dir()
        try:
            pending = export_pending(compiled, root / relpath)
            self.session.exported.append(pending)  # removed at session end unless committed
            return pending
        except Exception as exc:  # no C toolchain to link a shared library: time in memory
            self.session.export_problem = f"compiled artifacts cannot be exported here, a/b timing is off ({shorten_tvm_error(exc, 2)})"
            return None

    def _record(self, record: Record) -> Outcome:
        self.session.queue_update(self.baseline_file, self.test_id, record)
        return self._add(Outcome(self.nodeid, self.test_id, self.executor, self.target, "recorded", record=record))

    def _decide(self, record: Record, baseline: Record | None, remeasure, make_record, notes: list[str]) -> Outcome:
        __tracebackhide__ = True
        shown_path = _display_path(self.baseline_file, self.session.rootpath)
        if baseline is None:
            self._fail("no baseline", missing_baseline_message(self.nodeid, self.test_id, shown_path), record=record,
                       note="no baseline: run pytest --tvmperf-update to create it")
        policy = self.session.time_policy()
        comparison = compare(record, baseline, self.thresholds, policy)
        time_verdict = comparison.get("time")
        if (self.session.settings.confirm and time_verdict is not None
                and time_verdict.status in ("regressed", "inconclusive")):
            first = time_verdict
            again = remeasure()
            second = compare(make_record(again), baseline, self.thresholds, policy).get("time")
            record = make_record(record.timing.samples + again)
            comparison = compare(record, baseline, self.thresholds, policy)
            time_verdict = comparison.get("time")
            pooled = record.timing.samples
            limit = 1 + (self.thresholds["time"].relative or 0.0)
            if time_verdict.status == "regressed" and not (first.decision.ratio > limit and second.decision.ratio > limit):
                # a regression fails only when each measurement on its own is past the
                # threshold too: one disturbed measurement cannot fail the test
                time_verdict = replace(time_verdict, status="inconclusive")
                comparison = replace(comparison, verdicts=tuple(time_verdict if v.metric == "time" else v
                                                                for v in comparison.verdicts))
                word = (f"regressed on all samples, but the measurements disagree ({first.decision.ratio:.2f}x, "
                        f"then {second.decision.ratio:.2f}x): inconclusive")
            else:
                word = "confirmed" if time_verdict.status == first.status else f"not confirmed (now {time_verdict.status})"
            notes.append(f"first measurement {first.status} at {first.decision.describe()}; re-measured with "
                         f"{len(pooled.samples)} samples in all: {word}")
        summary_note = ""
        if time_verdict is not None and time_verdict.status == "not gated" and time_verdict.note:
            summary_note = f"time shown, not gated: {time_verdict.note}"
        message = regression_message(self.nodeid, shown_path, record, baseline, comparison, notes)
        outcome = self._add(Outcome(self.nodeid, self.test_id, self.executor, self.target, comparison.status,
                                    record=record, baseline=baseline, comparison=comparison, note=summary_note,
                                    message=message if comparison.status in ("regressed", "inconclusive") else ""))
        if comparison.regressions:
            pytest.fail(message, pytrace=False)
        if comparison.inconclusive:
            policy_name = self.session.settings.inconclusive
            if policy_name == "fail":
                pytest.fail(message + "\n(--tvmperf-inconclusive=fail)", pytrace=False)
            if policy_name == "warn":
                warnings.warn(TvmperfInconclusive(message), stacklevel=1)
        return outcome


class TvmperfInconclusive(UserWarning):
    """A time verdict that the noise left open (see --tvmperf-inconclusive)."""
