"""Pure: may a MetaSchedule tuning database be replayed? Its records are data a pull
request can change, and the gate replays their traces on today's build: an
``Annotate(..., "pragma_import_llvm", "<LLVM IR>")`` instruction links that text into the
kernel. So before MetaSchedule reads the files, each line is checked against an
**allowlist of what the plugin's own tuning writes**: a record line
(``database_tuning_record.json``, ``[workload, [trace, run_secs, target, args_info]]``) has
instructions of the kinds and annotations of the keys listed below; a workload line
(``database_workload.json``, ``[hash, module]``) holds a graph :mod:`ir_check` allows; a
line is bounded in size and nesting (:mod:`bounded_json`: never a ``RecursionError``).

The kinds and keys are those of every record the bundled suite commits (``baselines/tuning``)
plus those MetaSchedule's default rules and postprocessors for ``llvm`` and ``cuda`` write
(listed apart, reviewed); ``tests/unit/test_trace_check.py`` checks every committed record.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from pytest_tvmperf.store import bounded_json, ir_check
from pytest_tvmperf.store.ir_allowlist import COMMITTED_ANNOTATIONS, RULE_ANNOTATIONS

#: a record line nests 7 levels, a workload line 2
MAX_LINE_DEPTH = 32
#: bytes of one line (a workload line holds its module, some 50 KB for the bundled ones)
MAX_LINE_BYTES = 64 * 1024 * 1024
#: instructions of one trace (the bundled ones have some 40)
MAX_INSTRUCTIONS = 20_000
#: characters of an annotation's value written inline (a tiling structure such as "SSRSRS")
MAX_LITERAL = 256

#: the instruction kinds of the records the bundled suite commits (baselines/tuning)
COMMITTED_KINDS: frozenset[str] = frozenset(
    (
        "CacheWrite ComputeAt ComputeInline DecomposeReduction EnterPostproc Fuse GetChildBlocks GetConsumers "
        "GetLoops GetSBlock Parallel ReverseComputeAt Reorder SampleCategorical SampleComputeLocation "
        "SamplePerfectTile Split Unannotate Annotate Vectorize RFactor"
    ).split()
)
#: the other kinds MetaSchedule's default rules and postprocessors write for llvm and cuda
#: (reviewed: each names loops and blocks of the kernel, or samples numbers; none carries code)
RULE_KINDS: frozenset[str] = frozenset(
    (
        "Bind Unroll ReverseComputeInline CacheRead SetScope StorageAlign GetProducers Blockize Tensorize "
        "AddUnitLoop SampleCategorical GetSBlock Annotate"
    ).split()
)
ALLOWED_KINDS: frozenset[str] = COMMITTED_KINDS | RULE_KINDS
ALLOWED_ANNOTATIONS: frozenset[str] = COMMITTED_ANNOTATIONS | RULE_ANNOTATIONS

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"


def parse_line(line: str) -> Any:
    """One line of a database file as JSON, bounded in size and nesting: raises
    ValueError (:class:`bounded_json.TooDeep` for a deep one) saying why not."""
    if len(line) > MAX_LINE_BYTES:
        raise ValueError(
            f"the line is {len(line)} characters long, more than the {MAX_LINE_BYTES} the plugin's tuning writes"
        )
    return bounded_json.loads(line, MAX_LINE_DEPTH)


def _literal_ok(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_LITERAL
    if isinstance(value, list):
        return len(value) <= MAX_LITERAL and all(_literal_ok(v) for v in value)
    return value is None or isinstance(value, (int, float, bool))


def record_problem(row: Any) -> str | None:
    """Why a record line (already of the form ``[int, [trace, ...]]``) may not be
    replayed, or None."""
    trace = row[1][0]
    if not (isinstance(trace, list) and len(trace) == 2 and isinstance(trace[0], list)):
        return "its trace is not [instructions, decisions]"
    instructions = trace[0]
    if len(instructions) > MAX_INSTRUCTIONS:
        return f"its trace has {len(instructions)} instructions, more than the {MAX_INSTRUCTIONS} tuning writes"
    for number, inst in enumerate(instructions, start=1):
        if not (
            isinstance(inst, list)
            and len(inst) == 4
            and isinstance(inst[0], str)
            and all(isinstance(part, list) for part in inst[1:])
        ):
            return f"instruction {number} of its trace is not [kind, inputs, attrs, outputs]"
        kind, inputs, attrs, _outputs = inst
        if kind not in ALLOWED_KINDS:
            return (
                f"refused: instruction {number} of its trace is {kind!r}, a kind the plugin's tuning never "
                f"writes (nothing of the database was replayed)"
            )
        if kind in ("Annotate", "Unannotate"):
            key = attrs[0] if attrs else None
            if key not in ALLOWED_ANNOTATIONS:
                return (
                    f"refused: instruction {number} of its trace ({kind}) sets the annotation {key!r}, which the "
                    f"plugin's tuning never writes (nothing of the database was replayed)"
                )
        if not _literal_ok(inputs) or not _literal_ok(attrs):
            return f"instruction {number} of its trace ({kind}) has a value longer than {MAX_LITERAL} characters"
    return None


def workload_problem(row: Any) -> str | None:
    """Why a workload line (already ``[str, str]``) may not be read, or None: its module
    must be a graph :mod:`ir_check` allows."""
    try:
        raw = base64.b64decode(row[1], validate=True)
    except (binascii.Error, ValueError):
        return "its module is not base64"
    if len(raw) < 8 or struct.unpack("<Q", raw[:8])[0] != len(raw) - 8:
        return "its module is not a length-prefixed tvm.ir.save_json text"
    try:
        graph = bounded_json.loads(raw[8:], ir_check.MAX_JSON_DEPTH)
    except ValueError as exc:
        return f"its module is not JSON ({exc})"
    try:
        ir_check.check_graph(graph)
    except ir_check.UnsafeIR as exc:
        return f"refused: its module {exc} (nothing of the database was read)"
    return None


def line_problem(file_name: str, row: Any) -> str | None:
    """Why a well-formed line of ``file_name`` may not be given to MetaSchedule, or None."""
    check = {WORKLOAD_FILE: workload_problem, RECORD_FILE: record_problem}.get(file_name)
    return None if check is None else check(row)
