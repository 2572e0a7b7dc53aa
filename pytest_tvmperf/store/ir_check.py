"""Pure: may a stored IR be built and run? A baseline's IR is data that a pull request can
change, and the gate compiles and runs it (the a/b baseline rebuilt here). So before TVM
reads it, its JSON graph is checked to do only what a compiled workload does: every call
it makes by name (``T.call_extern``, ``T.call_packed``, a Relax ``ExternFunc``) must name a
function of the module itself, one of TVM's VM builtins, or a math library function.

The check reads ``tvm.ir.save_json``'s graph (``{"root_index", "nodes": [{"type",
"data"}]}``) with the standard library only: nothing of the file reaches TVM before it
has passed.
"""

from __future__ import annotations

from typing import Any, Iterator

#: C math functions a kernel may call by name (``T.call_extern("float32", "expf", x)``)
MATH_FUNCTIONS: frozenset[str] = frozenset(
    name + suffix
    for name in ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "pow", "fabs",
                 "floor", "ceil", "round", "trunc", "nearbyint", "rint", "fmod", "remainder", "erf", "erfc", "tgamma",
                 "lgamma", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
                 "acosh", "atanh", "hypot", "copysign", "fma", "fmin", "fmax", "ldexp", "frexp", "nextafter")
    for suffix in ("", "f")
) | frozenset({"__nv_expf", "__nv_exp", "__nv_logf", "__nv_log", "__nv_sqrtf", "__nv_tanhf", "__nv_erff", "__nv_powf"})

#: names a VM program calls into TVM's own runtime by
RUNTIME_PREFIXES: tuple[str, ...] = ("vm.builtin.", "vm.cuda_graph.", "runtime.cuda_graph.")

#: TIR ops whose first argument names the function called
CALL_BY_NAME_OPS: frozenset[str] = frozenset(
    prefix + name
    for prefix in ("tirx.", "tir.")
    for name in ("call_extern", "call_pure_extern", "call_packed", "call_cpacked", "tvm_call_packed",
                 "tvm_call_cpacked", "tvm_call_packed_lowered", "tvm_call_cpacked_lowered", "call_packed_lowered",
                 "call_cpacked_lowered", "tvm_call_trace_packed", "tvm_call_trace_packed_lowered")
)
#: ops that call LLVM's own intrinsics by id or name: code LLVM generates, no outside symbol
LLVM_INTRINSIC_OPS: frozenset[str] = frozenset({"tirx.call_llvm_intrin", "tirx.call_llvm_pure_intrin",
                                                "tir.call_llvm_intrin", "tir.call_llvm_pure_intrin"})


class UnsafeIR(Exception):
    """A stored IR that calls something a compiled workload does not: ``symbol`` names it."""

    def __init__(self, symbol: str, how: str) -> None:
        super().__init__(f"it calls {symbol!r} ({how}), which no compiled workload calls: only functions of the "
                         f"module itself, TVM's VM builtins and C math functions may be called by name")
        self.symbol = symbol


def _string(nodes: list[Any], index: Any) -> str | None:
    """The text of node ``index`` (an ``ffi.String`` or a ``StringImm``), else None."""
    if not isinstance(index, int) or not 0 <= index < len(nodes):
        return None
    node = nodes[index]
    if not isinstance(node, dict):
        return None
    data = node.get("data")
    if isinstance(data, str):
        return data
    if isinstance(data, dict) and "value" in data:  # a StringImm: its value is a string node
        return _string(nodes, data["value"])
    return None


def _items(nodes: list[Any], index: Any) -> list[Any]:
    node = nodes[index] if isinstance(index, int) and 0 <= index < len(nodes) else None
    data = node.get("data") if isinstance(node, dict) else None
    return data if isinstance(data, list) else []


def _defined(nodes: list[Any]) -> set[str]:
    """The names of the functions the module defines (its ``functions`` map's keys, and
    their ``global_symbol`` attributes)."""
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, dict) or node.get("type") != "ir.IRModule" or not isinstance(node.get("data"), dict):
            continue
        keys = _items(nodes, node["data"].get("functions"))[0::2]
        for key in keys:
            var = nodes[key] if isinstance(key, int) and 0 <= key < len(nodes) else None
            if isinstance(var, dict) and isinstance(var.get("data"), dict):
                name = _string(nodes, var["data"].get("name_hint"))
                if name:
                    names.add(name)
    for i, node in enumerate(nodes):  # attrs {"global_symbol": name} of those functions
        if isinstance(node, dict) and node.get("type") == "ffi.Map":
            items = _items(nodes, i)
            for k, v in zip(items[0::2], items[1::2]):
                if _string(nodes, k) == "global_symbol":
                    name = _string(nodes, v)
                    if name:
                        names.add(name)
    return names


def called_by_name(graph: Any) -> Iterator[tuple[str, str]]:
    """Every ``(symbol, how)`` the module calls by name."""
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, list):
        return
    for node in nodes:
        if not isinstance(node, dict):
            continue
        kind, data = node.get("type"), node.get("data")
        if kind == "relax.expr.ExternFunc" and isinstance(data, dict):
            yield _string(nodes, data.get("global_symbol")) or "?", "a Relax ExternFunc"
        elif kind in ("ir.Call", "tirx.Call", "tir.Call") and isinstance(data, dict):
            op_index = data.get("op")
            op = nodes[op_index] if isinstance(op_index, int) and 0 <= op_index < len(nodes) else None
            if not isinstance(op, dict) or op.get("type") != "ir.Op" or not isinstance(op.get("data"), str):
                continue
            name = op["data"]
            if name in LLVM_INTRINSIC_OPS:
                continue
            if name in CALL_BY_NAME_OPS:
                args = _items(nodes, data.get("args"))
                yield (_string(nodes, args[0]) if args else None) or "?", f"T.{name.split('.', 1)[1]}"
            elif "extern" in name or "packed" in name:  # an op of that kind this check does not know
                yield name, "an op that calls code by name"


def check_graph(graph: Any) -> None:
    """Raise :class:`UnsafeIR` naming the first symbol the module may not call."""
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    defined = _defined(nodes) if isinstance(nodes, list) else set()
    for symbol, how in called_by_name(graph):
        if symbol in defined or symbol in MATH_FUNCTIONS or symbol.startswith(RUNTIME_PREFIXES):
            continue
        raise UnsafeIR(symbol, how)
