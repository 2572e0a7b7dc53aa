"""Builtin types only (pure): a value rebuilt from builtin types (:func:`plain`), for what crosses a
process boundary or goes into a report (an xdist payload, JUnit properties, a target's exported
config). execnet sends only builtin types: a ``tvm_ffi.core.String`` anywhere in a payload makes
the worker go down at session end, so a value is checked here, where the error can name the field."""

from __future__ import annotations

from typing import Any, Mapping


class PayloadError(ValueError):
    pass


NOT_SCALAR = object()


def builtin_scalar(value: Any) -> Any:
    """``value`` as its builtin scalar type (``tvm_ffi.core.String`` -> ``str``, ...),
    None for None, or ``NOT_SCALAR`` when it is not a scalar."""
    if value is None:
        return None
    for kind in (bool, str, int, float):  # bool before int: True is an int too
        if isinstance(value, kind):
            return kind(value)
    return NOT_SCALAR


def plain(value: Any, where: str = "payload") -> Any:
    """``value`` rebuilt from builtin types only (dict with str keys, list, str, int,
    float, bool, None); anything else is a :class:`PayloadError` naming where it is."""
    scalar = builtin_scalar(value)
    if scalar is not NOT_SCALAR:
        return scalar
    if isinstance(value, Mapping):
        return {str(k): plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise PayloadError(
        f"{where} holds a {type(value).__module__}.{type(value).__qualname__}, which cannot be sent between processes"
    )
