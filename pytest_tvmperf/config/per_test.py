"""One test's settings: the run's :class:`Settings` with the test's marker merged in, once,
by :func:`settings_for_test` (the ``tvmperf`` fixture calls it).

The one precedence rule: command line (or environment) > the test's marker > ini >
default. :meth:`Settings.from_config` merged the command line and the ini, keeping the
names of the options the command line set (:attr:`Settings.pinned`, thresholds metric by
metric in :attr:`Settings.pinned_thresholds`): the marker's value goes in where not pinned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.config.markers import MarkerSettings
from pytest_tvmperf.config.options import DEFAULT_CHILD_TIMEOUT_S, DEFAULT_TIME_BUDGET_S
from pytest_tvmperf.config.parsing import RESOURCE_METRICS
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.config.time_policy import DecideBudget


@dataclass(frozen=True)
class TestSettings:
    """What one test is measured and judged with (module doc)."""

    __test__ = False  # not a test class of pytest's, whatever its name

    thresholds: Mapping[str, Limit] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    #: peer -> the most TVM may take relative to it (the marker's ``vs_torch=1.2``)
    peer_limits: Mapping[str, float] = field(default_factory=dict)
    #: False: correctness and exact metrics only
    timing: bool = True
    #: seconds the test's time measurement may take
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    #: what measuring a borderline time verdict until it is decided may add (issue 60)
    decide_budget: DecideBudget = DecideBudget()
    #: the simulated cost: "on", "off", or "auto" (on where valgrind is installed)
    simulate: Literal["on", "off", "auto"] = "auto"
    #: the resource metrics measured (values/resources.py)
    resources: tuple[str, ...] = RESOURCE_METRICS
    baseline_weights: str = "seeded"
    #: --tvmperf-child-timeout: the most one call of the user's program may take (the simulated cost's too)
    child_timeout_s: float = float(DEFAULT_CHILD_TIMEOUT_S)
    #: the settings the command line fixed for every test (:attr:`Settings.pinned`), as messages name it
    pinned: frozenset[str] = frozenset()


def settings_for_test(settings: Settings, marker: MarkerSettings | None = None) -> TestSettings:
    """The run's ``settings`` merged with one test's ``marker`` (module doc), thresholds metric by metric."""
    marker = marker or MarkerSettings()

    def closest(name: str, own: Any) -> Any:
        return getattr(settings, name) if own is None or name in settings.pinned else own

    thresholds = dict(settings.thresholds)
    thresholds.update((m, limit) for m, limit in marker.thresholds.items() if m not in settings.pinned_thresholds)
    return TestSettings(
        thresholds=thresholds,
        peer_limits=dict(marker.peer_limits),
        timing=bool(closest("timing", marker.timing)),
        time_budget_s=float(closest("time_budget", marker.time_budget)),
        decide_budget=closest("decide_budget", marker.decide_budget),
        simulate=closest("simulate", marker.simulate) or "auto",
        resources=tuple(closest("resources", marker.resources)),
        baseline_weights=str(closest("baseline_weights", marker.baseline_weights)),
        child_timeout_s=float(settings.child_timeout),
        pinned=settings.pinned,
    )
