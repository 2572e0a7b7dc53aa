"""What one test's check reads, frozen: :class:`CheckContext`, built once per test by :func:`for_test`
(the ``tvmperf`` fixture) and handed to the mode that runs (or ``--tvmperf-against-tvm``'s :class:`AgainstSide`);
``fail`` and ``inconclusive`` end a test through it. Nothing here calls back into the fixture."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NoReturn, Protocol

import pytest

from pytest_tvmperf.builder.prepare import Preparer
from pytest_tvmperf.builder.tuning_display import TuningIO
from pytest_tvmperf.check.decide import Identity, inconclusive
from pytest_tvmperf.check.sources import TimingSources
from pytest_tvmperf.config.per_test import TestSettings
from pytest_tvmperf.measure.compile_time import CompileTimer
from pytest_tvmperf.result.baseline_change import ON_A_PULL_REQUEST
from pytest_tvmperf.result.junit import junit_properties
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.store.files import BaselineError
from pytest_tvmperf.values.builtin_types import plain

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.builder.timer import Timer
    from pytest_tvmperf.combos import Combo
    from pytest_tvmperf.result.run_report import RunReport
    from pytest_tvmperf.session import TvmperfSession
    from pytest_tvmperf.store.baseline_store import BaselineStore
    from pytest_tvmperf.values.record import Record

#: ``fail(verdict, message, **outcome_fields)``: keeps the outcome, then fails the test
Fail = Callable[..., NoReturn]
#: keeps an outcome for the summary and the reports (the outcome sink), returning it as kept
Sink = Callable[[Outcome], Outcome]


@dataclass(frozen=True)
class CheckContext:
    """One test's check, as its modes read it (module doc)."""

    #: the run's resources: settings, baseline store, run report, timing lock, child process
    session: "TvmperfSession"
    #: who the check is for, as its messages and outcome name it
    identity: Identity
    baseline_file: Path
    #: the test's settings: the run's with its marker merged in (config/per_test.py)
    settings: TestSettings
    #: times the workload and what it is judged against (the ``tvmperf_timer`` fixture)
    timer: "Timer"
    #: compiles and checks the test's workloads (its exported programs shared with ``sources``)
    preparer: Preparer
    #: what is timed beside today's program, and the store and build work it takes
    sources: TimingSources
    #: the outcome sink (:func:`outcome_sink`)
    add_outcome: Sink
    #: times the builds of compile_s side by side (the tvmperf_compile_timer fixture)
    compile_timer: CompileTimer = field(default_factory=CompileTimer)

    @property
    def nodeid(self) -> str:
        return self.identity.nodeid

    @property
    def test_id(self) -> str:
        return self.identity.test_id

    @property
    def executor(self) -> str:
        return self.identity.executor

    @property
    def target(self) -> str:
        return self.identity.target

    def failing_as(self, shown_id: str) -> Fail:
        """``fail(verdict, message, **fields)``: the outcome kept under ``shown_id``, then the test failed."""
        return failing(self.identity, self.add_outcome, shown_id)

    def fail(self, verdict: str, message: str, **fields) -> NoReturn:
        __tracebackhide__ = True
        self.failing_as(self.test_id)(verdict, message, **fields)

    def note(self, line: str) -> None:
        """A run summary line this test brings (why something was not measured here)."""
        self.session.report.note(line)

    def inconclusive(self, message: str) -> None:
        """An inconclusive verdict, as ``--tvmperf-inconclusive`` says."""
        __tracebackhide__ = True
        inconclusive(self.session.settings.inconclusive, self.session.warns_inconclusive, message)

    def stored_baselines(self) -> dict[str, "Record"]:
        """The entries of the test's baseline file; a broken file fails the test."""
        __tracebackhide__ = True
        return stored_baselines(self.session.store, self.baseline_file, self.fail)

    def preparer_failing(self, fail: Fail) -> Preparer:
        """The test's preparer (its exported programs shared), failing the test by ``fail``."""
        tuning = _baseline_tuning(self.session.store, self.baseline_file, self.test_id, fail)
        return replace(self.preparer, fail=fail, baseline_tuning=tuning)


class AgainstSide(Protocol):
    """``--tvmperf-against-tvm``'s side of a test, taking over after compiling: today's run
    (against/gate.py ``AgainstPlugin``) or the other version's (against/export.py ``Exporter``)."""

    def check(self, ctx: CheckContext, prep: "Prepared") -> Outcome: ...


def failing(who: Identity, sink: Sink, shown_id: str) -> Fail:
    """``fail(verdict, message, **fields)`` for ``who``: the outcome kept by ``sink`` under ``shown_id``."""

    def fail(verdict: str, message: str, **fields) -> NoReturn:
        __tracebackhide__ = True
        sink(Outcome(who.nodeid, shown_id, who.executor, who.target, verdict, message=message, **fields))
        pytest.fail(message, pytrace=False)

    return fail


def stored_baselines(store: "BaselineStore", baseline_file: Path, fail: Fail) -> dict[str, "Record"]:
    __tracebackhide__ = True
    try:  # read even when updating: a broken file is reported, never overwritten
        return store.baselines(baseline_file)
    except BaselineError as exc:
        problem = str(exc)
    fail("error", f"tvmperf: {problem}")  # outside the except: no chained traceback
    raise AssertionError("unreachable")  # pragma: no cover


def _baseline_tuning(store: "BaselineStore", baseline_file: Path, test_id: str, fail: Fail) -> Callable[[], object]:
    """The tuning state the test's baseline was measured with (None: no entry, or untuned)."""
    return lambda: getattr(stored_baselines(store, baseline_file, fail).get(test_id), "tuning", None)


def _baseline_entry(
    session: "TvmperfSession", baseline_file: Path, test_id: str, fail: Fail
) -> Callable[[], str | None]:
    """The baseline file holding an entry of the test, as shown; None where it holds none."""
    return lambda: (
        session.shown(baseline_file) if test_id in stored_baselines(session.store, baseline_file, fail) else None
    )


def outcome_sink(report: "RunReport", location: tuple[str, int], user_properties: list[tuple[str, object]]) -> Sink:
    """Keeps an outcome for the summary and reports, its figures on the test's JUnit XML properties."""

    def add(outcome: Outcome) -> Outcome:
        outcome = replace(outcome, location=location)
        # the run's lines this outcome brings: the measuring setups that held a metric back
        report.add(outcome, outcome.comparison.held_setups() if outcome.comparison is not None else ())
        # builtin types only: xdist sends the properties to the controller
        user_properties.extend((name, plain(value)) for name, value in junit_properties(outcome))
        return outcome

    return add


def for_test(
    session: "TvmperfSession",
    combo: "Combo",
    nodeid: str,
    test_id: str,
    baseline_file: Path,
    settings: TestSettings,
    timer: "Timer",
    *,
    location: tuple[str, int] = ("", 0),
    user_properties: list[tuple[str, object]] | None = None,
    tuning_io: TuningIO | None = None,
    compile_timer: CompileTimer | None = None,
) -> CheckContext:
    """The context of one test's check, built once by its ``tvmperf`` fixture."""
    advice = ON_A_PULL_REQUEST if session.settings.baselines_ref is not None else ""
    shown, accept = session.shown(baseline_file), session.accept_command(nodeid)
    who = Identity(nodeid, test_id, combo.executor, combo.target, shown, accept, advice)
    sink = outcome_sink(session.report, location, user_properties if user_properties is not None else [])
    fail = failing(who, sink, test_id)
    preparer = Preparer(
        session,
        combo.target,
        nodeid,
        fail,
        tuning_io or TuningIO(),
        baseline_tuning=_baseline_tuning(session.store, baseline_file, test_id, fail),
        baseline_entry=_baseline_entry(session, baseline_file, test_id, fail),
    )
    where = (combo.executor, combo.target, baseline_file, settings.peer_limits, fail, preparer.exports)
    sources = TimingSources(session, nodeid, test_id, *where, baseline_weights=settings.baseline_weights)
    compile_timer = compile_timer or CompileTimer()
    return CheckContext(session, who, baseline_file, settings, timer, preparer, sources, sink, compile_timer)
