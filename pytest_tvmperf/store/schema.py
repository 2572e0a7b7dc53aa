"""Pure: the shape of a stored record (a baseline entry, a results file's ``record``),
checked field by field before it is used: a missing key or a value of the wrong type is
an error naming the field (``"exact.instructions: missing"``), never a gate silently off.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from pytest_tvmperf.config.parsing import EXECUTORS, TARGETS
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.kernel_keys import key_problem
from pytest_tvmperf.values.json_fields import SchemaProblem, fail_field, is_int, is_number, kind_of
from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.values.record import RECORD_FIELDS, FieldCheck, Presence
from pytest_tvmperf.values.resources import RESOURCE_NAMES
from pytest_tvmperf.values.ir_function import MAX_FUNCTIONS, FunctionRef
from pytest_tvmperf.values.seeded_weight import MAX_WEIGHTS, SeededWeight

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _str(value: Any, field: str) -> None:
    if not isinstance(value, str):
        fail_field(field, "a string", value)


def _count(value: Any, field: str) -> None:
    if not is_int(value) or value < 0:
        fail_field(field, "a whole number >= 0", value)


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        fail_field(field, "an object", value)
    return value


def _optional(value: Any, field: str, check: Callable[[Any, str], None]) -> None:
    if value is not None:
        check(value, field)


def _each(value: Any, field: str, check: Callable[[Any, str], Any]) -> None:
    """An object whose every value ``check`` accepts."""
    for key, item in _object(value, field).items():
        check(item, f"{field}.{key}")


def _counts_map(value: Any, field: str) -> None:
    _each(value, field, _count)


def _samples(value: Any, field: str) -> None:
    if not isinstance(value, list) or not value:
        fail_field(field, "a non-empty list of seconds", value)
    for i, s in enumerate(value):
        if not is_number(s) or s <= 0:
            fail_field(f"{field}[{i}]", "a positive number of seconds", s)


def _sha256(value: Any, field: str) -> None:
    if not (isinstance(value, str) and _SHA256.match(value)):
        fail_field(field, "64 lowercase hex digits", value)


def _require(data: Mapping[str, Any], key: str, field: str) -> Any:
    if key not in data:
        raise SchemaProblem(f"{field}{key}", "missing")
    return data[key]


def check_exact(data: Any, field: str = "exact") -> None:
    exact = _object(data, field)
    for key in ("instructions", "by_callee", "calls"):
        _optional(_require(exact, key, f"{field}."), f"{field}.{key}", _counts_map)
    for key in ("kernels", "storage_bytes"):
        _optional(_require(exact, key, f"{field}."), f"{field}.{key}", _count)
    # optional, in this order: per_kernel {metric: {kernel: count}} from the metric sources,
    # measured_with {metric: how its counts were measured}, each resource metric (absent in
    # a record from before it existed; null: n/a), resource_parts {metric: {site or kernel:
    # bytes}}, not_measured {metric: why it is n/a}
    maps = {"per_kernel": _counts_map, "measured_with": _str, **dict.fromkeys(RESOURCE_NAMES)}
    for key, check in {**maps, "resource_parts": _counts_map, "not_measured": _str}.items():
        if key in exact and check is None:
            _optional(exact[key], f"{field}.{key}", _count)
        elif key in exact:
            _each(exact[key], f"{field}.{key}", check)


def check_machine(data: Any, field: str) -> Machine:
    machine = _object(data, field)
    for key, kind in Machine.__dataclass_fields__.items():
        if key == "gpu" and key not in machine:  # stored only for a GPU
            continue
        check = _count if kind.type in ("int", int) else _str
        check(_require(machine, key, f"{field}."), f"{field}.{key}")
    return Machine.from_json(machine)


def _artifact_path(value: Any, field: str) -> None:
    _str(value, field)
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "\\")) or ".." in parts or not value or ":" in parts[0]:
        fail_field(field, "a path inside the baseline directory (relative, without '..')", value)


def check_timing(data: Any, field: str, fingerprint: str | None = None) -> None:
    timing = _object(data, field)
    machine = check_machine(_require(timing, "machine", f"{field}."), f"{field}.machine")
    if fingerprint is not None and machine.fingerprint != fingerprint:
        raise SchemaProblem(
            f"{field}",
            f"the key {fingerprint!r} is not the fingerprint of the machine stored with it "
            f"({machine.fingerprint}): the timing was edited or copied under another machine",
        )
    _samples(_require(timing, "samples_s", f"{field}."), f"{field}.samples_s")
    if "median_s" in timing and not is_number(timing["median_s"]):
        fail_field(f"{field}.median_s", "a number of seconds", timing["median_s"])
    _optional(timing.get("stats"), f"{field}.stats", _object)
    ref = timing.get("reference")
    if ref is not None:
        _object(ref, f"{field}.reference")
        _optional(ref.get("name"), f"{field}.reference.name", _str)
        _samples(_require(ref, "samples_s", f"{field}.reference."), f"{field}.reference.samples_s")
    art = timing.get("artifact")
    if art is not None:
        _object(art, f"{field}.artifact")
        _artifact_path(_require(art, "path", f"{field}.artifact."), f"{field}.artifact.path")
        _optional(_require(art, "sha256", f"{field}.artifact."), f"{field}.artifact.sha256", _sha256)
    peers = timing.get("peers")
    if peers is not None:
        for name, peer in _object(peers, f"{field}.peers").items():
            where = f"{field}.peers.{name}"
            _samples(_require(_object(peer, where), "samples_s", f"{where}."), f"{where}.samples_s")


def _lines_map(value: Any, field: str) -> None:
    for key, lines in _object(value, field).items():
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            fail_field(f"{field}.{key}", "a list of strings", lines)


def _times_map(value: Any, field: str) -> None:
    _each(value, field, _seconds)


def _seconds(value: Any, field: str) -> None:
    if not is_number(value) or value < 0:
        fail_field(field, "a number of seconds", value)


#: The exact metrics each executor always measures (null there is an edit, not "n/a"),
#: and those it never measures (a value there would never be compared). Executed
#: ``calls`` of a bytecode VM are null where the program did not run on the host (a
#: built-only target, a remote device running other code), so neither rule covers them.
_BYTECODE_METRICS = frozenset({"instructions", "by_callee", "kernels", "storage_bytes"})
ALWAYS_MEASURED: Mapping[str, frozenset[str]] = {
    "vm-bytecode": _BYTECODE_METRICS,
    "vm-cudagraph": _BYTECODE_METRICS,
    "vm-compiled": frozenset({"kernels", "storage_bytes"}),
    "prim": frozenset({"kernels"}),
}
NEVER_MEASURED: Mapping[str, tuple[frozenset[str], str]] = {
    "vm-compiled": (frozenset({"instructions", "by_callee", "calls"}), "it has no bytecode"),
    "prim": (frozenset({"instructions", "by_callee", "calls", "storage_bytes"}), "it calls one kernel, with no VM"),
}


def check_exact_for(executor: str, exact: Mapping[str, Any], field: str = "exact") -> None:
    """The metrics ``executor`` always measures are numbers, those it never measures
    null (an unknown executor is not checked here)."""
    for key in sorted(ALWAYS_MEASURED.get(executor, ())):
        if exact.get(key) is None:
            raise SchemaProblem(
                f"{field}.{key}",
                f"null, but {executor} always measures it (null is written only "
                f"for a metric the executor does not measure): the value was edited out",
            )
    never, why = NEVER_MEASURED.get(executor, (frozenset(), ""))
    for key in sorted(never):
        if exact.get(key) is not None:
            raise SchemaProblem(
                f"{field}.{key}",
                f"expected null, as {executor} does not measure {key} ({why}), got {kind_of(exact[key])}",
            )


def check_record(data: Any) -> None:
    """SchemaProblem for the first field of ``data`` (in values/record.py's ``RECORD_FIELDS``
    order) that a Record cannot be built from as written."""
    record = _object(data, "entry")
    for f in RECORD_FIELDS:
        check = _CHECKS[f.check]
        if f.presence is Presence.REQUIRED:
            check(_require(record, f.key, ""), f.key)
        elif f.presence is Presence.NULLABLE:
            _optional(record.get(f.key), f.key, check)
        elif f.key in record:
            check(record[f.key], f.key)


def _timings(value: Any, field: str) -> None:
    for fp, timing in _object(value, field).items():
        check_timing(timing, f"{field}.{fp}", fp)


def _kernel_ids(value: Any, field: str) -> None:
    """``kernels``: {kernel: {"key": hex, "op": str, "shapes": str[, "layer": str]}}, each under
    its identity key (values/kernel_keys.py), which it must carry, or (an older file) its TVM name."""
    for name, ident in _object(value, field).items():
        ident = _object(ident, f"{field}.{name}")
        for key in ("key", "op", "shapes"):  # a kernel's identity (values/kernel_id.py): strings, ``layer`` optional
            _str(_require(ident, key, f"{field}.{name}."), f"{field}.{name}.{key}")
        _optional(ident.get("layer"), f"{field}.{name}.layer", _str)
        if (problem := key_problem(name, KernelId.from_json(ident))) is not None:
            raise SchemaProblem(
                f"{field}.{name}", f"{problem}: the entry was edited; record it again with `pytest --tvmperf-update`"
            )


def combo_of(test_id: str) -> tuple[str, str, str] | None:
    """The executor x target part of a generated test id, or None: ``test_mlp[llvm-vm-bytecode-bound]``
    -> (``llvm-vm-bytecode``, ``llvm``, ``vm-bytecode``), ``test_mlp[rpc:b-llvm-prim]`` ->
    (``rpc:b-llvm-prim``, ``llvm``, ``prim``); the leftmost (then longest) between ``[``/``-`` and ``-``/``]``."""
    _, bracket, params = test_id.partition("[")
    if not bracket:
        return None
    params = "[" + params
    best: tuple[int, int, str, str, str] | None = None
    for target in TARGETS:
        for executor in EXECUTORS:
            pattern = rf"(?<=[\[-])((?:rpc:[A-Za-z0-9_.\-]+?-)?{re.escape(target)}-{re.escape(executor)})(?=[-\]])"
            match = re.search(pattern, params)
            if match and (best is None or (match.start(), -len(match.group(1))) < (best[0], best[1])):
                best = (match.start(), -len(match.group(1)), match.group(1), target, executor)
    return None if best is None else best[2:]


def check_entry(test_id: str, data: Any) -> None:
    """:func:`check_record`, the fields a test id encodes (``test_x[llvm-vm-bytecode]``:
    executor ``vm-bytecode``, target kind ``llvm``; an entry edited to say otherwise would
    be read as another kind of test), then the exact metrics its executor measures."""
    check_record(data)
    if (combo := combo_of(test_id)) is not None:
        _check_id(data, *combo)
    check_exact_for(data["executor"], data["exact"])


def _check_id(data: Mapping[str, Any], shown: str, target: str, executor: str) -> None:
    fix = (
        f"the test id's [{shown}] part names the executor and target the entry was recorded under: set the "
        f"field back to {{want!r}}, or record the other combination under its own test id with "
        f"`pytest --tvmperf-update`"
    )
    if data["executor"] != executor:
        raise SchemaProblem(
            "executor",
            f"the test id says {executor!r}, the entry says {data['executor']!r}; " + fix.format(want=executor),
        )
    kind = data["target"].get("kind")
    if kind != target:
        said = repr(kind) if isinstance(kind, str) else "no kind" if kind is None else kind_of(kind)
        raise SchemaProblem(
            "target.kind", f"the test id says {target!r}, the entry says {said}; " + fix.format(want=target)
        )


def _ir(value: Any, field: str) -> None:
    ir = _object(value, field)
    _artifact_path(_require(ir, "path", f"{field}."), f"{field}.path")
    _sha256(_require(ir, "sha256", f"{field}."), f"{field}.sha256")
    weights = ir.get("weights")
    if weights is not None:  # the weights stored apart from the IR (store/weights.py)
        if not isinstance(weights, list):
            fail_field(f"{field}.weights", "a list", weights)
        for i, weight in enumerate(weights):
            where = f"{field}.weights[{i}]"
            weight = _object(weight, where)
            _count(_require(weight, "node", f"{where}."), f"{where}.node")
            _artifact_path(_require(weight, "path", f"{where}."), f"{where}.path")
            _sha256(_require(weight, "sha256", f"{where}."), f"{where}.sha256")
    # the weights stored as dtype, shape and digest only (values/seeded_weight.py), and the
    # kernels stored in files of their own (values/ir_function.py)
    _check_lines(ir.get("seeded"), f"{field}.seeded", MAX_WEIGHTS, "weights", SeededWeight.parse)
    _check_lines(ir.get("functions"), f"{field}.functions", MAX_FUNCTIONS, "functions", FunctionRef.parse)


def _check_lines(lines: Any, where: str, most: int, noun: str, parse: Callable[[str], Any]) -> None:
    """A list of at most ``most`` lines, each one ``parse`` accepts (or None)."""
    if lines is None:
        return
    if not isinstance(lines, list):
        fail_field(where, "a list", lines)
    if len(lines) > most:
        fail_field(where, f"at most {most} {noun}", f"{len(lines)} of them")
    for i, line in enumerate(lines):
        try:
            parse(line)
        except ValueError as exc:
            fail_field(f"{where}[{i}]", str(exc), line)


#: how each kind of record field is checked (values/record.py's ``RECORD_FIELDS`` names the kind)
_CHECKS: Mapping[FieldCheck, Callable[[Any, str], Any]] = {
    FieldCheck.TEXT: _str,
    FieldCheck.OBJECT: _object,
    FieldCheck.EXACT: check_exact,
    FieldCheck.TIMINGS: _timings,
    FieldCheck.SECONDS: _seconds,
    FieldCheck.LINES: _lines_map,
    FieldCheck.TIMES: _times_map,
    FieldCheck.IR: _ir,
    FieldCheck.KERNELS: _kernel_ids,
}
