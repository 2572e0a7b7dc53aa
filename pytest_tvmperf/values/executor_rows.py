"""The executors, declared once (pure: no TVM): each one row, with what it runs and what the
plugin measures of it. Everything that asks "is this the PrimFunc executor?" or "which
executors does the simulated cost count?" reads these rows instead of comparing names.

To add an executor: its row here, and its class in builder/ (executor_choice.get_executor).
"""

from __future__ import annotations

from dataclasses import dataclass

#: the program kinds a workload can be: one TIR PrimFunc, or a Relax IRModule
PRIM_KIND = "prim"
RELAX_KIND = "relax"


@dataclass(frozen=True)
class ExecutorRow:
    #: the name in test ids, options and baseline entries
    name: str
    #: the kind of program it runs (:data:`PRIM_KIND` or :data:`RELAX_KIND`)
    kind: str
    #: a Relax VM runs it (per-callee times, VM instructions, allocations are read from it)
    vm: bool
    #: the simulated cost (valgrind) counts it
    simulated: bool
    #: one line for docs and messages
    runs: str


EXECUTOR_ROWS: tuple[ExecutorRow, ...] = (
    ExecutorRow("vm-bytecode", RELAX_KIND, True, True, "the Relax VM, interpreting bytecode"),
    ExecutorRow("vm-compiled", RELAX_KIND, True, True, "the Relax VM, its program compiled to native code"),
    ExecutorRow("prim", PRIM_KIND, False, True, "one PrimFunc called directly; the harness allocates its outputs"),
    ExecutorRow("vm-cudagraph", RELAX_KIND, True, False, "the Relax VM with CUDA graph capture"),
)
ROWS = {row.name: row for row in EXECUTOR_ROWS}
EXECUTOR_NAMES: tuple[str, ...] = tuple(row.name for row in EXECUTOR_ROWS)


def kind_of(executor: str) -> str:
    """The program kind ``executor`` runs; an unknown name reads as a Relax one (a VM)."""
    row = ROWS.get(executor)
    return row.kind if row is not None else RELAX_KIND


def is_prim(executor: str) -> bool:
    """``executor`` calls one PrimFunc with no VM (the harness allocates its outputs)."""
    return kind_of(executor) == PRIM_KIND


def simulated_executors() -> tuple[str, ...]:
    return tuple(row.name for row in EXECUTOR_ROWS if row.simulated)
