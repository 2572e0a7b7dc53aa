"""Inputs of the baseline program's own signature, for an a/b comparison across a change
of input shapes: the baseline rebuilt from its IR cannot run on today's inputs, so it is
timed on inputs made for its own entry's parameters (a PrimFunc's buffers, outputs
included; a Relax function's tensor parameters), side by side with today's program on
today's inputs, both at the same moment on this machine.

:func:`plan_own_inputs` (pure): the parameters (read off the stored IR in the session's
child) to the tensors to make, or None and why not. :func:`own_arrays` makes them: floats
get the seeded weights' values (store/seeded.py: finite, never zero), integers and
booleans zeros (an integer input may index an axis: 0 is in range of every non-empty
one; the program runs once in the child before the session runs it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from pytest_tvmperf.builder.signature import Param
from pytest_tvmperf.store.seeded import seeded_values
from pytest_tvmperf.values.seeded_weight import DTYPES, SeededWeight
from pytest_tvmperf.values.executor_rows import PRIM_KIND

#: the dtypes an input of the baseline's own may be made in (their byte sizes)
INPUT_DTYPES = {**DTYPES, **{f"{u}int{bits}": bits // 8 for u in ("", "u") for bits in (8, 16, 32, 64)}, "bool": 1}
#: the most parameters read off a stored entry (a reply from the child is data)
MAX_PARAMS = 4096
#: changed shapes named in a mode, the rest counted
SHOWN_CHANGES = 3


@dataclass(frozen=True)
class TensorSpec:
    """One tensor to make: its parameter's name, static shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * INPUT_DTYPES[self.dtype]


@dataclass(frozen=True)
class OwnInputs:
    """The baseline program's own ``args`` and, for a PrimFunc, the ``outputs`` it writes
    (passed last), with what changed from today's (``shapes changed: A 16384 -> 20480``)."""

    args: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    changed: str

    def out_specs(self) -> list[tuple[tuple[int, ...], str]]:
        return [(t.shape, t.dtype) for t in self.outputs]


def shape_text(shape: Sequence[int | None]) -> str:
    """``16384``, ``1x3x224x224``, ``?x4`` (a dynamic dim), ``()`` (a scalar)."""
    return "x".join("?" if d is None else str(d) for d in shape) if len(shape) else "()"


def changes(
    specs: Sequence[TensorSpec], today: Sequence[tuple[Sequence[int], str]], what: str = "argument"
) -> list[str]:
    """``A 16384 -> 20480`` for each tensor whose shape or dtype is not today's, and a changed count."""
    out = []
    for spec, (shape, dtype) in zip(specs, today):
        shape = tuple(int(d) for d in shape)
        if spec.shape != shape or spec.dtype != str(dtype):
            then = shape_text(spec.shape) + ("" if spec.dtype == str(dtype) else f" {spec.dtype}")
            now = shape_text(shape) + ("" if spec.dtype == str(dtype) else f" {dtype}")
            out.append(f"{spec.name} {then} -> {now}")
    if len(specs) != len(today):
        out.append(f"{len(specs)} {what}(s) -> {len(today)}")
    return out


def plan_own_inputs(
    params: Sequence[Param],
    kind: str,
    today_args: Sequence[tuple[Sequence[int], str]],
    today_outputs: Sequence[tuple[Sequence[int], str]],
    max_bytes: int,
) -> tuple[OwnInputs | None, str]:
    """The baseline entry's own arguments from its ``params`` (``prim``: a PrimFunc's
    buffers, the last ``len(today_outputs)`` its outputs; ``relax``: every parameter an
    argument), or None and why not: a parameter that is not a tensor of a static shape and
    an allowed dtype, or more than ``max_bytes`` in all. ``today_*``: (shape, dtype) of
    today's arguments and outputs, to say what changed."""
    if len(params) > MAX_PARAMS:
        return None, f"its entry takes {len(params)} parameters, more than {MAX_PARAMS}"
    specs: list[TensorSpec] = []
    for i, param in enumerate(params):
        what = f"its parameter {param.name} (argument {i})"
        if param.shape is None and param.dtype is None:
            return None, f"{what} is not a tensor"
        if param.shape is None:
            return None, f"{what} has no static shape"
        if any(d is None for d in param.shape):
            return None, f"{what} has a dynamic shape ({shape_text(param.shape)})"
        if any(d < 0 for d in param.shape if d is not None):
            return None, f"{what} has a negative dimension ({shape_text(param.shape)})"
        if param.dtype not in INPUT_DTYPES:
            return None, f"{what} has dtype {param.dtype}, not one inputs are made in ({', '.join(INPUT_DTYPES)})"
        assert param.shape is not None and param.dtype is not None
        specs.append(TensorSpec(param.name, tuple(int(d) for d in param.shape if d is not None), param.dtype))
    outputs = len(today_outputs) if kind == PRIM_KIND else 0
    if kind == PRIM_KIND and len(specs) <= outputs:
        return None, f"its entry takes {len(specs)} buffer(s), no more than the {outputs} output(s) it writes"
    args, outs = (specs[: len(specs) - outputs], specs[len(specs) - outputs :]) if outputs else (specs, [])
    total = sum(t.nbytes for t in specs)
    if total > max_bytes:
        return None, (
            f"its inputs would take {total / 2**20:.1f} MiB, more than the {max_bytes / 2**20:g} MiB a stored "
            f"program may (raise $TVMPERF_MAX_IR_MB if this is your own program)"
        )
    today_outputs = today_outputs if kind == PRIM_KIND else ()  # a Relax function returns its outputs
    changed = changes(args, today_args) + changes(outs, today_outputs, "output")
    if not changed:
        return None, "its entry takes the shapes and dtypes of today's inputs"
    shown = changed[:SHOWN_CHANGES]
    more = f" and {len(changed) - SHOWN_CHANGES} more" if len(changed) > SHOWN_CHANGES else ""
    same_kinds = len(args) == len(today_args) and len(outs) == len(today_outputs)
    same_kinds = same_kinds and all(
        t.dtype == str(d) for t, (_, d) in zip((*args, *outs), (*today_args, *today_outputs))
    )
    what = "shapes changed" if same_kinds else "inputs changed"  # another count or dtype: not shapes alone
    return OwnInputs(tuple(args), tuple(outs), f"{what}: {', '.join(shown)}{more}"), ""


def own_arrays(specs: Sequence[TensorSpec]) -> list[np.ndarray]:
    """The tensors of ``specs``: floats seeded as the weights are (``seeded-v1``, by position), else zeros."""
    out = []
    for position, spec in enumerate(specs):
        if spec.dtype in DTYPES:
            out.append(seeded_values(SeededWeight(spec.dtype, spec.shape, ""), position).astype(spec.dtype))
        else:
            out.append(np.zeros(spec.shape, dtype=spec.dtype))
    return out


def params_from_json(reply: Any) -> list[Param]:
    """The parameters in the child's reply (``[{"name", "shape", "dtype"}, ...]``), checked
    (the child read them off an IR from the repository): ValueError saying what is wrong."""
    if not isinstance(reply, list) or len(reply) > MAX_PARAMS:
        raise ValueError(f"not a list of at most {MAX_PARAMS} parameters")
    params = []
    for item in reply:
        if not isinstance(item, dict):
            raise ValueError("a parameter is not an object")
        name, shape, dtype = item.get("name"), item.get("shape"), item.get("dtype")
        if not isinstance(name, str) or len(name) > 200 or not name.isprintable():
            raise ValueError("a parameter's name is not a printable string of at most 200 characters")
        if shape is not None and (
            not isinstance(shape, list)
            or len(shape) > 16
            or not all(d is None or (isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40) for d in shape)
        ):
            raise ValueError(f"parameter {name}'s shape is not a list of at most 16 dimensions")
        if dtype is not None and (not isinstance(dtype, str) or len(dtype) > 32 or not dtype.isprintable()):
            raise ValueError(f"parameter {name}'s dtype is not a short string")
        params.append(Param(name, None if shape is None else tuple(shape), dtype))
    return params


def params_as_json(params: Sequence[Param]) -> list[dict[str, Any]]:
    return [{"name": p.name, "shape": None if p.shape is None else list(p.shape), "dtype": p.dtype} for p in params]


def relax_params(program: Any, entry: str) -> list[Param]:
    """A Relax function's parameters: each tensor's static dims (None: symbolic) and dtype."""
    import tvm

    params = []
    for p in program[entry].params:
        ty = getattr(p, "struct_info", None) if hasattr(type(p), "struct_info") else getattr(p, "ty", None)
        name = str(getattr(p, "name_hint", None) or getattr(p, "name", p))
        tensor = getattr(tvm.relax, "TensorStructInfo", None) or getattr(tvm.relax, "TensorType", None)
        if tensor is None or not isinstance(ty, tensor):
            params.append(Param(name))
            continue
        dtype = str(ty.dtype)
        values = getattr(getattr(ty, "shape", None), "values", None)
        dims = (
            None if values is None else tuple(int(d.value) if isinstance(d, tvm.tirx.IntImm) else None for d in values)
        )
        params.append(Param(name, dims, dtype))
    return params
