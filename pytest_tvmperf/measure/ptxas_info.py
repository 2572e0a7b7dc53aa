"""Pure: each kernel's registers, shared memory, stack frame and spills by ``ptxas -v``; PTX instructions."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KernelResources:
    """One kernel's resources, as ``ptxas -v`` reports them."""

    registers: int = 0
    shared_bytes: int = 0
    #: the per-thread stack frame in local memory (spills and local arrays live there)
    local_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


_ENTRY = re.compile(r"(?:Compiling entry function|Function properties for) '?([A-Za-z_$][\w$]*)'?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_verbose(text: str) -> dict[str, KernelResources]:
    """{kernel: resources} from ``ptxas -v`` output (its lines in either order)."""
    fields: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        if entry := _ENTRY.search(line):
            current = entry.group(1)
            fields.setdefault(current, {})
        if current is None:
            continue
        if frame := _FRAME.search(line):
            fields[current].update(
                zip(("local_bytes", "spill_store_bytes", "spill_load_bytes"), map(int, frame.groups()))
            )
        if used := _USED.search(line):
            fields[current]["registers"] = int(used.group(1))
            if smem := _SMEM.search(line):
                fields[current]["shared_bytes"] = int(smem.group(1))
    return {name: KernelResources(**values) for name, values in fields.items()}


_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)*\.entry\s+([A-Za-z_$][\w$]*)")


def ptx_instruction_counts(ptx: str) -> dict[str, int]:
    """{kernel: instructions} of each ``.entry``: its statements, less declarations and labels."""
    counts: dict[str, int] = {}
    current: str | None = None
    depth = 0
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if current is None:
            if m := _PTX_ENTRY.match(line):
                current, depth = m.group(1), 0
                counts[current] = 0
            continue
        depth += line.count("{") - line.count("}")
        # every statement ended on this line (a scoped "{ .reg ...; mov ...; }" holds several)
        for statement in line.replace("{", " ").replace("}", " ").split(";")[:-1]:
            statement = re.sub(r"^\s*\$?[\w$]+:", "", statement).strip()
            if statement and not statement.startswith("."):
                counts[current] += 1
        if depth <= 0 and "}" in line:
            current = None
    return counts
