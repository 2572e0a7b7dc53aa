"""The shape of a stored record (a baseline entry, or a results file's ``record``),
checked field by field before it is used: a missing key or a value of the wrong type
is an error naming the field, never a gate silently switched off.

Pure: JSON data in, the first problem out (``"exact.instructions: missing"``).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping

from pytest_tvmperf.measure.machine import Machine

Check = Callable[[Any, str], "str | None"]

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class SchemaProblem(Exception):
    """One field of a record that is missing or of the wrong type: ``field`` is its
    dotted path (``timings.<fingerprint>.samples_s``), ``within`` what holds that
    record, if anything (``record``: a results entry's)."""

    def __init__(self, field: str, problem: str, within: str = "") -> None:
        super().__init__(f"{within + ' ' if within else ''}field {field}: {problem}")
        self.field = field
        self.problem = problem
        self.within = within


#: the most digits an integer in one of our files has (2**64 has 20): a longer one is no
#: count, size or version, and one of over 4300 digits makes Python's ``int()`` raise
MAX_INT_DIGITS = 20


class LongInt:
    """An integer literal of more than :data:`MAX_INT_DIGITS` digits, as :func:`loads`
    reads it, never converted (Python refuses to convert one of over 4300 digits)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<a whole number of {self.digits} digits>"


def _json_int(text: str) -> int | LongInt:
    digits = len(text.lstrip("-"))
    return LongInt(digits) if digits > MAX_INT_DIGITS else int(text)


def loads(text: str) -> Any:
    """``json.loads``, but an integer of more than :data:`MAX_INT_DIGITS` digits reads as a
    :class:`LongInt` (see :func:`find_long_int`) instead of a ValueError with no file,
    entry or field, or a number that overflows later."""
    import json

    return json.loads(text, parse_int=_json_int, object_pairs_hook=_json_object)


class DuplicateKeys(dict):
    """A JSON object, as :func:`loads` reads it, that holds a key more than once
    (``json.loads`` keeps the last silently: a reviewer reads one value, the gate uses
    another); ``duplicate`` is the first such key (see :func:`find_duplicate_key`)."""

    duplicate: str = ""


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = DuplicateKeys(obj)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


def find_duplicate_key(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The path of the first object in ``data`` that holds a key twice, and that key."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, DuplicateKeys):
            return path, value.duplicate
        if isinstance(value, dict):
            stack.extend((path + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))
    return None


def find_long_int(data: Any) -> tuple[tuple[str | int, ...], LongInt] | None:
    """The path (keys and list indices) of the first :class:`LongInt` in ``data``, and it."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, LongInt):
            return path, value
        if isinstance(value, dict):
            stack.extend((path + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))
    return None


def dotted(path: tuple[str | int, ...]) -> str:
    """``("exact", "instructions", "main")`` -> ``exact.instructions.main``; ``("samples_s", 0)`` -> ``samples_s[0]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def long_int_problem(found: LongInt) -> str:
    return f"a whole number of {found.digits} digits: no value of this file is that large (the most is {MAX_INT_DIGITS} digits)"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, LongInt):
        return repr(value)[1:-1]
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) < 40 else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _fail(field: str, wanted: str, value: Any) -> None:
    raise SchemaProblem(field, f"expected {wanted}, got {_kind(value)}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large to be a float
        return False


def _str(value: Any, field: str) -> None:
    if not isinstance(value, str):
        _fail(field, "a string", value)


def _count(value: Any, field: str) -> None:
    if not is_int(value) or value < 0:
        _fail(field, "a whole number >= 0", value)


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        _fail(field, "an object", value)
    return value


def _optional(value: Any, field: str, check: Callable[[Any, str], None]) -> None:
    if value is not None:
        check(value, field)


def _counts_map(value: Any, field: str) -> None:
    for key, count in _object(value, field).items():
        _count(count, f"{field}.{key}")


def _samples(value: Any, field: str) -> None:
    if not isinstance(value, list) or not value:
        _fail(field, "a non-empty list of seconds", value)
    for i, s in enumerate(value):
        if not is_number(s) or s <= 0:
            _fail(f"{field}[{i}]", "a positive number of seconds", s)


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
    if "per_kernel" in exact:  # {metric: {kernel: count}} from the metric sources
        for metric, counts in _object(exact["per_kernel"], f"{field}.per_kernel").items():
            _counts_map(counts, f"{field}.per_kernel.{metric}")
    if "measured_with" in exact:  # {metric: how its counts were measured}
        for metric, setup in _object(exact["measured_with"], f"{field}.measured_with").items():
            _str(setup, f"{field}.measured_with.{metric}")


def check_machine(data: Any, field: str) -> Machine:
    machine = _object(data, field)
    for key, kind in Machine.__dataclass_fields__.items():
        if key == "gpu" and key not in machine:  # stored only for a GPU
            continue
        value = _require(machine, key, f"{field}.")
        if kind.type in ("int", int):
            _count(value, f"{field}.{key}")
        else:
            _str(value, f"{field}.{key}")
    return Machine.from_json(machine)


def _artifact_path(value: Any, field: str) -> None:
    _str(value, field)
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "\\")) or ".." in parts or not value or ":" in parts[0]:
        _fail(field, "a path inside the baseline directory (relative, without '..')", value)


def check_timing(data: Any, field: str, fingerprint: str | None = None) -> None:
    timing = _object(data, field)
    machine = check_machine(_require(timing, "machine", f"{field}."), f"{field}.machine")
    if fingerprint is not None and machine.fingerprint != fingerprint:
        raise SchemaProblem(f"{field}", f"the key {fingerprint!r} is not the fingerprint of the machine stored with it "
                                        f"({machine.fingerprint}): the timing was edited or copied under another machine")
    _samples(_require(timing, "samples_s", f"{field}."), f"{field}.samples_s")
    if "median_s" in timing and not is_number(timing["median_s"]):
        _fail(f"{field}.median_s", "a number of seconds", timing["median_s"])
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
        sha = _require(art, "sha256", f"{field}.artifact.")
        if sha is not None and not (isinstance(sha, str) and _SHA256.match(sha)):
            _fail(f"{field}.artifact.sha256", "64 lowercase hex digits", sha)
    peers = timing.get("peers")
    if peers is not None:
        for name, peer in _object(peers, f"{field}.peers").items():
            _samples(_require(_object(peer, f"{field}.peers.{name}"), "samples_s", f"{field}.peers.{name}."),
                     f"{field}.peers.{name}.samples_s")


def _lines_map(value: Any, field: str) -> None:
    for key, lines in _object(value, field).items():
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            _fail(f"{field}.{key}", "a list of strings", lines)


def _times_map(value: Any, field: str) -> None:
    for key, t in _object(value, field).items():
        if not is_number(t) or t < 0:
            _fail(f"{field}.{key}", "a number of seconds", t)


def _seconds(value: Any, field: str) -> None:
    if not is_number(value) or value < 0:
        _fail(field, "a number of seconds", value)


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
            raise SchemaProblem(f"{field}.{key}", f"null, but {executor} always measures it (null is written only "
                                                  f"for a metric the executor does not measure): the value was edited out")
    never, why = NEVER_MEASURED.get(executor, (frozenset(), ""))
    for key in sorted(never):
        if exact.get(key) is not None:
            raise SchemaProblem(f"{field}.{key}", f"expected null, as {executor} does not measure {key} ({why}), "
                                                  f"got {_kind(exact[key])}")


def check_record(data: Any) -> None:
    """Raise SchemaProblem for the first field of ``data`` that a Record cannot be built
    from as written: every key ``Record.as_json`` writes is required, with its type."""
    record = _object(data, "entry")
    for key in ("workload", "executor", "tvm_version"):
        _str(_require(record, key, ""), key)
    _object(_require(record, "target", ""), "target")
    check_exact(_require(record, "exact", ""))
    for fp, timing in _object(_require(record, "timings", ""), "timings").items():
        check_timing(timing, f"timings.{fp}", fp)
    _optional(record.get("compile_s"), "compile_s", _seconds)
    _optional(record.get("bytecode"), "bytecode", _lines_map)
    _optional(record.get("kernel_time_s"), "kernel_time_s", _times_map)
    if "pipeline" in record:
        _str(record["pipeline"], "pipeline")
    _optional(record.get("tuning"), "tuning", _object)
    _optional(record.get("ir"), "ir", _ir)
    _optional(record.get("kernels"), "kernels", _kernel_ids)


#: the fields of a kernel's identity (measure/kernel_identity.py), all strings; ``layer`` optional
_KERNEL_ID_FIELDS = ("key", "op", "shapes")


def _kernel_ids(value: Any, field: str) -> None:
    """``kernels``: {kernel name: {"key": hex, "op": str, "shapes": str[, "layer": str]}}."""
    for name, ident in _object(value, field).items():
        ident = _object(ident, f"{field}.{name}")
        for key in _KERNEL_ID_FIELDS:
            _str(_require(ident, key, f"{field}.{name}."), f"{field}.{name}.{key}")
        _optional(ident.get("layer"), f"{field}.{name}.layer", _str)


def combo_of(test_id: str) -> tuple[str, str, str] | None:
    """The executor x target part of a test id the plugin generated:
    ``test_mlp[llvm-vm-bytecode-bound]`` -> (``llvm-vm-bytecode``, ``llvm``, ``vm-bytecode``),
    ``test_mlp[rpc:board-llvm-prim]`` -> (``rpc:board-llvm-prim``, ``llvm``, ``prim``);
    None for an id without one. The leftmost (then longest) combination in its
    parameters wins; it stands between ``[`` or ``-`` and ``-`` or ``]``."""
    from pytest_tvmperf.config.parsing import EXECUTORS, TARGETS

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
    """:func:`check_record`, the fields a test id encodes, then the exact metrics its
    executor measures (not null): an entry recorded under
    ``test_x[llvm-vm-bytecode]`` has executor ``vm-bytecode`` and a target of kind
    ``llvm``. An entry edited to say otherwise would be read as another kind of test (and
    its test left out of collection), so it is an error naming the field."""
    check_record(data)
    check_id(test_id, data)
    check_exact_for(data["executor"], data["exact"])


def check_id(test_id: str, data: Mapping[str, Any]) -> None:
    """The executor and the target kind of a checked record agree with ``test_id``'s."""
    combo = combo_of(test_id)
    if combo is None:
        return
    shown, target, executor = combo
    fix = (f"the test id's [{shown}] part names the executor and target the entry was recorded under: set the "
           f"field back to {{want!r}}, or record the other combination under its own test id with "
           f"`pytest --tvmperf-update`")
    if data["executor"] != executor:
        raise SchemaProblem("executor", f"the test id says {executor!r}, the entry says {data['executor']!r}; "
                                        + fix.format(want=executor))
    kind = data["target"].get("kind")
    if kind != target:
        said = repr(kind) if isinstance(kind, str) else "no kind" if kind is None else _kind(kind)
        raise SchemaProblem("target.kind", f"the test id says {target!r}, the entry says {said}; "
                                           + fix.format(want=target))


def _ir(value: Any, field: str) -> None:
    """The IR file of an entry: ``{"path": <inside the baseline directory>, "sha256": <hex>}``."""
    ir = _object(value, field)
    _artifact_path(_require(ir, "path", f"{field}."), f"{field}.path")
    sha = _require(ir, "sha256", f"{field}.")
    if not (isinstance(sha, str) and _SHA256.match(sha)):
        _fail(f"{field}.sha256", "64 lowercase hex digits", sha)
    weights = ir.get("weights")
    if weights is not None:  # the weights stored apart from the IR (store/weights.py)
        if not isinstance(weights, list):
            _fail(f"{field}.weights", "a list", weights)
        for i, weight in enumerate(weights):
            where = f"{field}.weights[{i}]"
            weight = _object(weight, where)
            _count(_require(weight, "node", f"{where}."), f"{where}.node")
            _artifact_path(_require(weight, "path", f"{where}."), f"{where}.path")
            wsha = _require(weight, "sha256", f"{where}.")
            if not (isinstance(wsha, str) and _SHA256.match(wsha)):
                _fail(f"{where}.sha256", "64 lowercase hex digits", wsha)


def check_schema_version(value: Any, wanted: int) -> bool:
    """True for the integer ``wanted`` (``true`` equals 1 in Python, but is no version)."""
    return is_int(value) and value == wanted


_MISSING = object()


class Fields:
    """The fields of one JSON object (a results entry, a peer cell), read one by one and
    named by their dotted path when wrong (``time.ratio: expected a number, got ...``).

    Strict (the default), a missing required field or a value of the wrong type raises
    :class:`SchemaProblem`; lenient (``strict=False``, for showing whatever a page is
    handed), it reads as the default instead."""

    def __init__(self, data: Any, where: str = "", strict: bool = True) -> None:
        if not isinstance(data, Mapping):
            if strict:
                _fail(where or "entry", "an object", data)
            data = {}
        self.data, self.where, self.strict = data, where, strict

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.data:
            if required and self.strict:
                raise SchemaProblem(self.path(key), "missing")
            return _MISSING
        return self.data[key]

    def _bad(self, key: str, wanted: str, default: Any) -> Any:
        if self.strict:
            _fail(self.path(key), wanted, self.data[key])
        return default

    def text(self, key: str, default: str = "", required: bool = False, nullable: bool = False) -> str:
        """A string (with ``nullable``, null reads as ``default``)."""
        value = self._get(key, required)
        if value is _MISSING or (value is None and nullable):
            return default
        return value if isinstance(value, str) else self._bad(key, "a string", default)

    def number(self, key: str, required: bool = False) -> float | None:
        """A number, or null where not ``required`` (a non-finite float is a number too:
        a page leaves it out)."""
        value = self._get(key, required)
        if value is _MISSING:
            return None
        if value is None:
            return self._bad(key, "a number", None) if required else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        return self._bad(key, "a number", None)

    def obj(self, key: str, required: bool = False) -> Fields | None:
        """A nested object (None for null or missing)."""
        value = self._get(key, required)
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, Mapping):
            return self._bad(key, "an object", None)
        return Fields(value, self.path(key), self.strict)

    def raw(self, key: str) -> Any:
        """The value as written (None when missing), for a field checked elsewhere."""
        value = self._get(key, False)
        return None if value is _MISSING else value

    def objects(self, key: str) -> list[Fields]:
        """A list of objects (empty for null or missing); lenient, items that are not
        objects are left out."""
        value = self._get(key, False)
        if value is _MISSING or value is None:
            return []
        if not isinstance(value, list):
            return self._bad(key, "a list", [])
        out = []
        for i, item in enumerate(value):
            if isinstance(item, Mapping):
                out.append(Fields(item, f"{self.path(key)}[{i}]", self.strict))
            elif self.strict:
                _fail(f"{self.path(key)}[{i}]", "an object", item)
        return out

    def numbers(self, key: str) -> tuple[float, ...] | None:
        """A list of numbers, or None for null or missing."""
        value = self._get(key, False)
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, list):
            return self._bad(key, "a list of numbers", None)
        for i, item in enumerate(value):
            if not isinstance(item, (int, float)) or isinstance(item, bool):
                if self.strict:
                    _fail(f"{self.path(key)}[{i}]", "a number", item)
                return None
        return tuple(value)
