"""Pure: what a re-record keeps, and the baseline file's text.

An update rewrites an entry only where something the gate judges changed: the program (its
IR and weights), an exact metric, the TVM version, the pipeline, the target, the tuning
records, the executor, the machines' timing keys or the peers timed (an option the user asked
for). Where only measurements moved (time samples, their statistics, per-kernel times, compile
seconds, the resource numbers of the same program), the old entry is kept byte for byte, so a
re-record of a whole suite changes the entries of the tests that changed and no other.

The text puts each list of numbers, and each volatile map (statistics, per-kernel times), on one
line: a re-recorded entry's ``git diff`` shows a line per measurement, not one per sample."""

from __future__ import annotations

import json
from typing import Any, Mapping

from pytest_tvmperf.values.resources import RESOURCE_NAMES

#: the measurements of a record's JSON that move run to run on the same program
VOLATILE_TOP = ("compile_s", "kernel_time_s")
VOLATILE_TIMING = ("samples_s", "median_s", "stats")
#: maps written on one line (their values are numbers that move together)
ONE_LINE_MAPS = frozenset({"kernel_time_s", "stats"})


def gated_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` (a record's JSON) less what moves run to run on the same program: what the gate
    judges, and which measurements exist (the resource metrics and peers by name, not value)."""
    out = {k: v for k, v in entry.items() if k not in VOLATILE_TOP}
    out["has"] = sorted(k for k in VOLATILE_TOP if entry.get(k) is not None)
    exact = dict(entry.get("exact") or {})
    for name in RESOURCE_NAMES:  # the same program's resource numbers are measurements: kept by presence
        if name in exact:
            exact[name] = exact[name] is not None
    if "resource_parts" in exact:
        exact["resource_parts"] = {m: sorted(parts or {}) for m, parts in exact["resource_parts"].items()}
    out["exact"] = exact
    timings = {}
    for fingerprint, timing in (entry.get("timings") or {}).items():
        t = {k: v for k, v in timing.items() if k not in VOLATILE_TIMING}
        if "reference" in t:
            t["reference"] = (t["reference"] or {}).get("name")
        if "peers" in t:
            t["peers"] = sorted(t["peers"] or {})
        timings[fingerprint] = t
    out["timings"] = timings
    return out


def unchanged(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Is ``new`` (the entry an update would write) the same as ``old`` in everything the gate
    judges, with a timing for each machine ``new`` was timed on: then ``old`` is kept as it is."""
    new_machines = set(new.get("timings") or {})
    if not new_machines <= set(old.get("timings") or {}):
        return False
    view_old = gated_view(old)
    view_old["timings"] = {fp: t for fp, t in view_old["timings"].items() if fp in new_machines}
    return view_old == gated_view(new)


def dump_text(data: Any) -> str:
    """``data`` as JSON with sorted keys and a two-space indent, except that a list of numbers and
    the maps of :data:`ONE_LINE_MAPS` go on one line (any JSON reader reads it as before)."""
    return _dump(data, 0, "") + "\n"


def _scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _dump(value: Any, depth: int, key: str) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        if key in ONE_LINE_MAPS and all(_scalar(v) for v in value.values()):
            return json.dumps(value, sort_keys=True)
        items = [f"{inner}{json.dumps(k)}: {_dump(v, depth + 1, str(k))}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return json.dumps(value)
        items = [f"{inner}{_dump(v, depth + 1, '')}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value)
