"""A test's ``@pytest.mark.tvmperf(...)``, parsed once per node into a :class:`MarkerSettings`.

Its keywords are the ``marker_keys`` of the option table. What it sets sits between the
command line and the ini (config/per_test.py); its executors and targets say which the
test supports; a ``vs_<peer>`` limit times that peer and gates TVM's time against it.
An error names the test's node id and the bad keyword.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pytest

from pytest_tvmperf.config.options import OPTIONS
from pytest_tvmperf.config import parsing
from pytest_tvmperf.config.limits import Limit, peer_limits_from_marker, thresholds_from_marker
from pytest_tvmperf.config.time_policy import DecideBudget, parse_decide_budget

MARKER = "tvmperf"
MARKER_KEYS: tuple[str, ...] = tuple(key for opt in OPTIONS for key in opt.marker_keys)


@dataclass(frozen=True)
class MarkerSettings:
    """What one test's markers say; ``None``: the test does not restrict that choice (``timing``,
    ``time_budget`` in seconds, ``resources`` and ``baseline_weights`` mean what their options do)."""

    executors: tuple[str, ...] | None = None
    targets: tuple[str, ...] | None = None
    thresholds: Mapping[str, Limit] = field(default_factory=dict)
    #: peer -> the most TVM may take relative to it (``vs_torch=1.2``)
    peer_limits: Mapping[str, float] = field(default_factory=dict)
    #: ``simulate="on"|"off"|True|False``: the simulated cost for this test (None: not set)
    simulate: str | None = None
    timing: bool | None = None
    time_budget: float | None = None
    decide_budget: DecideBudget | None = None
    resources: tuple[str, ...] | None = None
    baseline_weights: str | None = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> "MarkerSettings":
        """Parse the marker's keywords (pure); a bad value raises ValueError naming the keyword."""
        return cls(
            executors=_keyword(kwargs, "executors", parsing.parse_executors),
            targets=_keyword(kwargs, "targets", parsing.parse_targets),
            thresholds=thresholds_from_marker(kwargs),  # "bad threshold time='5': ..." names it
            peer_limits=peer_limits_from_marker(kwargs),  # "bad vs_torch='x': ..." names it
            simulate=_keyword(kwargs, "simulate", parsing.parse_simulate),
            timing=_keyword(kwargs, "timing", parsing.parse_switch),
            time_budget=_keyword(kwargs, "time_budget", parsing.parse_duration),
            decide_budget=_keyword(kwargs, "decide_budget", parse_decide_budget),
            resources=_keyword(kwargs, "resources", parsing.parse_resources),
            baseline_weights=_keyword(kwargs, "baseline_weights", parsing.parse_baseline_weights),
        )


#: the keywords that take a list of names (or one name, or comma-separated names), and an example
_NAME_LISTS = {
    "executors": "executors=['prim'] or executors='vm-bytecode,vm-compiled'",
    "targets": "targets=['llvm'] or targets='llvm,cuda'",
    "resources": "resources=['alloc_bytes'], resources='all' or resources=False",
}
#: the types every other keyword takes (its value as written, or as a Python value)
_SCALARS = (str, int, float, bool)


def _checked_type(key: str, value: Any) -> Any:
    """``value`` when its type is one ``key`` takes; else ValueError saying which it takes: a wrong
    type is a usage error naming the keyword, never a traceback from deep in a parser (issue 66)."""
    if key in _NAME_LISTS:
        names_ok = isinstance(value, str) or (
            isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
        )
        if names_ok or (key == "resources" and isinstance(value, bool)):
            return value
        wrong = next((v for v in value if not isinstance(v, str)), value) if isinstance(value, (list, tuple)) else value
        raise ValueError(
            f"{wrong!r} (of type {type(wrong).__name__}): {key} takes a name or a list of names (strings), "
            f"e.g. {_NAME_LISTS[key]}"
        )
    if not isinstance(value, _SCALARS):
        raise ValueError(
            f"a value of type {type(value).__name__}: {key} takes a string (or a number or a bool) as "
            f"docs/reference.md lists it"
        )
    return value


def _keyword(kwargs: Mapping[str, Any], key: str, parse) -> Any:
    """``parse(kwargs[key])``, None where the keyword is not given; a bad value (or one of a type
    the keyword does not take) raises ValueError naming the keyword and the value as written
    (``timing='of': ...``)."""
    if key not in kwargs:
        return None
    try:
        return parse(_checked_type(key, kwargs[key]))
    except ValueError as exc:
        raise ValueError(f"{key}={kwargs[key]!r}: {exc}") from None
    except (TypeError, AttributeError):  # a type _checked_type let through that the parser cannot read
        raise ValueError(
            f"{key}={kwargs[key]!r}: a value of type {type(kwargs[key]).__name__} is not one of {key}"
        ) from None


class MarkerError(pytest.UsageError, pytest.Collector.CollectError):
    """A bad ``@pytest.mark.tvmperf``: a usage error naming the test and the keyword. Raised
    while a module is collected (``pytest_generate_tests``), pytest shows a CollectError as
    its message alone, with no traceback of pytest's and pluggy's frames."""


_STASH = pytest.StashKey[MarkerSettings]()


def marker_kwargs(node) -> dict[str, Any]:
    """The keywords of all ``tvmperf`` markers of ``node``, the closest marker winning;
    positional arguments or an unknown keyword are a usage error naming the test."""
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers(MARKER))):  # closest marker wins
        if mark.args:
            raise MarkerError(f"{node.nodeid}: @pytest.mark.{MARKER} takes keywords only, e.g. {MARKER}(time='25%')")
        unknown = sorted(set(mark.kwargs) - set(MARKER_KEYS))
        if unknown:
            raise MarkerError(
                f"{node.nodeid}: unknown @pytest.mark.{MARKER} keyword(s) {', '.join(unknown)}; "
                f"known: {', '.join(MARKER_KEYS)}"
            )
        kwargs.update(mark.kwargs)
    return kwargs


def marker_settings(node) -> MarkerSettings:
    """The :class:`MarkerSettings` of ``node`` (a test item, or the function definition
    being parametrized), parsed on the first call and kept in ``node.stash``."""
    cached = node.stash.get(_STASH, None)
    if cached is None:
        try:
            cached = MarkerSettings.from_kwargs(marker_kwargs(node))
        except ValueError as exc:
            raise MarkerError(f"{node.nodeid}: @pytest.mark.{MARKER}: {exc}") from None
        node.stash[_STASH] = cached
    return cached
