"""Exact metrics counted (values/exact_metrics.py): the same on every machine for the same
TVM, target and workload. ``parse_bytecode`` is pure; the others walk a lowered IRModule.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

_FUNC_HEADER = re.compile(r"^@(?P<name>\S+):\s*$")
_INSTR = re.compile(r"^\s+(?P<op>call|ret|goto|If)\b\s*(?P<rest>.*)$")


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
        return dict(Counter(op for ops in self.functions.values() for op in ops))


def parse_bytecode(text: str) -> Bytecode:
    """Parse ``VMExecutable.as_text()``: ``@name:`` opens a function (``@name packed_func;``
    declares an external); a call counts under its callee, other instructions their opcode."""
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
            op, rest = instr.group("op"), instr.group("rest").split()
            current.append((rest[0] if rest else "call") if op == "call" else op)
    return Bytecode({k: tuple(v) for k, v in functions.items()}, {k: tuple(v) for k, v in listings.items()})


def planned_storage(lowered) -> int:
    """Bytes of the ``alloc_storage`` calls of a constant size in a lowered Relax module."""
    import tvm
    from tvm import relax

    total = 0
    allocs = ("relax.vm.alloc_storage", "relax.memory.alloc_storage")

    def visit(expr) -> None:
        nonlocal total
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.name in allocs:
            size = expr.args[0]
            if isinstance(size, relax.ShapeExpr) and all(isinstance(v, tvm.tirx.IntImm) for v in size.values):
                count = math.prod(int(v) for v in size.values)
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
