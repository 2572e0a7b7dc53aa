"""How much a metric may grow: a :class:`Limit` per metric (``time=25%``,
``instructions=0``), the default thresholds, and the most TVM may take against a peer
framework (``vs_torch=1.2``); pure parsers, as on the command line, in the ini and in a
test's marker."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from pytest_tvmperf.config.parsing import DEFAULT_TIME_THRESHOLD, EXACT_METRICS, METRICS, PEER_MARKER_KEYS, TIME_METRIC
from pytest_tvmperf.config.parsing import canonical_metric
from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS
from pytest_tvmperf.values.resources import COMPILE_S, RESOURCE_ALIASES, SELECTABLE_RESOURCES


@dataclass(frozen=True)
class Limit:
    """How much a metric may grow before it counts as a regression: ``relative``, a fraction of
    the baseline (0.15 for "15%"), or ``absolute``, an amount in the metric's unit (both ``None``:
    no growth is allowed); ``enabled=False`` switches the gate off for that metric ("off")."""

    relative: float | None = None
    absolute: float | None = None
    enabled: bool = True

    def allowed_max(self, baseline: float) -> float:
        if not self.enabled:
            return float("inf")
        if self.relative is not None:
            return baseline * (1.0 + self.relative)
        if self.absolute is not None:
            return baseline + self.absolute
        return baseline

    def describe(self) -> str:
        if not self.enabled:
            return "off"
        if self.relative is not None:
            return f"+{self.relative * 100:g}%"
        if self.absolute is not None:
            return f"+{self.absolute:g}"
        return "no increase"


_ALIASES = ", ".join(f"{alias} is {name}" for alias, name in RESOURCE_ALIASES.items())
_RESOURCE_DEFAULTS = ", ".join(f"{m.name}={m.default_limit}" for m in SELECTABLE_RESOURCES)
THRESHOLD_HELP = (
    f"comma-separated METRIC=LIMIT, e.g. 'time=25%,instructions=0'. Metrics: {', '.join(METRICS)}. time and "
    "compile_s take a percentage ('25%') or a ratio ('1.25x'); exact metrics take an allowed increase ('2') or a "
    f"percentage ('5%'); 'off' stops gating that metric. {_ALIASES} (defaults {_RESOURCE_DEFAULTS})."
)


def _as_written(value: Any) -> tuple[str, Any]:
    """``value`` as text, and as an error message shows it: a marker's ``10**5000`` is
    no limit, and Python refuses to turn an int of over 4300 digits into text (its own
    ValueError would stand in for the threshold's hint), so it reads as ``?`` and shows as
    ``<a whole number of N digits>``."""
    try:
        return str(value).strip().lower(), value
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        digits = int(value.bit_length() * 0.30103) + 1 if isinstance(value, int) else 0
        return "?", _Shown(f"<a whole number of about {digits} digits>" if digits else "<a value with no text form>")


class _Shown(str):
    """Text that an error message shows as it is (its ``repr`` is itself)."""

    def __repr__(self) -> str:
        return str(self)


def parse_limit(metric: str, text: str) -> Limit:
    """Parse one LIMIT for ``metric``; raise ValueError naming what is wrong."""
    metric = canonical_metric(metric)
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} in threshold; known metrics: {', '.join(METRICS)}")
    value, text = _as_written(text)
    if value == "off":
        return Limit(enabled=False)
    try:
        if not math.isfinite(float(value.rstrip("%x") or "nan")):
            raise ValueError  # 1e400 is inf: no limit is written so
        if value.endswith("%"):
            number = float(value[:-1])
            if number < 0:
                raise ValueError
            return Limit(relative=number / 100.0)
        if value.endswith("x"):
            number = float(value[:-1])
            if number < 1:
                raise ValueError
            return Limit(relative=number - 1.0)
        if metric in (TIME_METRIC, COMPILE_S):  # ratios of times: a bare number means nothing
            raise ValueError
        number = float(value)
        if number < 0:
            raise ValueError
        return Limit(absolute=number)
    except ValueError:
        if metric in (TIME_METRIC, COMPILE_S):
            hint = f"a percentage or a ratio, e.g. {metric}=25% or {metric}=1.25x"
        else:
            hint = f"an allowed increase or a percentage, e.g. {metric}=0 (no increase), {metric}=2 or {metric}=5%"
        raise ValueError(f"bad threshold {metric}={text!r}: write {hint}; or {metric}=off to stop gating it") from None


def parse_thresholds(text: str) -> dict[str, Limit]:
    """Parse 'time=25%,instructions=0' into {metric: Limit}."""
    result: dict[str, Limit] = {}
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"bad threshold {part!r}: expected METRIC=LIMIT, e.g. 'time=25%'")
        metric, _, value = part.partition("=")
        result[canonical_metric(metric.strip())] = parse_limit(metric.strip(), value)
    return result


DEFAULT_THRESHOLDS: dict[str, Limit] = {
    TIME_METRIC: parse_limit(TIME_METRIC, DEFAULT_TIME_THRESHOLD),
    **{m: Limit() for m in EXACT_METRICS},
    **{m.name: parse_limit(m.name, m.default_limit) for m in KERNEL_METRICS},
    # "0": no increase, as for the exact metrics above
    **{
        m.name: Limit() if m.default_limit == "0" else parse_limit(m.name, m.default_limit)
        for m in SELECTABLE_RESOURCES
    },
}


def thresholds_from_marker(kwargs: Mapping[str, Any]) -> dict[str, Limit]:
    """Threshold keywords of ``@pytest.mark.tvmperf(time="25%", instructions=2)``."""
    return {canonical_metric(k): parse_limit(k, v) for k, v in kwargs.items() if k in METRICS or k in RESOURCE_ALIASES}


def parse_peer_limit(key: str, value: Any) -> float:
    """``vs_torch=1.2`` (or '1.2x'): TVM may take at most 1.2 times the peer's time."""
    text, value = _as_written(value)
    text = text.removesuffix("x")
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if not (number > 0 and number < float("inf")):
        raise ValueError(
            f"bad {key}={value!r}: write the most TVM may take relative to the peer, e.g. {key}=1.2 (or '1.2x')"
        )
    return number


def peer_limits_from_marker(kwargs: Mapping[str, Any]) -> dict[str, float]:
    """``@pytest.mark.tvmperf(vs_torch=1.2)`` -> {"torch": 1.2}."""
    return {PEER_MARKER_KEYS[k]: parse_peer_limit(k, v) for k, v in kwargs.items() if k in PEER_MARKER_KEYS}
