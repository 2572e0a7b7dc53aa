"""What a stored IR may hold (pure data): the allowlists store/ir_check.py checks a
baseline's IR graph against. ``ALLOWED_*`` are derived by ``benchmarks/ir_allowlist.py``
from every IR the bundled suite stores and the bundled workloads produce under every
executor (``--check`` says whether they still are, ``--write`` rewrites them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

#: C math functions a kernel may call by name (``T.call_pure_extern("float32", "expf", x)``):
#: the math.h names (C99), float and double forms. No other name may be called.
MATH_FUNCTIONS: frozenset[str] = frozenset(
    name + suffix
    for name in (
        "exp exp2 exp10 expm1 log log2 log10 log1p sqrt cbrt pow fabs floor ceil round trunc nearbyint rint fmod "
        "remainder erf erfc tgamma lgamma sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh hypot "
        "copysign fma fmin fmax ldexp nextafter"
    ).split()
    for suffix in ("", "f")
)

#: The annotation keys a tuned schedule leaves in its kernels, reviewed by hand (MetaSchedule's
#: search picks its rules anew each run, so no derivation from stored IR sees them all); a
#: tuning record's trace (store/trace_check.py) and a stored IR may hold these.
#: The keys of the committed records; ``schedule_rule`` is the pooling kernels' custom rule (a
#: name MetaSchedule's search looks up under its own "s_tir.meta_schedule.<target>." prefix;
#: replaying a trace calls nothing by it; the DLA-34's records Unannotate it).
COMMITTED_ANNOTATIONS: frozenset[str] = frozenset(
    (
        "meta_schedule.parallel meta_schedule.vectorize meta_schedule.unroll_explicit meta_schedule.tiling_structure "
        "pragma_auto_unroll_max_step pragma_unroll_explicit schedule_rule meta_schedule.random_compute_producer"
    ).split()
)
#: the other keys MetaSchedule's default rules write (reviewed: numbers and markers read by
#: its own postprocessors; no ``pragma_import_*``, no key whose value becomes code)
RULE_ANNOTATIONS: frozenset[str] = frozenset(
    (
        "meta_schedule.unroll_implicit meta_schedule.cooperative_fetch meta_schedule.thread_extent_low_inclusive "
        "meta_schedule.thread_extent_high_inclusive meta_schedule.auto_tensorize meta_schedule.auto_tensorize_init "
        "meta_schedule.layout_rewrite_preproc meta_schedule.adaptive_pool_avg meta_schedule.adaptive_pool_max "
        "meta_schedule.pool_avg meta_schedule.pool_max software_pipeline_stage software_pipeline_order "
        "software_pipeline_async_stages"
    ).split()
)

#: TIR ops whose first argument names the function called: that name must be a math function
CALL_BY_NAME_OPS: frozenset[str] = frozenset(
    prefix + name
    for prefix in ("tirx.", "tir.")
    for name in (
        "call_extern call_pure_extern call_packed call_cpacked tvm_call_packed tvm_call_cpacked "
        "tvm_call_packed_lowered tvm_call_cpacked_lowered call_packed_lowered call_cpacked_lowered "
        "tvm_call_trace_packed tvm_call_trace_packed_lowered"
    ).split()
)

#: the builtin (non-object) node kinds and the JSON form of their ``data``
BUILTIN_KINDS: Mapping[str, str] = MappingProxyType(
    {"None": "none", "bool": "bool", "int": "int", "float": "float", "DataType": "str", "ffi.String": "str"}
    | {"ffi.Bytes": "str", "ffi.Array": "refs", "ffi.List": "refs", "ffi.Map": "pairs", "ffi.Dict": "pairs"}
    | {"ffi.Shape": "ints", "Device": "ints"}
)
#: attributes whose value is a map keyed by names of the program (symbolic variables)
NAME_VALUED_ATTRS: frozenset[str] = frozenset({"tir_var_lower_bound", "tir_var_upper_bound"})

# --- derived by benchmarks/ir_allowlist.py: begin (do not edit by hand: run it with --write) ---
ALLOWED_BUILTINS: frozenset[str] = frozenset(
    {
        "DataType",
        "None",
        "bool",
        "ffi.Array",
        "ffi.Map",
        "ffi.Shape",
        "ffi.String",
        "float",
        "int",
    }
)
ALLOWED_OBJECTS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "ir.Call": MappingProxyType(
            {"args": "ref", "attrs": "ref", "op": "ref", "span": "ref", "ty": "ref", "ty_args": "ref"}
        ),
        "ir.Constant": MappingProxyType({"span": "ref", "ty": "ref"}),
        "ir.DictAttrs": MappingProxyType({"__dict__": "ref"}),
        "ir.FloatImm": MappingProxyType({"span": "ref", "ty": "ref", "value": "float"}),
        "ir.FuncType": MappingProxyType({"arg_types": "ref", "ret_type": "ref", "span": "ref"}),
        "ir.GenericConst": MappingProxyType({"span": "ref", "ty": "ref", "value": "ref"}),
        "ir.GlobalVar": MappingProxyType({"name_hint": "ref", "span": "ref", "ty": "ref"}),
        "ir.IRModule": MappingProxyType(
            {"attrs": "ref", "functions": "ref", "global_infos": "ref", "global_var_map_": "ref", "source_map": "ref"}
        ),
        "ir.IntImm": MappingProxyType({"span": "ref", "ty": "ref", "value": "ref"}),
        "ir.PointerType": MappingProxyType({"element_type": "ref", "span": "ref", "storage_scope": "ref"}),
        "ir.SequentialSpan": MappingProxyType(
            {
                "column": "int",
                "end_column": "int",
                "end_line": "int",
                "line": "int",
                "source_name": "ref",
                "spans": "ref",
            }
        ),
        "ir.Span": MappingProxyType(
            {"column": "int", "end_column": "int", "end_line": "int", "line": "int", "source_name": "ref"}
        ),
        "tirx.Iter": MappingProxyType({"axis": "ref", "extent": "ref", "stride": "ref"}),
        "tirx.TileLayout": MappingProxyType({"offset": "ref", "replica": "ref", "shard": "ref"}),
        "ir.PrimType": MappingProxyType({"dtype": "dtype", "span": "ref"}),
        "ir.Range": MappingProxyType({"extent": "ref", "min": "ref", "span": "ref"}),
        "ir.SourceMap": MappingProxyType({"source_map": "ref"}),
        "ir.StringImm": MappingProxyType({"span": "ref", "ty": "ref", "value": "ref"}),
        "ir.StringType": MappingProxyType({"span": "ref"}),
        "ir.TensorLoad": MappingProxyType({"indices": "ref", "source": "ref", "span": "ref", "ty": "ref"}),
        "ir.TensorRegion": MappingProxyType({"region": "ref", "source": "ref", "span": "ref", "ty": "ref"}),
        "ir.Tuple": MappingProxyType({"fields": "ref", "span": "ref", "ty": "ref"}),
        "ir.TupleGetItem": MappingProxyType({"index": "int", "span": "ref", "tuple_value": "ref", "ty": "ref"}),
        "ir.TupleType": MappingProxyType({"fields": "ref", "span": "ref"}),
        "ir.Type": MappingProxyType({"span": "ref"}),
        "ir.Var": MappingProxyType({"name": "ref", "span": "ref", "ty": "ref"}),
        "prim.Add": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.And": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.BitwiseAnd": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.BitwiseNot": MappingProxyType({"a": "ref", "span": "ref", "ty": "ref"}),
        "prim.BitwiseOr": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.BitwiseXor": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Broadcast": MappingProxyType({"lanes": "ref", "span": "ref", "ty": "ref", "value": "ref"}),
        "prim.Cast": MappingProxyType({"span": "ref", "ty": "ref", "value": "ref"}),
        "prim.Div": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.EQ": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.FloorDiv": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.FloorMod": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.GE": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.GT": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.LE": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.LShift": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.LT": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Let": MappingProxyType({"body": "ref", "span": "ref", "ty": "ref", "value": "ref", "var": "ref"}),
        "prim.Max": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Min": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Mod": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Mul": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.NE": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Not": MappingProxyType({"a": "ref", "span": "ref", "ty": "ref"}),
        "prim.Or": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.RShift": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "prim.Ramp": MappingProxyType({"base": "ref", "lanes": "ref", "span": "ref", "stride": "ref", "ty": "ref"}),
        "prim.Select": MappingProxyType(
            {"condition": "ref", "false_value": "ref", "span": "ref", "true_value": "ref", "ty": "ref"}
        ),
        "prim.Shuffle": MappingProxyType({"indices": "ref", "span": "ref", "ty": "ref", "vectors": "ref"}),
        "prim.Sub": MappingProxyType({"a": "ref", "b": "ref", "span": "ref", "ty": "ref"}),
        "relax.AnyType": MappingProxyType({"span": "ref"}),
        "relax.FuncType": MappingProxyType(
            {"derive_func": "ref", "params": "ref", "purity": "bool", "ret": "ref", "span": "ref"}
        ),
        "relax.PackedFuncType": MappingProxyType({"span": "ref"}),
        "relax.ShapeType": MappingProxyType({"ndim": "int", "span": "ref", "values": "ref"}),
        "relax.TensorType": MappingProxyType(
            {"dtype": "ref", "ndim": "int", "shape": "ref", "span": "ref", "vdevice": "ref"}
        ),
        "relax.VDevice": MappingProxyType({"memory_scope": "ref", "target": "ref", "vdevice_id": "int"}),
        "relax.expr.BindingBlock": MappingProxyType({"bindings": "ref", "span": "ref"}),
        "relax.expr.DataflowBlock": MappingProxyType({"bindings": "ref", "span": "ref"}),
        "relax.expr.DataflowVar": MappingProxyType({"name": "ref", "span": "ref", "ty": "ref"}),
        "relax.expr.ExternFunc": MappingProxyType({"attrs": "ref", "global_symbol": "ref", "span": "ref", "ty": "ref"}),
        "relax.expr.Function": MappingProxyType(
            {
                "attrs": "ref",
                "body": "ref",
                "is_pure": "bool",
                "params": "ref",
                "ret_ty": "ref",
                "span": "ref",
                "ty": "ref",
            }
        ),
        "relax.expr.If": MappingProxyType(
            {"cond": "ref", "false_branch": "ref", "span": "ref", "true_branch": "ref", "ty": "ref"}
        ),
        "relax.expr.MatchCast": MappingProxyType({"span": "ref", "ty": "ref", "value": "ref", "var": "ref"}),
        "relax.expr.SeqExpr": MappingProxyType({"blocks": "ref", "body": "ref", "span": "ref", "ty": "ref"}),
        "relax.expr.ShapeExpr": MappingProxyType({"span": "ref", "ty": "ref", "values": "ref"}),
        "relax.expr.VarBinding": MappingProxyType({"span": "ref", "value": "ref", "var": "ref"}),
        "s_tir.MatchBufferRegion": MappingProxyType({"buffer": "ref", "source": "ref"}),
        "s_tir.SBlock": MappingProxyType(
            {
                "alloc_buffers": "ref",
                "annotations": "ref",
                "body": "ref",
                "init": "ref",
                "iter_vars": "ref",
                "match_buffers": "ref",
                "name_hint": "ref",
                "reads": "ref",
                "span": "ref",
                "writes": "ref",
            }
        ),
        "s_tir.SBlockRealize": MappingProxyType(
            {"block": "ref", "iter_values": "ref", "predicate": "ref", "span": "ref"}
        ),
        "tirx.AllocBuffer": MappingProxyType({"annotations": "ref", "buffer": "ref", "span": "ref"}),
        "tirx.AttrStmt": MappingProxyType(
            {"attr_key": "ref", "body": "ref", "node": "ref", "span": "ref", "value": "ref"}
        ),
        "tirx.Bind": MappingProxyType({"span": "ref", "value": "ref", "var": "ref"}),
        "tirx.Break": MappingProxyType({"span": "ref"}),
        "tirx.BufferRegionType": MappingProxyType({"span": "ref"}),
        "tirx.BufferStore": MappingProxyType({"buffer": "ref", "indices": "ref", "span": "ref", "value": "ref"}),
        "tirx.BufferType": MappingProxyType(
            {
                "allocated_addr": "ref",
                "data_alignment": "int",
                "dtype": "ref",
                "elem_offset": "ref",
                "layout": "ref",
                "offset_factor": "int",
                "shape": "ref",
                "span": "ref",
                "storage_scope": "ref",
                "strides": "ref",
            }
        ),
        "tirx.Continue": MappingProxyType({"span": "ref"}),
        "tirx.DeclBuffer": MappingProxyType({"buffer": "ref", "data": "ref", "span": "ref"}),
        "tirx.Evaluate": MappingProxyType({"span": "ref", "value": "ref"}),
        "tirx.For": MappingProxyType(
            {
                "annotations": "ref",
                "body": "ref",
                "extent": "ref",
                "kind": "int",
                "loop_var": "ref",
                "min": "ref",
                "span": "ref",
                "step": "ref",
                "thread_binding": "ref",
            }
        ),
        "tirx.IfThenElse": MappingProxyType(
            {"condition": "ref", "else_case": "ref", "span": "ref", "then_case": "ref"}
        ),
        "tirx.IterVar": MappingProxyType(
            {"dom": "ref", "iter_type": "int", "span": "ref", "thread_tag": "ref", "var": "ref"}
        ),
        "tirx.PrimFunc": MappingProxyType(
            {"attrs": "ref", "body": "ref", "params": "ref", "ret_type": "ref", "span": "ref", "ty": "ref"}
        ),
        "tirx.SeqStmt": MappingProxyType({"seq": "ref", "span": "ref"}),
        "tirx.While": MappingProxyType({"body": "ref", "condition": "ref", "span": "ref"}),
    }
)
ALLOWED_DATA_OBJECTS: Mapping[str, str] = MappingProxyType(
    {"ffi.Tensor": "str", "ir.EnvFunc": "str", "ir.Op": "str", "ir.SourceName": "str", "tirx.Axis": "str"}
)
ALLOWED_OPS: frozenset[str] = frozenset(
    {
        "prim.ceil",
        "prim.clz",
        "prim.if_then_else",
        "prim.likely",
        "prim.log2",
        "relax.call_builtin_with_ctx",
        "relax.null_value",
        "relax.vm.alloc_storage",
        "relax.vm.alloc_tensor",
        "relax.vm.kill_object",
        "tirx.acos",
        "tirx.acosh",
        "tirx.asin",
        "tirx.asinh",
        "tirx.atan",
        "tirx.atan2",
        "tirx.atanh",
        "tirx.call_extern",
        "tirx.call_pure_extern",
        "tirx.copysign",
        "tirx.cos",
        "tirx.cosh",
        "tirx.erf",
        "tirx.exp",
        "tirx.exp10",
        "tirx.exp2",
        "tirx.fabs",
        "tirx.floor",
        "tirx.fma",
        "tirx.fmod",
        "tirx.hypot",
        "tirx.isfinite",
        "tirx.isinf",
        "tirx.isnan",
        "tirx.ldexp",
        "tirx.log",
        "tirx.log10",
        "tirx.log1p",
        "tirx.nearbyint",
        "tirx.nextafter",
        "tirx.popcount",
        "tirx.pow",
        "tirx.round",
        "tirx.rsqrt",
        "tirx.sigmoid",
        "tirx.sin",
        "tirx.sinh",
        "tirx.sqrt",
        "tirx.tan",
        "tirx.tanh",
        "tirx.trunc",
    }
)
ALLOWED_ENV_FUNCS: frozenset[str] = frozenset(
    {
        "tvm.relax.type.infer_by_ty_args",
    }
)
ALLOWED_EXTERN_FUNCS: frozenset[str] = frozenset(
    {
        "vm.builtin.alloc_shape_heap",
        "vm.builtin.check_tensor_info",
        "vm.builtin.cuda_graph.get_cached_alloc",
        "vm.builtin.cuda_graph.run_or_capture",
        "vm.builtin.make_shape",
        "vm.builtin.match_shape",
        "vm.builtin.reshape",
    }
)
ALLOWED_CALL_NAMES: frozenset[str] = frozenset()
ALLOWED_ATTR_KEYS: frozenset[str] = frozenset(
    {
        "axis",
        "buffer_dim_align",
        "global_symbol",
        "meta_schedule.tiling_structure",
        "num_input",
        "op_pattern",
        "pragma_auto_unroll_max_step",
        "pragma_unroll_explicit",
        "relax.force_pure",
        "s_tir",
        "schedule_rule",
        "tir_var_lower_bound",
        "tir_var_upper_bound",
        "tirx.is_host_func",
        "tirx.is_scheduled",
        "tirx.noalias",
    }
)
ALLOWED_MODULE_ATTRS: frozenset[str] = frozenset()
ALLOWED_METADATA: frozenset[str] = frozenset(
    {
        "tvm_version",
    }
)
# --- derived by benchmarks/ir_allowlist.py: end ---


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
    attr_keys: frozenset[str] = ALLOWED_ATTR_KEYS | COMMITTED_ANNOTATIONS | RULE_ANNOTATIONS
    module_attrs: frozenset[str] = ALLOWED_MODULE_ATTRS
    metadata: frozenset[str] = ALLOWED_METADATA


DEFAULT = Allowlist()
