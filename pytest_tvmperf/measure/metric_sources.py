"""The plug-in point for per-kernel exact metrics.

A *metric source* adds per-kernel counts to every record (simulated CPU instructions, a
GPU kernel's registers and spills), stored under ``exact.per_kernel[metric][kernel]`` and
gated on their total (``metric=1%``); a regression names the kernels whose counts grew.
What counts depend on besides the code (``setup``: pinned target, cache model, tool
version) is stored under ``exact.measured_with``: a count is compared only with a
baseline measured the same way, else the metric is held with a summary line.

To add one: describe its metrics with :class:`KernelMetric`, implement
:class:`MetricSource`, add ``"module:ATTRIBUTE"`` to :data:`SOURCES`. Pure (no TVM: option
parsing reads :data:`KERNEL_METRICS`); a source's module is imported when a test is measured.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping, Protocol

from pytest_tvmperf.measure.callgrind import RUNTIME_LINE
from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS, KernelMetric

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.config.per_test import TestSettings


#: Registered sources, "module:ATTRIBUTE" (imported lazily, in order; a class is made once a session)
SOURCES: tuple[str, ...] = (
    "pytest_tvmperf.measure.simulate:SimulatedCost",
    "pytest_tvmperf.measure.gpu_resources:GPU_RESOURCES",
)


class SourceFailed(Exception):
    """A source could not measure this test (its tool failed): the reason goes to the
    run summary, and the test is neither failed nor gated on that source's metrics."""


class SourceDied(SourceFailed):
    """The source's tool died while measuring this test (valgrind killed): in a gate, the
    test's metrics of that source fail with the reason where its baseline has them."""


class MetricSource(Protocol):
    """Adds per-kernel counts to a test's exact metrics."""

    #: short name for messages ("simulated cost", "GPU resources")
    name: str
    metrics: tuple[KernelMetric, ...]

    def unavailable(self, prepared: "Prepared", settings: "TestSettings") -> str | None:
        """Why this source cannot measure here, in one line (no valgrind, switched off), or None."""

    def collect(self, prepared: "Prepared", settings: "TestSettings") -> Mapping[str, Mapping[str, int]]:
        """{metric name: {kernel name: count}} for the compiled workload."""

    # optional: setup(prepared, settings) -> str, what the counts depend on besides the code


@dataclass(frozen=True)
class Collected:
    """What the sources measured for one test, and why the others did not."""

    per_kernel: Mapping[str, Mapping[str, int]]
    skipped: tuple[str, ...] = ()  # "simulated cost: valgrind is not installed"
    #: {metric: the source's setup} for the metrics of sources that describe one
    measured_with: Mapping[str, str] = field(default_factory=dict)
    #: the metrics of the sources that did not measure this test (unavailable, switched off, failed)
    missing: tuple[str, ...] = ()
    #: {metric: why} for the metrics of a source whose tool died while measuring this test
    died: Mapping[str, str] = field(default_factory=dict)
    #: the sources whose counts were the baseline's own (the same program, measured the same way)
    reused: tuple[str, ...] = ()


#: the summary line of a run that took the counts of unchanged programs from their baselines
REUSED_LINE = (
    "{sources}: counts of unchanged programs taken from their baselines (the same program, with "
    "fixed input shapes, measured the same way: a new count would be the same; "
    "--tvmperf-same-program=time counts them again)"
)


def stored_counts(source: "MetricSource", described: str, stored) -> dict[str, Mapping[str, int]] | None:
    """The counts of ``source``'s metrics in ``stored`` (the baseline's exact metrics of this
    very program) when all were measured with ``described``, the setup of this run; else None."""
    if stored is None or not described:
        return None
    names = [m.name for m in source.metrics]
    if not all(stored.per_kernel.get(n) and stored.measured_with.get(n) == described for n in names):
        return None
    return {n: stored.per_kernel[n] for n in names}


def load_sources(names: tuple[str, ...] | None = None) -> tuple[MetricSource, ...]:
    """Import the registered sources ("module:ATTRIBUTE"; default :data:`SOURCES`)."""
    sources = []
    for spec in SOURCES if names is None else names:
        module, _, attr = spec.partition(":")
        source = getattr(importlib.import_module(module), attr)
        sources.append(source() if isinstance(source, type) else source)
    return tuple(sources)


def collect(
    sources: tuple[MetricSource, ...], prepared: "Prepared", settings: "TestSettings", stored=None
) -> Collected:
    """Run each available source; one that cannot measure here says why. ``stored``: the
    baseline's exact metrics when this build is its very program with fixed input shapes: a
    source of the same setup takes its (deterministic) counts from there."""
    per_kernel: dict[str, dict[str, int]] = {}
    measured_with: dict[str, str] = {}
    skipped: list[str] = []
    missing: list[str] = []
    died: dict[str, str] = {}
    reused: list[str] = []
    for source in sources:
        reason = source.unavailable(prepared, settings)
        if reason:
            skipped.append(f"{source.name}: {reason}")
            missing.extend(m.name for m in source.metrics)
            continue
        setup = getattr(source, "setup", None)
        same = stored_counts(source, setup(prepared, settings), stored) if setup and stored is not None else None
        if same is not None:
            reused.append(source.name)
            for metric, counts in same.items():
                per_kernel[metric] = {str(k): int(v) for k, v in sorted(counts.items())}
                measured_with[metric] = stored.measured_with[metric]
            continue
        try:
            measured = source.collect(prepared, settings)
        except SourceFailed as exc:
            skipped.append(f"{source.name}: {exc}")
            missing.extend(m.name for m in source.metrics)
            if isinstance(exc, SourceDied):
                died.update({m.name: f"{source.name}: {exc}" for m in source.metrics})
            continue
        described = setup(prepared, settings) if setup is not None and measured else ""
        for metric, counts in measured.items():
            per_kernel[metric] = {str(k): int(v) for k, v in sorted(counts.items())}
            if described:
                measured_with[metric] = described
    return Collected(per_kernel, tuple(skipped), measured_with, tuple(missing), died, tuple(reused))


#: the summary line of an update that kept stored counts it could not measure
KEPT_LINE = (
    "--tvmperf-update kept the stored {metrics} counts of the entries this run could not measure "
    "(their other exact metrics unchanged; as a timing-off run keeps the timings)"
)


def keep_unmeasured(exact, baseline_exact, missing) -> tuple[object, tuple[str, ...]]:
    """An update's exact metrics with the baseline's counts of the ``missing`` metrics (no
    valgrind, valgrind killed) put back while its other exact metrics are unchanged (the same
    code), as a timing-off run keeps the timings; and the names kept."""
    if baseline_exact is None:
        return exact, ()
    kept = tuple(m for m in missing if m in baseline_exact.per_kernel and m not in exact.per_kernel)
    if not kept:
        return exact, ()
    bare = lambda e: replace(e.without_resources(), per_kernel={}, measured_with={})  # noqa: E731
    if bare(exact) != bare(baseline_exact):
        return exact, ()
    per_kernel = {**exact.per_kernel, **{m: baseline_exact.per_kernel[m] for m in kept}}
    measured_with = {
        **exact.measured_with,
        **{m: baseline_exact.measured_with[m] for m in kept if m in baseline_exact.measured_with},
    }
    return replace(exact, per_kernel=per_kernel, measured_with=measured_with), kept


def grown_kernels(
    before: Mapping[str, int] | None,
    after: Mapping[str, int] | None,
    unit: str,
    limit: int = 6,
    label=None,
    within: float | None = None,
) -> str:
    """'fused_conv2d_add_relu: 1.82 G -> 2.01 G instructions (+10.4%), new_kernel: 3.1 M (new)',
    the kernels whose count grew, largest growth first (not the runtime's line:
    :func:`runtime_change`). ``after`` is keyed like ``before`` (result/kernel_match.py);
    ``label(name)`` says what a kernel is (None: its name). ``within``: growth up to this
    share of a kernel's own count (the metric's relative limit) is noise, not listed."""
    if not before or not after:
        return ""
    changes = []
    for name in (set(after) | set(before)) - {RUNTIME_LINE}:
        old, new = before.get(name, 0), after.get(name, 0)
        if new <= old or (within is not None and name in before and new <= old * (1 + within)):
            continue
        shown = (label(name) if label is not None else None) or name
        grew = f"{fmt_count(old)} -> {fmt_count(new)} {unit}" + (f" ({fmt_growth(old, new)})" if old else "")
        changes.append((new - old, f"{shown}: {grew}" if name in before else f"{shown}: {fmt_count(new)} {unit} (new)"))
    changes.sort(key=lambda c: -c[0])
    return ", ".join(text for _, text in changes[:limit])


def runtime_change(before: Mapping[str, int] | None, after: Mapping[str, int] | None, unit: str) -> str:
    """'4.58 k -> 4.76 k instructions (+4.0%)': how the count outside the kernels moved, or ""."""
    if not before or not after or RUNTIME_LINE not in before or RUNTIME_LINE not in after:
        return ""
    old, new = before[RUNTIME_LINE], after[RUNTIME_LINE]
    if old == new:
        return ""
    change = f" ({fmt_growth(old, new)})" if old else ""
    return f"{fmt_count(old)} -> {fmt_count(new)} {unit}{change}"


#: from this many times its old value on, a change reads as a factor (``3525x``), not a percentage
FACTOR_FROM = 10.0


def fmt_growth(old: float, new: float) -> str:
    """``+10.4%``, ``-3.0%``; ``3.53e+03x`` reads ``3525x`` (issue 61: ``+352442.6%`` said nothing a
    reader could take in). ``old`` must be positive."""
    ratio = new / old
    if ratio >= FACTOR_FROM:
        return f"{ratio:.0f}x"
    return f"{(ratio - 1) * 100:+.1f}%"


def fmt_count(value: float) -> str:
    """1820000000 -> '1.82 G', 3100 -> '3.1 k', 12 -> '12'."""
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:g}"


def metric_unit(name: str) -> str:
    return next((m.unit for m in KERNEL_METRICS if m.name == name), "")
