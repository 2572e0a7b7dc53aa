"""Exact metrics: the same on every machine for the same TVM, target and workload (pure:
the value and its JSON; builder/vm_metrics.py counts them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS


@dataclass(frozen=True)
class ExactMetrics:
    """Static and executed counts; ``None`` means "n/a" for this executor (never 0).

    instructions: static VM instructions per function (bytecode mode)
    by_callee: static instructions by callee/opcode over all functions
    calls: calls executed at run time by callee (``vm.set_instrument``)
    kernels: compiled TIR kernels
    storage_bytes: storage statically planned by ``vm.builtin.alloc_storage``
    per_kernel: the metric sources' counts, {metric: {kernel: count}}
    (``measure/kernel_metrics.py``); a metric's gated number is its total
    measured_with: {metric: what its counts depend on besides the code} (the pinned
    target, the tool's version); counts are compared only between equal setups
    """

    instructions: Mapping[str, int] | None = None
    by_callee: Mapping[str, int] | None = None
    calls: Mapping[str, int] | None = None
    kernels: int | None = None
    storage_bytes: int | None = None
    per_kernel: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    measured_with: Mapping[str, str] = field(default_factory=dict)

    def scalar(self, metric: str) -> int | None:
        """The gated number for ``metric`` (totals of the per-function/callee maps)."""
        if metric == "instructions":
            return None if self.instructions is None else sum(self.instructions.values())
        if metric == "calls":
            return None if self.calls is None else sum(self.calls.values())
        if metric == "kernels":
            return self.kernels
        if metric == "storage_bytes":
            return self.storage_bytes
        if metric in self.per_kernel:
            return sum(self.per_kernel[metric].values())
        if any(m.name == metric for m in KERNEL_METRICS):
            return None  # a metric source's metric it did not measure here
        raise KeyError(metric)

    def as_json(self) -> dict[str, Any]:
        def plain(m):
            return None if m is None else {k: int(v) for k, v in sorted(m.items())}

        out: dict[str, Any] = {
            "instructions": plain(self.instructions),
            "by_callee": plain(self.by_callee),
            "calls": plain(self.calls),
            "kernels": self.kernels,
            "storage_bytes": self.storage_bytes,
        }
        if self.per_kernel:  # written only when a metric source measured something
            out["per_kernel"] = {m: plain(counts) for m, counts in sorted(self.per_kernel.items())}
        if self.measured_with:
            out["measured_with"] = dict(sorted(self.measured_with.items()))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ExactMetrics":
        fields = {k: data.get(k) for k in ("instructions", "by_callee", "calls", "kernels", "storage_bytes")}
        return cls(**fields, per_kernel=dict(data.get("per_kernel") or {}),
                   measured_with=dict(data.get("measured_with") or {}))
