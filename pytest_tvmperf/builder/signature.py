"""Does a workload's entry function take the arguments it will be called with? Checked
before the first call, so a forgotten ``params=`` or a reference of another shape than a
PrimFunc's output buffer is a message naming the arguments, not a raw TVM error. The
comparison (``signature_problem``) is pure."""

from __future__ import annotations

from pytest_tvmperf.values.executor_rows import PRIM_KIND

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Param:
    """One parameter: its name, and for a buffer its static shape (None: a symbolic dim) and dtype."""

    name: str
    shape: tuple[int | None, ...] | None = None
    dtype: str | None = None


@dataclass(frozen=True)
class ArgumentProblem:
    """``verdict``: "error" for a call that cannot be made, "wrong" for a reference output that differs."""

    verdict: str
    message: str


def relax_signature(program: Any, entry: str) -> list[Param]:
    return [Param(str(getattr(p, "name_hint", None) or p.name)) for p in program[entry].params]


def prim_signature(module: Any, entry: str) -> list[Param]:
    """The buffers of a PrimFunc (its parameters in TVM 0.27, ``buffer_map`` in older ones)."""
    import tvm

    func = module[entry]
    buffer_map = getattr(func, "buffer_map", None) or {}
    params = []
    for var in func.params:
        buf = buffer_map.get(var, var)
        shape = getattr(buf, "shape", None)
        if shape is None:
            params.append(Param(str(getattr(var, "name", var))))
            continue
        dims = tuple(int(d) if isinstance(d, tvm.tirx.IntImm) else None for d in shape)
        params.append(Param(str(getattr(buf, "name", var)), dims, str(buf.dtype)))
    return params


def _shape(shape: Sequence[int | None]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _fits(param: Param, shape: tuple[int, ...], dtype: str) -> bool:
    return param.shape is None or (
        len(param.shape) == len(shape)
        and all(p is None or p == s for p, s in zip(param.shape, shape))
        and (param.dtype is None or param.dtype == dtype)
    )


def signature_problem(
    name: str,
    entry: str,
    kind: str,
    params: Sequence[Param],
    inputs: Sequence[tuple[tuple[int, ...], str]],
    weights: Sequence[str],
    outputs: Sequence[tuple[tuple[int, ...], str]],
) -> ArgumentProblem | None:
    """What is wrong with calling ``entry`` (its ``params``) with ``inputs`` then the
    ``weights`` (by name), and for a PrimFunc the ``outputs`` (shape, dtype of each
    result of the reference) after them; None when the call fits."""
    names = ", ".join(p.name for p in params)
    given = len(inputs) + len(weights) + (len(outputs) if kind == PRIM_KIND else 0)
    if kind == "relax" and given != len(params):
        head = (
            f"workload {name}: its entry function {entry!r} takes {len(params)} argument(s) ({names}), but it is "
            f"given {len(inputs)} input(s) from make_inputs and {len(weights)} weight(s) from params"
        )
        if given < len(params):
            missing = [p.name for p in params[given:]]
            return ArgumentProblem(
                "error",
                f"{head}: the weights {', '.join(missing)} are missing. Pass them after the "
                f"inputs, in this order, as Workload(params=[('{missing[0]}', array), ...]), "
                f"or bind them into the program (relax.transform.BindParams)",
            )
        return ArgumentProblem(
            "error",
            f"{head}: {given - len(params)} too many; make_inputs returns the run-time "
            f"inputs only, params the weights the function takes after them",
        )
    if kind != PRIM_KIND:
        return None
    if given != len(params):
        return ArgumentProblem(
            "error",
            f"workload {name}: the PrimFunc {entry!r} takes {len(params)} buffer(s) ({names}), "
            f"but it is given {len(inputs)} input(s), {len(weights)} weight(s) and "
            f"{len(outputs)} output(s) (one per array the reference returns); outputs come "
            f"last, so make the reference return exactly what the PrimFunc writes",
        )
    for i, (shape, dtype) in enumerate(inputs):
        if not _fits(params[i], shape, dtype):
            return ArgumentProblem(
                "error",
                f"workload {name}: input {i} from make_inputs has shape {_shape(shape)} and "
                f"dtype {dtype}, but the PrimFunc's buffer {params[i].name} is "
                f"{_shape(params[i].shape or ())} {params[i].dtype}",
            )
    first_out = len(inputs) + len(weights)
    for i, (shape, dtype) in enumerate(outputs):
        param = params[first_out + i]
        if not _fits(param, shape, dtype):
            return ArgumentProblem(
                "wrong",
                f"output {i} ({param.name}): shape {_shape(param.shape or ())} {param.dtype}, "
                f"the reference has shape {_shape(shape)} {dtype}",
            )
    return None
