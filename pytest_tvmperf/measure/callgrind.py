"""Callgrind's output, read: per-function costs, the estimated cycles, and the per-kernel
lines the gate stores. Pure (text in, numbers out); ``simulate.py`` runs valgrind.

The cache model is pinned, so every machine simulates the same caches: 32 KiB 8-way L1
instruction and data caches, an 8 MiB 16-way last level, 64-byte lines. The estimated
cycles are the usual first-order formula (an instruction 1 cycle, an L1 miss 10 more, a
last-level miss 100 more)::

    est_cycles = Ir + 10 * (I1mr + D1mr + D1mw) + 100 * (ILmr + DLmr + DLmw)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping

#: valgrind options of the pinned cache model (``--cache-sim=yes``)
CACHE_MODEL: tuple[str, ...] = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
EVENTS: tuple[str, ...] = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
#: the per-kernel line of what the kernels call out to: VM builtins, FFI calls, allocator, launcher
RUNTIME_LINE = "[runtime]"


def est_cycles(cost: Mapping[str, int]) -> int:
    """Estimated cycles of one cost line (see the module docstring)."""
    g = cost.get
    return (
        g("Ir", 0)
        + 10 * (g("I1mr", 0) + g("D1mr", 0) + g("D1mw", 0))
        + 100 * (g("ILmr", 0) + g("DLmr", 0) + g("DLmw", 0))
    )


@dataclass(frozen=True)
class FunctionCost:
    """The self cost of one function (its own instructions, not its callees')."""

    obj: str
    name: str
    events: Mapping[str, int]


@dataclass(frozen=True)
class CallCost:
    """The inclusive cost of the calls from one function to another."""

    caller_obj: str
    caller: str
    callee_obj: str
    callee: str
    events: Mapping[str, int]


@dataclass(frozen=True)
class Profile:
    """One callgrind dump: self cost per function, inclusive cost per call edge, totals."""

    functions: tuple[FunctionCost, ...]
    calls: tuple[CallCost, ...] = ()
    totals: Mapping[str, int] = field(default_factory=dict)


def parse(lines: Iterable[str]) -> Profile:
    """Read a callgrind dump (``callgrind.out`` format, compressed names or not)."""
    events: list[str] = list(EVENTS)
    names: dict[tuple[str, str], str] = {}  # (kind, id) -> name, for "(3) name" compression
    costs: dict[tuple[str, str], list[int]] = {}
    calls: dict[tuple[str, str, str, str], list[int]] = {}
    obj = fn = callee_obj = callee = ""
    after_calls = False  # the cost line after "calls=" is the call's inclusive cost
    totals: list[int] | None = None

    def name(kind: str, value: str) -> str:
        if value.startswith("("):
            ident, _, rest = value.partition(")")
            key = (kind, ident[1:])
            if rest.strip():
                names[key] = rest.strip()
            return names.get(key, value)
        return value

    for line in lines:
        line = line.rstrip("\n")
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            values = [int(v) for v in line.split()[1:]]
            if after_calls:
                after_calls = False
                row = calls.setdefault((obj, fn, callee_obj or obj, callee), [0] * len(events))
                callee_obj = ""  # cob= is given per call; without one the callee is in the caller's object
            else:
                row = costs.setdefault((obj, fn), [0] * len(events))
            for i, v in enumerate(values[: len(events)]):
                row[i] += v
            continue
        key, _, value = line.partition("=")
        if key == "ob":
            obj = name("ob", value)
        elif key == "fn":
            fn = name("fn", value)
        elif key == "cob":
            callee_obj = name("ob", value)
        elif key in ("cfi", "cfl", "fl", "fi", "fe"):
            name("fl", value)
        elif key == "cfn":
            callee = name("fn", value)
        elif key == "calls":
            after_calls = True
        elif line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("totals:", "summary:")):
            totals = [int(v) for v in line.split()[1:]]
    functions = tuple(FunctionCost(o, f, dict(zip(events, v))) for (o, f), v in sorted(costs.items()))
    if totals is None:
        totals = [sum(c.events.get(e, 0) for c in functions) for e in events]
    edges = tuple(CallCost(*k, dict(zip(events, v))) for k, v in sorted(calls.items()))
    return Profile(functions, edges, dict(zip(events, totals)))


def kernel_of(function: str) -> str | None:
    """The kernel a function of the model's library belongs to (``__tvm_ffi_fused_add``,
    ``fused_add_compute_`` and its lambdas: ``fused_add``); None for ``__vmtir__`` and glue."""
    name = function.removeprefix("__tvm_ffi_")
    if name.startswith(("__vmtir__", "__tvm_")):
        return None
    cut = name.find("_compute_")
    return name[:cut] if cut > 0 else name


def _is_tvm(obj: str) -> bool:
    """TVM's own runtime libraries (libtvm_ffi, libtvm_runtime)."""
    return os.path.basename(obj).startswith(("libtvm_ffi", "libtvm_runtime", "libtvm."))


def per_kernel(profile: Profile, library: str) -> dict[str, dict[str, int]]:
    """{"cpu_instructions": {kernel: Ir}, "est_cycles": {kernel: cycles}} for one dump of
    one call into ``library`` (the model's exported .so). A kernel's line is its own code
    in ``library`` (``__tvm_ffi_k``, ``k_compute_``, its parallel lambdas) and what that
    code calls outside TVM (libm, memset). :data:`RUNTIME_LINE` is TVM's runtime libraries
    (the FFI call, the VM and its builtins, the parallel launcher, workspace allocation) and
    the library's non-kernel code (``__vmtir__``). Left out: the interpreter, and the C
    library calls made by it or by TVM's runtime (malloc, locks: their paths depend on the
    session's heap, not on the model)."""
    library = os.path.realpath(library)

    def in_library(obj: str) -> bool:
        return bool(obj) and os.path.realpath(obj) == library

    lines: dict[str, dict[str, int]] = {}

    def add(line: str, events: Mapping[str, int]) -> None:
        total = lines.setdefault(line, {e: 0 for e in EVENTS})
        for e in EVENTS:
            total[e] += events.get(e, 0)

    for cost in profile.functions:
        if in_library(cost.obj):
            add(kernel_of(cost.name) or RUNTIME_LINE, cost.events)
        elif _is_tvm(cost.obj):
            add(RUNTIME_LINE, cost.events)
    for call in profile.calls:  # a kernel's calls out of TVM (libm, libc's memset)
        if in_library(call.caller_obj) and not in_library(call.callee_obj) and not _is_tvm(call.callee_obj):
            add(kernel_of(call.caller) or RUNTIME_LINE, call.events)
    lines.setdefault(RUNTIME_LINE, {e: 0 for e in EVENTS})
    return {
        "cpu_instructions": {k: v["Ir"] for k, v in lines.items()},
        "est_cycles": {k: est_cycles(v) for k, v in lines.items()},
    }
