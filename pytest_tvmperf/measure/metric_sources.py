"""The plug-in point for per-kernel exact metrics.

A *metric source* adds one or more per-kernel counts to every record (for example
simulated CPU instructions, or a GPU kernel's registers and spill bytes). Each count is
stored per kernel under ``exact.per_kernel[metric][kernel]``, gated on its total like
the built-in exact metrics (threshold syntax ``metric=1%``), and a regression names the
kernels whose counts grew.

A source may also say what its counts depend on besides the code (``setup``: the pinned
target, the cache model, the tool's version). It is stored per metric under
``exact.measured_with``, and a count is compared only with a baseline measured the same
way: otherwise the metric is held (not gated) with a line in the summary.

To add one: describe its metrics with :class:`KernelMetric`, implement
:class:`MetricSource`, and add ``"module:ATTRIBUTE"`` to :data:`SOURCES`. This module is
pure (no TVM): option parsing reads :data:`KERNEL_METRICS`, and a source's module is
imported only when a test is measured.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Protocol

# the per-kernel line of what runs outside the kernels (the FFI call, the VM, allocation): no kernel
from pytest_tvmperf.measure.callgrind import RUNTIME_LINE
from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS, KernelMetric

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.config.per_test import TestSettings


#: Registered sources, as "module:ATTRIBUTE" (imported lazily, in this order); an
#: ATTRIBUTE that is a class is instantiated once per session.
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
        """A one-line reason this source cannot measure here (no valgrind, not a GPU
        target, switched off by the test's settings), or None."""

    def collect(self, prepared: "Prepared", settings: "TestSettings") -> Mapping[str, Mapping[str, int]]:
        """{metric name: {kernel name: count}} for the compiled workload."""

    # optional: def setup(self, prepared, settings) -> str, a one-line description of what
    # the counts depend on besides the code ("llvm -mcpu=haswell, 1 thread; valgrind-3.19.0; ...")


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
    """The counts of ``source``'s metrics stored in ``stored`` (the baseline's exact metrics
    of this very program) when every one of them was measured with ``described``, the
    setup this run would measure with; None when one is missing or measured otherwise."""
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
    """Run each available source; a source that cannot measure here says why.
    ``stored``: the baseline's exact metrics when this build is the baseline's own program
    (check/sources.py ``same_program``) with fixed input shapes; a source that describes
    its setup and would measure the same way takes its counts from there (deterministic
    counts: the same program, inputs and setup give the same count) instead of measuring."""
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
        same = (
            stored_counts(source, setup(prepared, settings), stored)
            if setup is not None and stored is not None
            else None
        )
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
    """An update's exact metrics with the baseline's counts of the ``missing`` metrics
    (those this run could not measure: no valgrind, valgrind killed) put back, while the
    program's other exact metrics are unchanged (the counts are of the same code), as the
    timings of a timing-off run are kept. Returns the metrics and the names kept."""
    if baseline_exact is None:
        return exact, ()
    from dataclasses import replace

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
    the kernels whose count grew, largest growth first (the runtime's line is no kernel:
    see :func:`runtime_change`). ``after`` is keyed like ``before`` (a build's kernels
    under their baseline counterparts' names: result/kernel_match.py); ``label(name)``
    says what a kernel is (None: its name). ``within``: a kernel that grew by at most this
    share of its own count (the metric's relative limit) is noise, not growth, and is not
    listed."""
    if not before or not after:
        return ""
    changes = []
    for name in (set(after) | set(before)) - {RUNTIME_LINE}:
        old, new = before.get(name, 0), after.get(name, 0)
        if new <= old or (within is not None and name in before and new <= old * (1 + within)):
            continue
        shown = (label(name) if label is not None else None) or name
        if name not in before:
            text = f"{shown}: {fmt_count(new)} {unit} (new)"
        else:
            text = (
                f"{shown}: {fmt_count(old)} -> {fmt_count(new)} {unit} ({(new - old) / old * 100 if old else 0:+.1f}%)"
            )
        changes.append((new - old, text))
    changes.sort(key=lambda c: -c[0])
    return ", ".join(text for _, text in changes[:limit])


def runtime_change(before: Mapping[str, int] | None, after: Mapping[str, int] | None, unit: str) -> str:
    """'4.58 k -> 4.76 k instructions (+4.0%)': how the count outside the kernels (the VM
    runtime's own work) moved; "" when it did not, or one side has no such line."""
    if not before or not after or RUNTIME_LINE not in before or RUNTIME_LINE not in after:
        return ""
    old, new = before[RUNTIME_LINE], after[RUNTIME_LINE]
    if old == new:
        return ""
    change = f" ({(new - old) / old * 100:+.1f}%)" if old else ""
    return f"{fmt_count(old)} -> {fmt_count(new)} {unit}{change}"


def fmt_count(value: float) -> str:
    """1820000000 -> '1.82 G', 3100 -> '3.1 k', 12 -> '12'."""
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:g}"


def metric_unit(name: str) -> str:
    return next((m.unit for m in KERNEL_METRICS if m.name == name), "")
