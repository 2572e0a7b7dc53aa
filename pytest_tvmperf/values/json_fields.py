"""Reading JSON we wrote, field by field (pure: text or data in, values or the first
problem out): a missing key or a value of the wrong type is a :class:`SchemaProblem`
naming the field by its dotted path, an integer too long to be ours or a key written
twice is found, not silently read. The record's own shape is checked in store/schema.py."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping


class SchemaProblem(Exception):
    """One field of a record that is missing or of the wrong type: ``field`` is its
    dotted path (``timings.<fingerprint>.samples_s``), ``within`` what holds that
    record, if anything (``record``: a results entry's)."""

    def __init__(self, field: str, problem: str, within: str = "") -> None:
        super().__init__(f"{within + ' ' if within else ''}field {field}: {problem}")
        self.field = field
        self.problem = problem


#: the most digits an integer in one of our files has (2**64 has 20): a longer one is no
#: count, size or version, and one of over 4300 digits makes Python's ``int()`` raise
MAX_INT_DIGITS = 20
#: what :func:`kind_of` calls a value of the other plain kinds
_KINDS = ((type(None), "null"), (bool, "a boolean"), (list, "a list"), (dict, "an object"))


class LongInt:
    """An integer literal of more than :data:`MAX_INT_DIGITS` digits, as :func:`loads` reads it: never converted."""

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


def _first(data: Any, kind: type) -> tuple[tuple[str | int, ...], Any] | None:
    """The path (keys and list indices) of the first value of ``kind`` in ``data``, and it."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, kind):
            return path, value
        if isinstance(value, dict):
            stack.extend((path + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))
    return None


def find_duplicate_key(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The path of the first object in ``data`` that holds a key twice, and that key."""
    found = _first(data, DuplicateKeys)
    return None if found is None else (found[0], found[1].duplicate)


def find_long_int(data: Any) -> tuple[tuple[str | int, ...], LongInt] | None:
    """The path (keys and list indices) of the first :class:`LongInt` in ``data``, and it."""
    return _first(data, LongInt)


def dotted(path: tuple[str | int, ...]) -> str:
    """``("exact", "instructions", "main")`` -> ``exact.instructions.main``; ``("samples_s", 0)`` -> ``samples_s[0]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def long_int_problem(found: LongInt) -> str:
    return f"a whole number of {found.digits} digits: no value of this file is that large (the most is {MAX_INT_DIGITS} digits)"


def kind_of(value: Any) -> str:
    if isinstance(value, LongInt):
        return repr(value)[1:-1]
    if is_int(value) or isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) < 40 else "a string"
    return next((word for kind, word in _KINDS if isinstance(value, kind)), type(value).__name__)


def fail_field(field: str, wanted: str, value: Any) -> None:
    raise SchemaProblem(field, f"expected {wanted}, got {kind_of(value)}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large to be a float
        return False


def check_schema_version(value: Any, wanted: int) -> bool:
    """True for the integer ``wanted`` (``true`` equals 1 in Python, but is no version)."""
    return is_int(value) and value == wanted


_MISSING = object()


class Fields:
    """The fields of one JSON object (a results entry, a peer cell), read one by one and
    named by their dotted path when wrong (``time.ratio: expected a number, got ...``):
    strict, a :class:`SchemaProblem`; lenient (for showing whatever a page is handed), the default."""

    def __init__(self, data: Any, where: str = "", strict: bool = True) -> None:
        if not isinstance(data, Mapping):
            if strict:
                fail_field(where or "entry", "an object", data)
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
            fail_field(self.path(key), wanted, self.data[key])
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
        if value is _MISSING or (value is None and not required):
            return None
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
        return self.data.get(key)

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
                fail_field(f"{self.path(key)}[{i}]", "an object", item)
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
                    fail_field(f"{self.path(key)}[{i}]", "a number", item)
                return None
        return tuple(value)
