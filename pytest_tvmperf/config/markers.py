"""A test's ``@pytest.mark.tvmperf(...)``, parsed once per node into a :class:`MarkerSettings`.

The marker's keywords are the ``marker_keys`` of the option table (``executors``,
``targets``, one per metric, ``vs_<peer>``). Its thresholds sit between the command line
and the ini (:meth:`Settings.thresholds <pytest_tvmperf.config.options.Settings.thresholds>`);
its executors and targets say which the test supports, and the test runs those of the
run's selection; a ``vs_<peer>`` limit times that peer and gates TVM's time against it.
An error names the test's node id and the bad keyword.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pytest

from pytest_tvmperf.config.options import OPTIONS
from pytest_tvmperf.config.parsing import (
    Limit,
    parse_bool,
    parse_executors,
    parse_targets,
    parse_simulate,
    peer_limits_from_marker,
    thresholds_from_marker,
)

MARKER = "tvmperf"
MARKER_KEYS: tuple[str, ...] = tuple(key for opt in OPTIONS for key in opt.marker_keys)


@dataclass(frozen=True)
class MarkerSettings:
    """What one test's markers say; ``None``: the test does not restrict that choice."""

    executors: tuple[str, ...] | None = None
    targets: tuple[str, ...] | None = None
    thresholds: Mapping[str, Limit] = field(default_factory=dict)
    #: peer -> the most TVM may take relative to it (``vs_torch=1.2``)
    peer_limits: Mapping[str, float] = field(default_factory=dict)
    #: ``simulate="on"|"off"|True|False``: the simulated cost for this test (None: not set)
    simulate: str | None = None
    #: ``timing=False``: correctness and exact metrics only (None: the run decides)
    timing: bool | None = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> "MarkerSettings":
        """Parse the marker's keywords (pure); a bad value raises ValueError naming the keyword."""
        return cls(
            executors=parse_executors(kwargs["executors"]) if "executors" in kwargs else None,
            targets=parse_targets(kwargs["targets"]) if "targets" in kwargs else None,
            thresholds=thresholds_from_marker(kwargs),
            peer_limits=peer_limits_from_marker(kwargs),
            simulate=parse_simulate(kwargs["simulate"]) if "simulate" in kwargs else None,
            timing=_timing(kwargs["timing"]) if "timing" in kwargs else None,
        )


def _timing(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    try:
        return parse_bool(value)
    except ValueError:
        raise ValueError(f"timing={value!r}: expected True or False (or 'on'/'off')") from None


_STASH = pytest.StashKey[MarkerSettings]()


def marker_kwargs(node) -> dict[str, Any]:
    """The keywords of all ``tvmperf`` markers of ``node``, the closest marker winning;
    positional arguments or an unknown keyword are a usage error naming the test."""
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers(MARKER))):  # closest marker wins
        if mark.args:
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.{MARKER} takes keywords only, e.g. {MARKER}(time='25%')")
        unknown = sorted(set(mark.kwargs) - set(MARKER_KEYS))
        if unknown:
            raise pytest.UsageError(f"{node.nodeid}: unknown @pytest.mark.{MARKER} keyword(s) {', '.join(unknown)}; "
                                    f"known: {', '.join(MARKER_KEYS)}")
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
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.{MARKER}: {exc}") from None
        node.stash[_STASH] = cached
    return cached
