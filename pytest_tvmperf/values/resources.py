"""The resources a deployment pays besides time and counts (pure): their names (threshold
keys and marker keywords), units, default limits, aliases, and the text about them; the
builder measures them (builder/vm_alloc.py, builder/code_size.py, sandbox/peak.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True)
class ResourceMetric:
    """One resource metric: its name (threshold key, marker keyword, JSON key), unit, default
    threshold (``parse_limit`` syntax), short alias (``code=1%``; "" for none) and what its
    parts are (``by site``)."""

    name: str
    unit: str
    default_limit: str
    alias: str
    parts: str
    #: the summary table's column it shows in ("alloc/code", "peak"; "" in none)
    column: str = ""
    #: its cell's prefix there (``gpu 12MiB``); shown only where read when it has one
    cell_prefix: str = ""
    #: a change between two versions reads "before -> after" (exact) rather than a percentage
    absolute_change: bool = False


ALLOC_BYTES = "alloc_bytes"
CODE_BYTES = "code_bytes"
PEAK_BYTES = "peak_bytes"
DEVICE_PEAK_BYTES = "device_peak_bytes"

RESOURCE_METRICS: tuple[ResourceMetric, ...] = (
    # bytes the VM allocates in one call of the entry (its alloc_storage calls as executed); exact on every machine
    ResourceMetric(ALLOC_BYTES, "B", "0", "", "by allocation site", "alloc/code", absolute_change=True),
    # the function symbols of the object LLVM emits (the CUDA module's size for cuda); exact for a TVM, LLVM, target
    ResourceMetric(CODE_BYTES, "B", "1%", "code", "by kernel", "alloc/code"),
    # the host's peak resident growth over one call, median of 3 in the isolation child (values/peak_memory.py)
    ResourceMetric(PEAK_BYTES, "B", "10%", "memory", "", "peak"),
    # a GPU's peak allocated bytes in one call (the VM's pool, read as its free memory); n/a where no GPU runs it
    ResourceMetric(DEVICE_PEAK_BYTES, "B", "10%", "", "", "peak", cell_prefix="gpu "),
)
#: the resources whose change reads "before -> after" (exact counts of bytes)
ABSOLUTE_CHANGES: frozenset[str] = frozenset(m.name for m in RESOURCE_METRICS if m.absolute_change)
RESOURCE_NAMES: tuple[str, ...] = tuple(m.name for m in RESOURCE_METRICS)
#: measured, not counted: gated with a noise floor (values/peak_memory.py)
PEAK_NAMES: tuple[str, ...] = (PEAK_BYTES, DEVICE_PEAK_BYTES)

#: ``compile_s``: the build time, gated side by side (values/compile_times.py), not a count of
#: the record's exact metrics: selected and given a threshold as the resources above are
COMPILE_S = "compile_s"
#: the code generation time of the lowered IR (relax.build without its pipeline, tvm.compile of a
#: PrimFunc): the baseline's stored IR and today's built in turn in this process; only where the
#: program or TVM changed
COMPILE_METRIC = ResourceMetric(COMPILE_S, "s", "25%", "compile", "side by side")
#: every resource a run can select (--tvmperf-resources, marker resources=, thresholds)
SELECTABLE_RESOURCES: tuple[ResourceMetric, ...] = (*RESOURCE_METRICS, COMPILE_METRIC)
SELECTABLE_NAMES: tuple[str, ...] = tuple(m.name for m in SELECTABLE_RESOURCES)
#: ``code=1%`` is ``code_bytes=1%``, ``compile=25%`` is ``compile_s=25%``
RESOURCE_ALIASES: Mapping[str, str] = {m.alias: m.name for m in SELECTABLE_RESOURCES if m.alias}


def resource(name: str) -> ResourceMetric:
    return next(m for m in RESOURCE_METRICS if m.name == name)


def fmt_bytes(value: float | None) -> str:
    """``14,336 B``; ``n/a`` for None."""
    return "n/a" if value is None else f"{int(value):,} B"


def parts_diff(before: Mapping[str, int] | None, after: Mapping[str, int] | None, limit: int = 8) -> str:
    """The parts that changed, largest change first: ``output of fused_add: 6,144 -> 12,288 B
    (+6,144)``; "" when none did (or a side has no parts)."""
    if before is None or after is None:
        return ""
    moved = [(name, before.get(name, 0), after.get(name, 0)) for name in sorted(set(before) | set(after))]
    moved = [m for m in moved if m[1] != m[2]]
    moved.sort(key=lambda m: (-abs(m[2] - m[1]), m[0]))
    shown = [f"{name}: {b:,} -> {a:,} B ({a - b:+,})" for name, b, a in moved[:limit]]
    if len(moved) > limit:
        shown.append(f"... {len(moved) - limit} more")
    return "; ".join(shown)


def predates_line(metrics: Iterable[str]) -> str:
    """The one line for a baseline recorded before ``metrics`` existed ("" for none)."""
    if not (names := sorted(set(metrics))):
        return ""
    return (
        f"the baseline predates {', '.join(names)}: not gated against it; they will be recorded at the next "
        f"--tvmperf-update"
    )
