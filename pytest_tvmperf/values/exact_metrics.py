"""Exact metrics: the same on every machine for the same TVM, target and workload (pure:
the value and its JSON; builder/vm_metrics.py counts them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS
from pytest_tvmperf.values.resources import RESOURCE_NAMES


@dataclass(frozen=True)
class ExactMetrics:
    """Static and executed counts; ``None`` means "n/a" for this executor (never 0).

    instructions: static VM instructions per function (bytecode mode); by_callee: static
    instructions by callee/opcode; calls: calls executed at run time by callee
    (``vm.set_instrument``); kernels: compiled TIR kernels; storage_bytes: storage planned by
    ``vm.builtin.alloc_storage``; per_kernel: the metric sources' {metric: {kernel: count}}
    (its total is gated); measured_with: {metric: what its counts depend on besides the
    code}, compared only between equal setups; resources: {resource metric: total};
    resource_parts: {metric: {site or kernel: bytes}}; not_measured: {resource metric: why
    n/a}; predates: resource metrics a stored record has no key for (not gated against it).
    """

    instructions: Mapping[str, int] | None = None
    by_callee: Mapping[str, int] | None = None
    calls: Mapping[str, int] | None = None
    kernels: int | None = None
    storage_bytes: int | None = None
    per_kernel: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    measured_with: Mapping[str, str] = field(default_factory=dict)
    resources: Mapping[str, int] = field(default_factory=dict)
    resource_parts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    not_measured: Mapping[str, str] = field(default_factory=dict)
    predates: frozenset[str] = field(default=frozenset(), compare=False)

    def without_resources(self) -> "ExactMetrics":
        """These metrics less the resource metrics: what says the code is the same (a
        record's timings are kept across updates while it is; code_bytes also moves with
        the target's CPU)."""
        return ExactMetrics(
            instructions=self.instructions,
            by_callee=self.by_callee,
            calls=self.calls,
            kernels=self.kernels,
            storage_bytes=self.storage_bytes,
            per_kernel=self.per_kernel,
            measured_with={k: v for k, v in self.measured_with.items() if k not in RESOURCE_NAMES},
        )

    def scalar(self, metric: str) -> int | None:
        """The gated number for ``metric`` (totals of the per-function/callee maps)."""
        if metric in ("instructions", "calls"):
            counts = getattr(self, metric)
            return None if counts is None else sum(counts.values())
        if metric in ("kernels", "storage_bytes"):
            return getattr(self, metric)
        if metric in RESOURCE_NAMES:
            return self.resources.get(metric)
        if metric in self.per_kernel:
            return sum(self.per_kernel[metric].values())
        if any(m.name == metric for m in KERNEL_METRICS):
            return None  # a metric source's metric it did not measure here
        raise KeyError(metric)

    def as_json(self) -> dict[str, Any]:
        def plain(m):
            return None if m is None else {k: int(v) for k, v in sorted(m.items())}

        out: dict[str, Any] = {k: plain(getattr(self, k)) for k in ("instructions", "by_callee", "calls")}
        out.update(kernels=self.kernels, storage_bytes=self.storage_bytes)
        if self.per_kernel:  # written only when a metric source measured something
            out["per_kernel"] = {m: plain(counts) for m, counts in sorted(self.per_kernel.items())}
        if self.measured_with:
            out["measured_with"] = dict(sorted(self.measured_with.items()))
        for name in RESOURCE_NAMES:  # null: n/a, with its reason in not_measured
            if name in self.resources or name in self.not_measured:
                out[name] = self.resources.get(name)
        if self.resource_parts:
            out["resource_parts"] = {m: plain(parts) for m, parts in sorted(self.resource_parts.items())}
        if self.not_measured:
            out["not_measured"] = dict(sorted(self.not_measured.items()))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ExactMetrics":
        fields = {k: data.get(k) for k in ("instructions", "by_callee", "calls", "kernels", "storage_bytes")}
        resources = {m: int(data[m]) for m in RESOURCE_NAMES if data.get(m) is not None}
        return cls(
            **fields,
            per_kernel=dict(data.get("per_kernel") or {}),
            measured_with=dict(data.get("measured_with") or {}),
            resources=resources,
            resource_parts={m: dict(p) for m, p in (data.get("resource_parts") or {}).items()},
            not_measured=dict(data.get("not_measured") or {}),
            predates=frozenset(m for m in RESOURCE_NAMES if m not in data),
        )
