"""Exact metrics: the same on every machine for the same TVM, target and workload.

``parse_bytecode`` is pure (text in, counts out); ``planned_storage`` and
``kernel_count`` walk a lowered IRModule.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from pytest_tvmperf.measure.kernel_metrics import KERNEL_METRICS

_FUNC_HEADER = re.compile(r"^@(?P<name>\S+):\s*$")
_INSTR = re.compile(r"^\s+(?P<op>call|ret|goto|If)\b\s*(?P<rest>.*)$")


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


@dataclass(frozen=True)
class Bytecode:
    """Instructions of each VM function parsed from ``executable.as_text()``."""

    functions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    listings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def texts(self) -> dict[str, str]:
        """Each function's instructions as text, one per line (for bytecode diffs)."""
        return {name: "\n".join(lines) for name, lines in self.listings.items()}

    def counts(self) -> dict[str, int]:
        return {name: len(ops) for name, ops in self.functions.items()}

    def by_callee(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for ops in self.functions.values():
            total.update(ops)
        return dict(total)


def parse_bytecode(text: str) -> Bytecode:
    """Parse ``VMExecutable.as_text()``: ``@name:`` opens a function, then lines
    ``call <callee> ...``, ``ret``, ``goto`` or ``If``; ``@name packed_func;`` lines
    declare externals and hold no code. A call counts under its callee's name,
    other instructions under their opcode."""
    functions: dict[str, list[str]] = {}
    listings: dict[str, list[str]] = {}
    current: list[str] | None = None
    listing: list[str] = []
    for line in text.splitlines():
        header = _FUNC_HEADER.match(line)
        if header:
            current = functions.setdefault(header.group("name"), [])
            listing = listings.setdefault(header.group("name"), [])
            continue
        if line.startswith("@") or not line.strip():
            current = None if line.startswith("@") else current
            continue
        instr = _INSTR.match(line)
        if instr and current is not None:
            listing.append(" ".join(line.split()))
            op = instr.group("op")
            if op == "call":
                rest = instr.group("rest").split()
                current.append(rest[0] if rest else "call")
            else:
                current.append(op)
    return Bytecode({k: tuple(v) for k, v in functions.items()}, {k: tuple(v) for k, v in listings.items()})


def planned_storage(lowered) -> int:
    """Bytes of ``alloc_storage`` calls with a constant size in a lowered Relax module
    (dynamically sized allocations have no static size and are not counted)."""
    import tvm
    from tvm import relax

    total = 0

    def visit(expr) -> None:
        nonlocal total
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.name in (
            "relax.vm.alloc_storage",
            "relax.memory.alloc_storage",
        ):
            size = expr.args[0]
            if isinstance(size, relax.ShapeExpr) and all(isinstance(v, tvm.tirx.IntImm) for v in size.values):
                count = 1
                for v in size.values:
                    count *= int(v)
                dtype = getattr(expr.args[2], "value", "uint8")
                total += count * max(tvm.runtime.DataType(str(dtype)).bits // 8, 1)

    for func in lowered.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
    return total


def kernel_count(lowered) -> int:
    """TIR PrimFuncs in a lowered module: the kernels the executable will call."""
    from tvm import tirx

    return sum(1 for f in lowered.functions.values() if isinstance(f, tirx.PrimFunc))
