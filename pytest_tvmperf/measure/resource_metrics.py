"""The resource metrics of one build (values/resources.py) in its exact metrics:
``alloc_bytes`` from one instrumented call (builder/vm_alloc.py), ``code_bytes`` from the
compiled module (builder/code_size.py), the peaks from the isolation child
(sandbox/peak.py). One not read here, or left out, is n/a with its reason (never 0)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from pytest_tvmperf.builder.code_size import CodeSize
from pytest_tvmperf.builder.vm_alloc import Allocations
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values import peak_memory
from pytest_tvmperf.values.peak_memory import PeakReading
from pytest_tvmperf.values.resources import ALLOC_BYTES, CODE_BYTES, DEVICE_PEAK_BYTES, PEAK_BYTES, RESOURCE_NAMES

LEFT_OUT = "left out (--tvmperf-resources or the marker's resources=)"
NOT_RUN = "the program does not run on this machine, so its run-time allocations cannot be read"


def with_resources(
    exact: ExactMetrics,
    compiled: Any,
    args: Sequence[Any],
    runs: bool,
    wanted: Sequence[str],
    target: Any = None,
    library: Path | None = None,
    peak: Callable[[], dict] | None = None,
) -> ExactMetrics:
    """``exact`` with the resource metrics of ``compiled`` (``wanted``: those measured;
    ``runs``: it runs here; ``target``: its TargetSpec; ``library``: its export, if any;
    ``peak``: asks the isolation child for one call's peaks, ``Sandbox.peak``'s reply)."""
    resources: dict[str, int] = {}
    parts: dict[str, dict[str, int]] = {}
    reasons: dict[str, str] = {}
    setups = dict(exact.measured_with)
    peaks = _Peaks(peak, compiled, runs, getattr(target, "device_type", "cpu"))
    for name in RESOURCE_NAMES:
        if name not in wanted:
            reasons[name] = LEFT_OUT
            continue
        is_peak = name in (PEAK_BYTES, DEVICE_PEAK_BYTES)
        value = peaks.reading(name) if is_peak else _measure(name, compiled, args, runs, library)
        if isinstance(value, str):
            reasons[name] = value
            continue
        resources[name] = value.total
        if not isinstance(value, PeakReading):  # a peak has no parts
            parts[name] = dict(value.parts if isinstance(value, CodeSize) else value.sites)
        if isinstance(value, CodeSize):
            setups[name] = value.measured_with + (f", target {_target_text(target)}" if target is not None else "")
    return replace(exact, resources=resources, resource_parts=parts, not_measured=reasons, measured_with=setups)


def _measure(
    name: str, compiled: Any, args: Sequence[Any], runs: bool, library: Path | None
) -> Allocations | CodeSize | str:
    if name == ALLOC_BYTES:
        if not runs:
            return NOT_RUN
        method = getattr(compiled, "executed_allocations", None)
        return method(args) if method is not None else "this executor cannot read its run-time allocations"
    assert name == CODE_BYTES
    method = getattr(compiled, "code_size", None)
    try:
        return method(library) if method is not None else "this executor has no compiled module to measure"
    except Exception as exc:  # a module TVM cannot write: n/a, never a failed test
        return f"the compiled module could not be measured ({type(exc).__name__}: {exc})"


class _Peaks:
    """The isolation child's peaks of one call, asked for once for both metrics."""

    def __init__(self, ask: Callable[[], dict] | None, compiled: Any, runs: bool, device_type: str) -> None:
        self.ask, self.compiled, self.runs, self.device_type = ask, compiled, runs, device_type
        self._reply: dict | None = None

    def reading(self, name: str) -> PeakReading | str:
        if name == DEVICE_PEAK_BYTES and self.device_type == "cpu":
            return peak_memory.ON_HOST
        if not self.runs:
            return peak_memory.NOT_RUN
        if getattr(self.compiled, "is_remote", False):
            return peak_memory.REMOTE
        if self.ask is None:
            return peak_memory.NOT_EXPORTED
        if self._reply is None:
            self._reply = self.ask()
        reply = self._reply
        if "na" in reply and "host" not in reply:  # the child could not run it at all
            return PeakReading.from_reply(reply)
        return PeakReading.from_reply(reply.get("host" if name == PEAK_BYTES else "device"))


def _target_text(target: Any) -> str:
    config = getattr(target, "config", None)
    return str(target) if config is None else json.dumps(_plain(config), sort_keys=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
