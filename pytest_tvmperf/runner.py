"""What ``tvmperf.check(workload)`` does for one test id: compile, check against
NumPy (and on Hypothesis-drawn shapes), measure, compare with the baseline, decide."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import pytest

from .compare import compare
from .correctness import check_outputs
from .executors import CompileError, get_executor
from .machine import current_machine
from .measure import Timer, stopwatch
from .options import Limit
from .record import Record, Timing
from .report import missing_baseline_message, regression_message
from .session import Outcome, TvmperfSession
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
    _checked: bool = False

    @property
    def executor(self) -> str:
        return self.combo.executor

    @property
    def target(self) -> str:
        return self.combo.target

    def _fail(self, verdict: str, message: str, **fields) -> None:
        __tracebackhide__ = True
        self.session.add(Outcome(self.nodeid, self.test_id, self.executor, self.target, verdict, **fields))
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
        samples = self.timer(compiled, args, out_specs)
        target_json = target.as_json()
        machine = current_machine(target_json)
        record = Record(
            workload=workload.name,
            executor=self.executor,
            target=target_json,
            tvm_version=machine.tvm_version,
            exact=exact,
            timings={machine.fingerprint: Timing(machine, samples)},
            compile_s=compile_time[0],
        )
        return self._decide(record)

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

    def _decide(self, record: Record) -> Outcome:
        __tracebackhide__ = True
        rootpath = self.session.rootpath
        shown_path = _display_path(self.baseline_file, rootpath)
        try:  # read even when updating: a broken file is reported, never overwritten
            baselines = self.session.baselines(self.baseline_file)
        except BaselineError as exc:
            self._fail("error", f"tvmperf: {exc}", record=record)
        if self.session.settings.update:
            self.session.queue_update(self.baseline_file, self.test_id, record)
            outcome = Outcome(self.nodeid, self.test_id, self.executor, self.target, "recorded", record=record)
            self.session.add(outcome)
            return outcome
        baseline = baselines.get(self.test_id)
        if baseline is None:
            self._fail("no baseline", missing_baseline_message(self.nodeid, self.test_id, shown_path), record=record,
                       note="no baseline: run pytest --tvmperf-update to create it")
        comparison = compare(record, baseline, self.thresholds)
        time_verdict = comparison.get("time")
        note = ""
        if time_verdict is not None and time_verdict.status == "not gated" and time_verdict.note:
            note = f"time shown, not gated: {time_verdict.note}"
        outcome = Outcome(self.nodeid, self.test_id, self.executor, self.target, comparison.status,
                          record=record, baseline=baseline, comparison=comparison, note=note)
        if comparison.regressions:
            self.session.add(outcome)
            pytest.fail(regression_message(self.nodeid, shown_path, record, baseline, comparison), pytrace=False)
        self.session.add(outcome)
        return outcome
