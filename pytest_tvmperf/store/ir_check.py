"""Pure: may a stored IR be built and run? A baseline's IR is data that a pull request can
change, and the gate compiles and runs it (the a/b baseline rebuilt here). So before TVM
reads a byte of it, its JSON graph is checked against an **allowlist of what the plugin
itself stores**: every node type and field, every operator, every name called, every
attribute and annotation key must be one that the plugin's own builds put there. Anything
else (a node type, a module attribute such as ``external_mods``, an annotation such as
``pragma_import_llvm``, a builtin such as ``vm.builtin.invoke_debug_func``) is refused,
naming it. A list of what is forbidden keeps losing to a language as large as TVM IR; a
list of what the plugin writes does not grow with it.

The graph is ``tvm.ir.save_json``'s (``{"root_index", "nodes": [{"type", "data"}],
"metadata"}``), read with the standard library only. It is walked without recursion:

- only what is reachable from the root ``ir.IRModule`` counts, and a node nothing
  reaches is refused (TVM's writer never leaves one);
- every reference points to an earlier node, as TVM's writer always writes them (so the
  graph has no cycle, and its depth is measured in one pass), and depth and size are
  bounded: TVM's reader and passes recurse once per level.

The allowlists below (``ALLOWED_*``) are data, derived by ``benchmarks/ir_allowlist.py``
from every IR the bundled suite stores (``baselines/artifacts/ir``) and the IR the bundled
workloads produce under every executor; ``python benchmarks/ir_allowlist.py --check`` says
whether they are still what that derivation gives, ``--write`` rewrites them.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

#: C math functions a kernel may call by name (``T.call_pure_extern("float32", "expf", x)``):
#: the math.h names (C99), float and double forms. No other name may be called.
MATH_FUNCTIONS: frozenset[str] = frozenset(
    name + suffix
    for name in ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "pow", "fabs",
                 "floor", "ceil", "round", "trunc", "nearbyint", "rint", "fmod", "remainder", "erf", "erfc", "tgamma",
                 "lgamma", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
                 "acosh", "atanh", "hypot", "copysign", "fma", "fmin", "fmax", "ldexp", "nextafter")
    for suffix in ("", "f")
)

#: TIR ops whose first argument names the function called: that name must be a math function
CALL_BY_NAME_OPS: frozenset[str] = frozenset(
    prefix + name
    for prefix in ("tirx.", "tir.")
    for name in ("call_extern", "call_pure_extern", "call_packed", "call_cpacked", "tvm_call_packed",
                 "tvm_call_cpacked", "tvm_call_packed_lowered", "tvm_call_cpacked_lowered", "call_packed_lowered",
                 "call_cpacked_lowered", "tvm_call_trace_packed", "tvm_call_trace_packed_lowered")
)

#: the builtin (non-object) node kinds and the JSON form of their ``data``
BUILTIN_KINDS: Mapping[str, str] = MappingProxyType({
    "None": "none", "bool": "bool", "int": "int", "float": "float", "DataType": "str", "ffi.String": "str",
    "ffi.Bytes": "str", "ffi.Array": "refs", "ffi.List": "refs", "ffi.Map": "pairs", "ffi.Dict": "pairs",
    "ffi.Shape": "ints", "Device": "ints",
})
#: the field kinds of an object node: a reference to an earlier node, or a value written inline
FIELD_KINDS = frozenset({"ref", "int", "bool", "float", "dtype", "none"})

#: attributes whose value is a map keyed by names of the program (symbolic variables)
NAME_VALUED_ATTRS: frozenset[str] = frozenset({"tir_var_lower_bound", "tir_var_upper_bound"})

#: a stored IR nests 4 levels of JSON and some 50 levels of IR; these bounds are far above
#: what any workload stores and far below what TVM's recursive reader and passes survive
MAX_JSON_DEPTH = 16
MAX_IR_DEPTH = 2000
MAX_NODES = 2_000_000

# --- derived by benchmarks/ir_allowlist.py: begin (do not edit by hand: run it with --write) ---
ALLOWED_BUILTINS: frozenset[str] = frozenset({
    'DataType',
    'None',
    'bool',
    'ffi.Array',
    'ffi.Map',
    'ffi.Shape',
    'ffi.String',
    'float',
    'int',
})
ALLOWED_OBJECTS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    'ir.Call': MappingProxyType({'args': 'ref', 'attrs': 'ref', 'op': 'ref', 'span': 'ref', 'ty': 'ref', 'ty_args': 'ref'}),
    'ir.Constant': MappingProxyType({'span': 'ref', 'ty': 'ref'}),
    'ir.DictAttrs': MappingProxyType({'__dict__': 'ref'}),
    'ir.FloatImm': MappingProxyType({'span': 'ref', 'ty': 'ref', 'value': 'float'}),
    'ir.FuncType': MappingProxyType({'arg_types': 'ref', 'ret_type': 'ref', 'span': 'ref'}),
    'ir.GenericConst': MappingProxyType({'span': 'ref', 'ty': 'ref', 'value': 'ref'}),
    'ir.GlobalVar': MappingProxyType({'name_hint': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'ir.IRModule': MappingProxyType({'attrs': 'ref', 'functions': 'ref', 'global_infos': 'ref', 'global_var_map_': 'ref', 'source_map': 'ref'}),
    'ir.IntImm': MappingProxyType({'span': 'ref', 'ty': 'ref', 'value': 'ref'}),
    'ir.PointerType': MappingProxyType({'element_type': 'ref', 'span': 'ref', 'storage_scope': 'ref'}),
    'ir.SequentialSpan': MappingProxyType({'column': 'int', 'end_column': 'int', 'end_line': 'int', 'line': 'int', 'source_name': 'ref', 'spans': 'ref'}),
    'ir.Span': MappingProxyType({'column': 'int', 'end_column': 'int', 'end_line': 'int', 'line': 'int', 'source_name': 'ref'}),
    'tirx.Iter': MappingProxyType({'axis': 'ref', 'extent': 'ref', 'stride': 'ref'}),
    'tirx.TileLayout': MappingProxyType({'offset': 'ref', 'replica': 'ref', 'shard': 'ref'}),
    'ir.PrimType': MappingProxyType({'dtype': 'dtype', 'span': 'ref'}),
    'ir.Range': MappingProxyType({'extent': 'ref', 'min': 'ref', 'span': 'ref'}),
    'ir.SourceMap': MappingProxyType({'source_map': 'ref'}),
    'ir.StringImm': MappingProxyType({'span': 'ref', 'ty': 'ref', 'value': 'ref'}),
    'ir.StringType': MappingProxyType({'span': 'ref'}),
    'ir.TensorLoad': MappingProxyType({'indices': 'ref', 'source': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'ir.TensorRegion': MappingProxyType({'region': 'ref', 'source': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'ir.Tuple': MappingProxyType({'fields': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'ir.TupleGetItem': MappingProxyType({'index': 'int', 'span': 'ref', 'tuple_value': 'ref', 'ty': 'ref'}),
    'ir.TupleType': MappingProxyType({'fields': 'ref', 'span': 'ref'}),
    'ir.Type': MappingProxyType({'span': 'ref'}),
    'ir.Var': MappingProxyType({'name': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Add': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.And': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.BitwiseAnd': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.BitwiseNot': MappingProxyType({'a': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.BitwiseOr': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.BitwiseXor': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Broadcast': MappingProxyType({'lanes': 'ref', 'span': 'ref', 'ty': 'ref', 'value': 'ref'}),
    'prim.Cast': MappingProxyType({'span': 'ref', 'ty': 'ref', 'value': 'ref'}),
    'prim.Div': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.EQ': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.FloorDiv': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.FloorMod': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.GE': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.GT': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.LE': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.LShift': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.LT': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Let': MappingProxyType({'body': 'ref', 'span': 'ref', 'ty': 'ref', 'value': 'ref', 'var': 'ref'}),
    'prim.Max': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Min': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Mod': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Mul': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.NE': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Not': MappingProxyType({'a': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Or': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.RShift': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'prim.Ramp': MappingProxyType({'base': 'ref', 'lanes': 'ref', 'span': 'ref', 'stride': 'ref', 'ty': 'ref'}),
    'prim.Select': MappingProxyType({'condition': 'ref', 'false_value': 'ref', 'span': 'ref', 'true_value': 'ref', 'ty': 'ref'}),
    'prim.Shuffle': MappingProxyType({'indices': 'ref', 'span': 'ref', 'ty': 'ref', 'vectors': 'ref'}),
    'prim.Sub': MappingProxyType({'a': 'ref', 'b': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'relax.AnyType': MappingProxyType({'span': 'ref'}),
    'relax.FuncType': MappingProxyType({'derive_func': 'ref', 'params': 'ref', 'purity': 'bool', 'ret': 'ref', 'span': 'ref'}),
    'relax.PackedFuncType': MappingProxyType({'span': 'ref'}),
    'relax.ShapeType': MappingProxyType({'ndim': 'int', 'span': 'ref', 'values': 'ref'}),
    'relax.TensorType': MappingProxyType({'dtype': 'ref', 'ndim': 'int', 'shape': 'ref', 'span': 'ref', 'vdevice': 'ref'}),
    'relax.VDevice': MappingProxyType({'memory_scope': 'ref', 'target': 'ref', 'vdevice_id': 'int'}),
    'relax.expr.BindingBlock': MappingProxyType({'bindings': 'ref', 'span': 'ref'}),
    'relax.expr.DataflowBlock': MappingProxyType({'bindings': 'ref', 'span': 'ref'}),
    'relax.expr.DataflowVar': MappingProxyType({'name': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'relax.expr.ExternFunc': MappingProxyType({'attrs': 'ref', 'global_symbol': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'relax.expr.Function': MappingProxyType({'attrs': 'ref', 'body': 'ref', 'is_pure': 'bool', 'params': 'ref', 'ret_ty': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'relax.expr.If': MappingProxyType({'cond': 'ref', 'false_branch': 'ref', 'span': 'ref', 'true_branch': 'ref', 'ty': 'ref'}),
    'relax.expr.MatchCast': MappingProxyType({'span': 'ref', 'ty': 'ref', 'value': 'ref', 'var': 'ref'}),
    'relax.expr.SeqExpr': MappingProxyType({'blocks': 'ref', 'body': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'relax.expr.ShapeExpr': MappingProxyType({'span': 'ref', 'ty': 'ref', 'values': 'ref'}),
    'relax.expr.VarBinding': MappingProxyType({'span': 'ref', 'value': 'ref', 'var': 'ref'}),
    's_tir.MatchBufferRegion': MappingProxyType({'buffer': 'ref', 'source': 'ref'}),
    's_tir.SBlock': MappingProxyType({'alloc_buffers': 'ref', 'annotations': 'ref', 'body': 'ref', 'init': 'ref', 'iter_vars': 'ref', 'match_buffers': 'ref', 'name_hint': 'ref', 'reads': 'ref', 'span': 'ref', 'writes': 'ref'}),
    's_tir.SBlockRealize': MappingProxyType({'block': 'ref', 'iter_values': 'ref', 'predicate': 'ref', 'span': 'ref'}),
    'tirx.AllocBuffer': MappingProxyType({'annotations': 'ref', 'buffer': 'ref', 'span': 'ref'}),
    'tirx.AttrStmt': MappingProxyType({'attr_key': 'ref', 'body': 'ref', 'node': 'ref', 'span': 'ref', 'value': 'ref'}),
    'tirx.Bind': MappingProxyType({'span': 'ref', 'value': 'ref', 'var': 'ref'}),
    'tirx.Break': MappingProxyType({'span': 'ref'}),
    'tirx.BufferRegionType': MappingProxyType({'span': 'ref'}),
    'tirx.BufferStore': MappingProxyType({'buffer': 'ref', 'indices': 'ref', 'span': 'ref', 'value': 'ref'}),
    'tirx.BufferType': MappingProxyType({'allocated_addr': 'ref', 'data_alignment': 'int', 'dtype': 'ref', 'elem_offset': 'ref', 'layout': 'ref', 'offset_factor': 'int', 'shape': 'ref', 'span': 'ref', 'storage_scope': 'ref', 'strides': 'ref'}),
    'tirx.Continue': MappingProxyType({'span': 'ref'}),
    'tirx.DeclBuffer': MappingProxyType({'buffer': 'ref', 'data': 'ref', 'span': 'ref'}),
    'tirx.Evaluate': MappingProxyType({'span': 'ref', 'value': 'ref'}),
    'tirx.For': MappingProxyType({'annotations': 'ref', 'body': 'ref', 'extent': 'ref', 'kind': 'int', 'loop_var': 'ref', 'min': 'ref', 'span': 'ref', 'step': 'ref', 'thread_binding': 'ref'}),
    'tirx.IfThenElse': MappingProxyType({'condition': 'ref', 'else_case': 'ref', 'span': 'ref', 'then_case': 'ref'}),
    'tirx.IterVar': MappingProxyType({'dom': 'ref', 'iter_type': 'int', 'span': 'ref', 'thread_tag': 'ref', 'var': 'ref'}),
    'tirx.PrimFunc': MappingProxyType({'attrs': 'ref', 'body': 'ref', 'params': 'ref', 'ret_type': 'ref', 'span': 'ref', 'ty': 'ref'}),
    'tirx.SeqStmt': MappingProxyType({'seq': 'ref', 'span': 'ref'}),
    'tirx.While': MappingProxyType({'body': 'ref', 'condition': 'ref', 'span': 'ref'}),
})
ALLOWED_DATA_OBJECTS: Mapping[str, str] = MappingProxyType({'ffi.Tensor': 'str', 'ir.EnvFunc': 'str', 'ir.Op': 'str', 'ir.SourceName': 'str', 'tirx.Axis': 'str'})
ALLOWED_OPS: frozenset[str] = frozenset({
    'prim.ceil',
    'prim.clz',
    'prim.if_then_else',
    'prim.likely',
    'prim.log2',
    'relax.call_builtin_with_ctx',
    'relax.null_value',
    'relax.vm.alloc_storage',
    'relax.vm.alloc_tensor',
    'relax.vm.kill_object',
    'tirx.acos',
    'tirx.acosh',
    'tirx.asin',
    'tirx.asinh',
    'tirx.atan',
    'tirx.atan2',
    'tirx.atanh',
    'tirx.call_extern',
    'tirx.call_pure_extern',
    'tirx.copysign',
    'tirx.cos',
    'tirx.cosh',
    'tirx.erf',
    'tirx.exp',
    'tirx.exp10',
    'tirx.exp2',
    'tirx.fabs',
    'tirx.floor',
    'tirx.fma',
    'tirx.fmod',
    'tirx.hypot',
    'tirx.isfinite',
    'tirx.isinf',
    'tirx.isnan',
    'tirx.ldexp',
    'tirx.log',
    'tirx.log10',
    'tirx.log1p',
    'tirx.nearbyint',
    'tirx.nextafter',
    'tirx.popcount',
    'tirx.pow',
    'tirx.round',
    'tirx.rsqrt',
    'tirx.sigmoid',
    'tirx.sin',
    'tirx.sinh',
    'tirx.sqrt',
    'tirx.tan',
    'tirx.tanh',
    'tirx.trunc',
})
ALLOWED_ENV_FUNCS: frozenset[str] = frozenset({
    'tvm.relax.type.infer_by_ty_args',
})
ALLOWED_EXTERN_FUNCS: frozenset[str] = frozenset({
    'vm.builtin.alloc_shape_heap',
    'vm.builtin.check_tensor_info',
    'vm.builtin.make_shape',
    'vm.builtin.match_shape',
    'vm.builtin.reshape',
})
ALLOWED_CALL_NAMES: frozenset[str] = frozenset()
ALLOWED_ATTR_KEYS: frozenset[str] = frozenset({
    'axis',
    'buffer_dim_align',
    'global_symbol',
    'meta_schedule.tiling_structure',
    'num_input',
    'op_pattern',
    'pragma_auto_unroll_max_step',
    'pragma_unroll_explicit',
    'relax.force_pure',
    's_tir',
    'schedule_rule',
    'tir_var_lower_bound',
    'tir_var_upper_bound',
    'tirx.is_host_func',
    'tirx.is_scheduled',
    'tirx.noalias',
})
ALLOWED_MODULE_ATTRS: frozenset[str] = frozenset()
ALLOWED_METADATA: frozenset[str] = frozenset({
    'tvm_version',
})
# --- derived by benchmarks/ir_allowlist.py: end ---


class UnsafeIR(Exception):
    """A stored IR holding something the plugin's own builds never store: ``what`` names
    it (a symbol, a key, a node type), ``message`` says where and why."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what
        #: kept for callers of the first version of this check
        self.symbol = what


@dataclass(frozen=True)
class Allowlist:
    """What a stored IR may hold (the module's derived lists by default; the derivation
    script builds one from scratch to compare)."""

    builtins: frozenset[str] = ALLOWED_BUILTINS
    objects: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: ALLOWED_OBJECTS)
    data_objects: Mapping[str, str] = field(default_factory=lambda: ALLOWED_DATA_OBJECTS)
    ops: frozenset[str] = ALLOWED_OPS
    env_funcs: frozenset[str] = ALLOWED_ENV_FUNCS
    extern_funcs: frozenset[str] = ALLOWED_EXTERN_FUNCS
    call_names: frozenset[str] = ALLOWED_CALL_NAMES | MATH_FUNCTIONS
    attr_keys: frozenset[str] = ALLOWED_ATTR_KEYS
    module_attrs: frozenset[str] = ALLOWED_MODULE_ATTRS
    metadata: frozenset[str] = ALLOWED_METADATA


DEFAULT = Allowlist()


def _refuse(message: str, what: str) -> UnsafeIR:
    return UnsafeIR(message, what)


class _Graph:
    """The nodes of one graph with what the walk learns about them."""

    def __init__(self, nodes: list[Any], allow: Allowlist) -> None:
        self.nodes = nodes
        self.allow = allow
        #: per reachable node: the first place that refers to it (for messages) and its roles
        self.where: dict[int, str] = {}
        self.roles: dict[int, set[str]] = {}

    def node(self, index: int) -> tuple[str, Any]:
        node = self.nodes[index]
        return node["type"], node.get("data")

    def string(self, index: int) -> str | None:
        """The text of node ``index`` (an ``ffi.String``, or an ``ir.StringImm`` of one)."""
        kind, data = self.node(index)
        if kind == "ffi.String" and isinstance(data, str):
            return data
        if kind in ("ir.StringImm", "tirx.StringImm") and isinstance(data, dict) and isinstance(data.get("value"), int):
            value = data["value"]
            return self.string(value) if 0 <= value < index else None
        return None

    def refer(self, parent: int, child: Any, where: str, role: str = "") -> None:
        if not isinstance(child, int) or isinstance(child, bool) or not 0 <= child < parent:
            raise _refuse(f"node {parent} ({where}) refers to {child!r}, not to an earlier node as TVM's writer does",
                          where)
        self.where.setdefault(child, where)
        self.roles.setdefault(child, set()).add(role)


def _check_shape(graph: Any) -> list[Any]:
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise _refuse("it is not a tvm.ir.save_json graph (an object with a list of nodes)", "graph")
    extra = sorted(set(graph) - {"root_index", "nodes", "metadata"})
    if extra:
        raise _refuse(f"it has the top-level key {extra[0]!r}, which tvm.ir.save_json never writes", extra[0])
    nodes = graph["nodes"]
    if not nodes:
        raise _refuse("it has no nodes", "nodes")
    if len(nodes) > MAX_NODES:
        raise _refuse(f"it has {len(nodes)} nodes, more than the {MAX_NODES} a stored IR may have", "nodes")
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("type"), str) or set(node) - {"type", "data"}:
            raise _refuse(f"node {i} is not a {{\"type\", \"data\"}} object", f"node {i}")
    root = graph.get("root_index")
    if root != len(nodes) - 1 or isinstance(root, bool):
        raise _refuse(f"its root_index is {root!r}, not the last node ({len(nodes) - 1}) as TVM's writer puts it",
                      "root_index")
    return nodes


def _check_metadata(graph: dict, allow: Allowlist) -> None:
    metadata = graph.get("metadata", {})
    if not isinstance(metadata, dict):
        raise _refuse("its metadata is not an object", "metadata")
    for key, value in metadata.items():
        if key not in allow.metadata:
            raise _refuse(f"its metadata has the key {key!r}, which the plugin's own builds never store", key)
        if not isinstance(value, str) or len(value) > 200:
            raise _refuse(f"its metadata {key!r} is not a short string", key)


def saved_by(graph: Any) -> str | None:
    """The TVM version a graph says it was saved by (its ``metadata.tvm_version``)."""
    metadata = graph.get("metadata") if isinstance(graph, dict) else None
    version = metadata.get("tvm_version") if isinstance(metadata, dict) else None
    return version if isinstance(version, str) else None


def _inline_ok(kind: str, value: Any) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "dtype":
        return isinstance(value, str) and len(value) < 64
    return value is None


def _check_builtin(g: _Graph, i: int, kind: str, data: Any, form: str) -> None:
    where = f"node {i} ({kind})"
    if form == "none":
        ok = data is None
    elif form in ("bool", "int", "float"):
        ok = _inline_ok(form, data)
    elif form == "str":
        ok = isinstance(data, str)
    elif form == "ints":
        ok = isinstance(data, list) and all(_inline_ok("int", x) for x in data)
    else:  # refs, pairs
        ok = isinstance(data, list) and (form == "refs" or len(data) % 2 == 0)
    if not ok:
        raise _refuse(f"{where} has data of the wrong form", where)
    if form == "refs":
        for child in data:
            g.refer(i, child, kind)
    elif form == "pairs":
        strict = g.roles.get(i, {""}) != {"names"}
        keys_of = g.where.get(i, kind)
        for key, value in zip(data[0::2], data[1::2]):
            g.refer(i, key, kind)
            name = g.string(key)
            role = "names" if name in NAME_VALUED_ATTRS else ""
            g.refer(i, value, f"{keys_of}[{name!r}]" if name is not None else kind, role)
            if name is not None and strict and name not in g.allow.attr_keys:
                raise _refuse(f"it has the attribute or annotation key {name!r} (in {keys_of}, node {i}), "
                              "which the plugin's own builds never store", name)


#: the magic number TVM writes in front of a saved tensor
TENSOR_MAGIC = 0xDD5E40F096B4A13F


def tensor_problem(text: str) -> str | None:
    """Why the base64 text of an ``ffi.Tensor`` node is not a tensor as TVM saves it
    (magic, a CPU device, its byte size the product of its shape and its dtype, exactly
    the bytes that follow), or None. TVM allocates what the header says: a header that
    claims more than the file holds is refused here."""
    try:
        raw = base64.b64decode(text, validate=True)
        magic, _reserved, device_type, _device_id, ndim, _code, bits, lanes = struct.unpack_from("<QQiiiBBH", raw)
        if not 0 <= ndim <= 32:
            return f"a tensor of {ndim} dimensions"
        shape = struct.unpack_from(f"<{ndim}q", raw, 32)
        (size,) = struct.unpack_from("<q", raw, 32 + 8 * ndim)
    except (binascii.Error, ValueError, struct.error):
        return "a tensor that is not base64 of TVM's tensor format"
    if magic != TENSOR_MAGIC or device_type != 1:
        return "a tensor that is not TVM's saved CPU tensor"
    if any(d < 0 for d in shape) or size != math.prod(shape) * ((bits * lanes + 7) // 8) \
            or size != len(raw) - (40 + 8 * ndim):
        return f"a tensor whose header (shape {list(shape)}, {size} bytes) does not match the {len(raw)} bytes it has"
    return None


def _check_object(g: _Graph, i: int, kind: str, data: Any) -> None:
    allow = g.allow
    if kind in allow.data_objects:
        form = allow.data_objects[kind]
        if not _inline_ok(form, data) if form != "str" else not isinstance(data, str):
            raise _refuse(f"node {i} ({kind}) has data of the wrong form", kind)
        if kind == "ir.Op" and data not in allow.ops:
            raise _refuse(f"it uses the operator {data!r} (node {i}), which the plugin's own builds never use", data)
        if kind == "ffi.Tensor" and tensor_problem(data) is not None:
            raise _refuse(f"it holds {tensor_problem(data)} (node {i})", kind)
        if kind == "ir.EnvFunc" and data not in allow.env_funcs:
            raise _refuse(f"it names the global function {data!r} (an ir.EnvFunc, node {i}), which the plugin's own "
                          "builds never name", data)
        return
    fields = allow.objects.get(kind)
    if fields is None:
        what = ("a compiled module (a runtime module is native code)" if "Module" in kind and kind != "ir.IRModule"
                else "a node type")
        raise _refuse(f"it holds {what} of type {kind!r} (node {i}, in {g.where.get(i, 'the root')}), "
                      "which the plugin's own builds never store", kind)
    if not isinstance(data, dict):
        raise _refuse(f"node {i} ({kind}) has data of the wrong form", kind)
    for name, value in data.items():
        kind_of = fields.get(name)
        if kind_of is None:
            raise _refuse(f"node {i} ({kind}) has the field {name!r}, which the plugin's own builds never store",
                          f"{kind}.{name}")
        if kind_of == "ref":
            role = "names" if (kind, name) == ("ir.IRModule", "global_var_map_") else ""
            g.refer(i, value, f"{kind}.{name}", role)
        elif not _inline_ok(kind_of, value):
            raise _refuse(f"node {i} ({kind}) has field {name!r} of the wrong form", f"{kind}.{name}")


def _check_semantics(g: _Graph, i: int, kind: str, data: Any) -> None:
    """The checks on what an allowed node says: whom it calls by name, and the module's attributes."""
    allow = g.allow
    if kind == "relax.expr.ExternFunc":
        name = g.string(data.get("global_symbol", -1)) if isinstance(data.get("global_symbol"), int) else None
        if name not in allow.extern_funcs:
            raise _refuse(f"it calls {name!r} (a Relax ExternFunc, node {i}), which the plugin's own builds never "
                          "call: only the VM builtins they use may be called, each by its exact name", str(name))
    elif kind in ("ir.Call", "tirx.Call", "relax.expr.Call") and isinstance(data.get("op"), int):
        op_kind, op = g.node(data["op"])
        if op_kind == "ir.Op" and op in CALL_BY_NAME_OPS:
            args_index = data.get("args")
            args = g.node(args_index)[1] if isinstance(args_index, int) and 0 <= args_index < i else None
            name = g.string(args[0]) if isinstance(args, list) and args and isinstance(args[0], int) \
                and 0 <= args[0] < i else None
            if name not in allow.call_names:
                raise _refuse(f"it calls {name!r} (T.{op.split('.', 1)[1]}, node {i}), which the plugin's own builds "
                              "never call: only C math functions may be called by name", str(name))
    elif kind == "ir.IRModule":
        attrs = data.get("attrs")
        if isinstance(attrs, int) and 0 <= attrs < i and g.node(attrs)[0] == "ir.DictAttrs":
            table = g.node(attrs)[1].get("__dict__") if isinstance(g.node(attrs)[1], dict) else None
            pairs = g.node(table)[1] if isinstance(table, int) and 0 <= table < attrs else []
            for key in (pairs[0::2] if isinstance(pairs, list) else []):
                name = g.string(key) if isinstance(key, int) and 0 <= key < table else None
                if name not in allow.module_attrs:
                    raise _refuse(f"its module has the attribute {name!r}, which the plugin's own builds never set "
                                  "(a module attribute can link native code into the build)", str(name))
    elif kind == "tirx.AttrStmt" and isinstance(data.get("attr_key"), int):
        name = g.string(data["attr_key"])
        if name not in allow.attr_keys:
            raise _refuse(f"it has the attribute statement {name!r} (node {i}), which the plugin's own builds never "
                          "store", str(name))


def check_graph(graph: Any, allow: Allowlist = DEFAULT) -> None:
    """Raise :class:`UnsafeIR` naming the first thing in ``graph`` (a parsed
    ``tvm.ir.save_json`` text) that is not on ``allow``."""
    nodes = _check_shape(graph)
    _check_metadata(graph, allow)
    g = _Graph(nodes, allow)
    root = len(nodes) - 1
    if nodes[root]["type"] != "ir.IRModule":
        raise _refuse(f"its root is a {nodes[root]['type']!r}, not an ir.IRModule", nodes[root]["type"])
    g.roles[root] = {""}
    g.where[root] = "the root"
    for i in range(root, -1, -1):  # parents come after their children: each node is seen after all that refer to it
        if i not in g.roles:
            raise _refuse(f"node {i} ({nodes[i]['type']}) is not part of the module: nothing refers to it (TVM's "
                          "writer only writes what the module holds)", f"node {i}")
        kind, data = g.node(i)
        if kind == "ir.IRModule" and i != root:
            raise _refuse(f"it holds a second module (node {i}, in {g.where[i]})", kind)
        form = BUILTIN_KINDS.get(kind) if kind in allow.builtins else None
        if form is not None:
            _check_builtin(g, i, kind, data, form)
        elif kind in BUILTIN_KINDS:
            raise _refuse(f"it holds a {kind} (node {i}), " + "which the plugin's own builds never store", kind)
        else:
            _check_object(g, i, kind, data)
            if isinstance(data, dict):
                _check_semantics(g, i, kind, data)
    depth = [0] * len(nodes)
    for i in range(len(nodes)):  # children first: the longest path below each node in one pass
        kind, data = g.node(i)
        children: list[Any] = []
        if isinstance(data, list) and BUILTIN_KINDS.get(kind) in ("refs", "pairs"):
            children = data
        elif isinstance(data, dict):
            fields = allow.objects.get(kind, {})
            children = [v for k, v in data.items() if fields.get(k) == "ref"]
        depth[i] = 1 + max((depth[c] for c in children), default=0)
        if depth[i] > MAX_IR_DEPTH:
            raise _refuse(f"it is nested more than {MAX_IR_DEPTH} levels deep (node {i}, {kind}); the plugin's own "
                          "IR nests some 50 levels, and TVM reads IR recursively", "depth")
