"""The ``tvmperf`` fixture object: ``tvmperf.check(workload)`` compiles, checks against
NumPy (and on Hypothesis-drawn shapes), measures, compares with the baseline and decides,
by the check pipeline (pipeline.py) in the test's mode (timed.py, untimed.py);
``tvmperf.assert_ratio`` times two programs side by side (ratio.py). It holds the test's
settings and the run's session; each check passes frozen values from step to step."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, NoReturn

import pytest

from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.prepare import Prepared, Preparer
from pytest_tvmperf.builder.tuning_display import TuningIO
from pytest_tvmperf.check import pipeline, ratio, timed, untimed
from pytest_tvmperf.check.decide import Identity, inconclusive
from pytest_tvmperf.check.sources import TimingSources
from pytest_tvmperf.combos import Combo, Variant
from pytest_tvmperf.config.options import DEFAULT_TIME_BUDGET_S
from pytest_tvmperf.config.limits import Limit
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.measure.plan import plan_for
from pytest_tvmperf.builder.timer import Timer
from pytest_tvmperf.result.junit import junit_properties
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.values.builtin_types import plain
from pytest_tvmperf.session import TvmperfSession
from pytest_tvmperf.store.files import BaselineError
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.measure.compile_time import CompileTimer
from pytest_tvmperf.values.resources import RESOURCE_NAMES
from pytest_tvmperf.workload import Workload


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
    #: how a tuning is shown and measured (--tvmperf-tune)
    tuning_io: TuningIO = field(default_factory=TuningIO)
    #: False: correctness and exact metrics only (--tvmperf-timing=off, marker timing=False)
    timing: bool = True
    #: seconds one test's time measurement may take (--tvmperf-time-budget, marker time_budget=)
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    simulate: str | None = None  # the test's marker simulate= (measure/simulate.py)
    #: the resource metrics measured (--tvmperf-resources, marker resources=; values/resources.py)
    resources: tuple[str, ...] = RESOURCE_NAMES
    #: what an update stores of the weights: seeded or exact (--tvmperf-baseline-weights, marker baseline_weights=)
    baseline_weights: str = "seeded"
    #: times the builds of compile_s side by side (the tvmperf_compile_timer fixture; measure/compile_time.py)
    compile_timer: CompileTimer = field(default_factory=CompileTimer)
    _checked: bool = False
    _ratios: int = 0  # the assert_ratio calls so far (each outcome is named by its number)
    _prep: Preparer | None = None
    _sources: TimingSources | None = None

    # --- the test's API ----------------------------------------------------------------

    def check(self, workload: Workload) -> Outcome:
        """Compile ``workload`` for this test's executor and target, check its output
        against the NumPy reference, measure it and gate it against the baseline.

        Fails the test on a compile error, a wrong or non-finite output, a missing
        baseline or a regression; skips it when the combination cannot run here."""
        __tracebackhide__ = True
        if self._checked:
            raise RuntimeError(
                "tvmperf.check() was already called in this test: use one check per test (one baseline entry per test id)"
            )
        self._checked = True
        if not isinstance(workload, Workload):
            raise TypeError(f"tvmperf.check() takes a pytest_tvmperf.Workload, got {type(workload).__name__}")
        where = f"{workload.name} on {self.target}/{self.executor}"
        prep = self.preparer.prepare(workload, self.executor, where)
        against = self.session.against
        if against is not None:  # --tvmperf-against-tvm: another TVM version's build in the baseline's place
            return against.check(self, prep)
        plan = plan_for(prep.target.runnable, prep.target.not_run, self.timing)
        if not plan.time:  # timing off, or a target built but not run here (cuda without a GPU)
            return untimed.check(self, prep, plan)
        return timed.check(self, prep, where)

    def assert_ratio(
        self, numerator: "Workload | Variant", denominator: "Workload | Variant", at_most: float
    ) -> RatioVerdict:
        """Assert that ``numerator`` takes at most ``at_most`` times the time of
        ``denominator``, both compiled, checked and timed side by side in this process
        (e.g. dynamic batch vs static batch, compiled vs bytecode, bound vs run-time
        weights). Needs no baseline. Fails when the whole confidence interval of the
        ratio lies above ``at_most``; an interval across it is inconclusive
        (``--tvmperf-inconclusive``)."""
        __tracebackhide__ = True
        if not (isinstance(at_most, (int, float)) and 0 < at_most < float("inf")):
            raise ValueError(
                f"assert_ratio(at_most={at_most!r}): give the largest allowed time ratio, e.g. at_most=1.5"
            )
        sides = [v if isinstance(v, Variant) else Variant(v) for v in (numerator, denominator)]
        self._ratios += 1  # the summary names it by test id; the message and JSON by its sides
        return ratio.assert_ratio(self, sides, float(at_most), self._ratios)

    def variant(self, workload: Workload, executor: str | None = None, label: str | None = None) -> Variant:
        """``workload`` under another executor, for :meth:`assert_ratio`."""
        if executor is not None:
            get_executor(executor)  # an unknown name is an error here, not at timing
        return Variant(workload, executor, label)

    # --- what the pipeline and the against side read -------------------------------------

    @property
    def executor(self) -> str:
        return self.combo.executor

    @property
    def target(self) -> str:
        return self.combo.target

    @property
    def preparer(self) -> Preparer:
        if self._prep is None:
            self._prep = Preparer(
                self.session,
                self.target,
                self.nodeid,
                self.fail,
                self.tuning_io,
                baseline_tuning=lambda: getattr(self.stored_baselines().get(self.test_id), "tuning", None),
            )
        return self._prep

    def preparer_failing(self, fail: Callable[..., NoReturn]) -> Preparer:
        """The test's preparer (its exported programs shared), failing the test by ``fail``."""
        return replace(
            self.preparer,
            fail=fail,
            baseline_tuning=lambda: getattr(self.stored_baselines(fail).get(self.test_id), "tuning", None),
        )

    @property
    def sources(self) -> TimingSources:
        if self._sources is None:
            self._sources = TimingSources(
                self.session,
                self.nodeid,
                self.test_id,
                self.executor,
                self.target,
                self.baseline_file,
                self.peer_limits,
                self.fail,
                self.preparer.exports,
                baseline_weights=self.baseline_weights,
            )
        return self._sources

    def identity(self) -> Identity:
        """Who this test's check is for, as its messages and outcome name it."""
        from pytest_tvmperf.result.baseline_change import ON_A_PULL_REQUEST

        return Identity(
            self.nodeid,
            self.test_id,
            self.executor,
            self.target,
            self.session.shown(self.baseline_file),
            self.session.accept_command(self.nodeid),
            ON_A_PULL_REQUEST if self.session.settings.baselines_ref is not None else "",
        )

    def add_outcome(self, outcome: Outcome) -> Outcome:
        """Keep the outcome for the summary and reports, and put its figures on the
        test's JUnit XML properties."""
        outcome = replace(outcome, location=self.location)
        self.session.report.add(outcome)
        if outcome.comparison is not None:
            self.session.report.not_measured.update(outcome.comparison.held_setups())
        # builtin types only: xdist sends the properties to the controller
        self.user_properties.extend((name, plain(value)) for name, value in junit_properties(outcome))
        return outcome

    def failing_as(self, shown_id: str) -> Callable[..., NoReturn]:
        """``fail(verdict, message, **fields)``: the outcome kept under ``shown_id``, then the test failed."""

        def fail(verdict: str, message: str, **fields) -> NoReturn:
            __tracebackhide__ = True
            self.add_outcome(
                Outcome(self.nodeid, shown_id, self.executor, self.target, verdict, message=message, **fields)
            )
            pytest.fail(message, pytrace=False)

        return fail

    def fail(self, verdict: str, message: str, **fields) -> NoReturn:
        __tracebackhide__ = True
        self.failing_as(self.test_id)(verdict, message, **fields)

    def inconclusive(self, message: str) -> None:
        """An inconclusive verdict, as ``--tvmperf-inconclusive`` says."""
        __tracebackhide__ = True
        inconclusive(self.session.settings.inconclusive, self.session.warns_inconclusive, message)

    def exact_metrics(self, prep: Prepared, runs: bool = True) -> ExactMetrics:
        """The exact metrics of a prepared workload (pipeline.py)."""
        __tracebackhide__ = True
        return pipeline.exact_metrics(self, prep, runs)

    def stored_baselines(self, fail: Callable[..., NoReturn] | None = None) -> dict[str, Record]:
        __tracebackhide__ = True
        try:  # read even when updating: a broken file is reported, never overwritten
            return self.session.store.baselines(self.baseline_file)
        except BaselineError as exc:
            problem = str(exc)
        (fail or self.fail)("error", f"tvmperf: {problem}")  # outside the except: no chained traceback
        raise AssertionError("unreachable")  # pragma: no cover
