"""Derive the allowlists of ``pytest_tvmperf/store/ir_allowlist.py`` from what the plugin
itself stores: every IR the bundled suite stores (``baselines/artifacts/ir``) and the IR
the bundled workloads produce (the module ``--tvmperf-update`` keeps, ``rebuild.lowered_module``)
under each executor, on ``llvm`` and ``cuda`` (built without a GPU).

    python benchmarks/ir_allowlist.py            # print what it derives, and how it differs
    python benchmarks/ir_allowlist.py --check    # exit 1 when ir_allowlist.py's lists differ
    python benchmarks/ir_allowlist.py --write    # rewrite the derived block of ir_allowlist.py

A node type's fields and their kinds (a reference, or an inline int, bool, float, dtype)
come from TVM's own reflection, as ``tvm.ir.save_json`` writes them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_tvmperf.store import ir_allowlist  # noqa: E402

MODULE = ROOT / "pytest_tvmperf" / "store" / "ir_allowlist.py"
BEGIN = "# --- derived by benchmarks/ir_allowlist.py: begin"
END = "# --- derived by benchmarks/ir_allowlist.py: end ---"
#: TVM's static type indices of the values a field holds inline (tvm/ffi/c_api.h)
INLINE = {0: "none", 1: "int", 2: "bool", 3: "float", 5: "dtype"}


#: reviewed additions to what the bundled suite happens to use: node kinds and operators of
#: the same stage (scheduled TIR, lowered Relax) that other user kernels store. Pure
#: arithmetic and control flow: no native code, no calls by name (call_extern and
#: call_pure_extern are allowed as operators; the name they call must be a C math function).
EXTRA_TYPES = (
    "tirx.Evaluate",
    "tirx.IfThenElse",
    "tirx.Bind",
    "tirx.DeclBuffer",
    "tirx.AllocBuffer",
    "tirx.While",
    "tirx.Break",
    "tirx.Continue",
    "tirx.AttrStmt",
    "s_tir.MatchBufferRegion",
    "ir.TupleGetItem",
    "ir.Constant",
    "ir.PointerType",
    "ir.FuncType",
    "relax.expr.DataflowBlock",
    "relax.expr.DataflowVar",
    "relax.expr.If",
    "relax.expr.MatchCast",
    "relax.PackedFuncType",
    "relax.VDevice",
    # source locations TVMScript keeps on a user's kernel (plain data)
    "ir.Span",
    "ir.SequentialSpan",
    # a buffer's layout as TVMScript writes it (plain data)
    "tirx.Iter",
    "tirx.TileLayout",
)
EXTRA_BUILTINS = ("float", "ffi.Shape")
EXTRA_OPS = tuple(
    f"tirx.{name}"
    for name in (
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "ceil",
        "copysign",
        "cos",
        "cosh",
        "erf",
        "exp",
        "exp10",
        "exp2",
        "fabs",
        "floor",
        "fma",
        "fmod",
        "hypot",
        "isfinite",
        "isinf",
        "isnan",
        "ldexp",
        "log",
        "log10",
        "log1p",
        "log2",
        "nearbyint",
        "nextafter",
        "popcount",
        "pow",
        "round",
        "rsqrt",
        "sigmoid",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "trunc",
        "clz",
        "likely",
        "if_then_else",
        "call_extern",
        "call_pure_extern",
    )
) + tuple(f"prim.{name}" for name in ("ceil", "clz", "if_then_else", "likely", "log2"))


def stored_graphs() -> Iterable[tuple[str, dict]]:
    for path in sorted((ROOT / "baselines" / "artifacts" / "ir").glob("*.json*")):
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        yield str(path.relative_to(ROOT)), json.loads(data)


def network_cases() -> list:
    """User-style networks (torch layers of every common kind, the ONNX models the onnx
    package ships): what a user's own network stores, beyond the bundled suite (issue 33: an
    allowlist that refuses a user's ordinary network would break every gate after its record)."""
    import torch
    from torch import nn
    from pytest_tvmperf import workloads

    torch.manual_seed(0)

    class Convs(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(
                nn.Conv2d(3, 8, 7, 2, 3),
                nn.BatchNorm2d(8),
                nn.ReLU(),
                nn.MaxPool2d(3, 2, 1),
                nn.Conv2d(8, 8, 3, 1, 1, groups=8),
                nn.Conv2d(8, 16, 1),
                nn.ReLU6(),
                nn.ConvTranspose2d(16, 8, 2, 2),
                nn.AvgPool2d(2),
                nn.Upsample(scale_factor=2),
                nn.Hardswish(),
                nn.SiLU(),
                nn.LeakyReLU(0.1),
                nn.Sigmoid(),
            )
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10), nn.Softmax(-1))

        def forward(self, x):
            y = self.a(x)
            return self.head(torch.cat([y, y * 2], 1))

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(32)
            self.att = nn.MultiheadAttention(32, 4, batch_first=True)
            self.ff = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32), nn.Tanh())

        def forward(self, x):
            h = self.ln(x)
            a, _ = self.att(h, h, h)
            return self.ff(x + a).mean(-1)

    return [
        (
            "llvm",
            "vm-bytecode",
            lambda: workloads.torch_workload(Convs(), (torch.randn(1, 3, 32, 32),), name="user convs"),
        ),
        (
            "llvm",
            "vm-bytecode",
            lambda: workloads.torch_workload(Attn(), (torch.randn(2, 8, 32),), name="user attention"),
        ),
        ("llvm", "vm-bytecode", lambda: workloads.bundled_onnx("squeezenet")),
        ("llvm", "vm-bytecode", lambda: workloads.bundled_onnx("resnet50")),
        ("llvm", "vm-bytecode", lambda: workloads.bundled_onnx("shufflenet")),
        ("llvm", "vm-bytecode", lambda: workloads.bundled_onnx("densenet121")),
        ("llvm", "vm-bytecode", lambda: workloads.bundled_onnx("inception_v1")),
        ("llvm", "vm-bytecode", lambda: workloads.bundled_onnx("bvlc_alexnet")),
    ]


def built_graphs() -> Iterable[tuple[str, dict]]:
    """The IR each bundled workload stores, under each executor it runs on, per target."""
    import tvm

    from pytest_tvmperf import workloads
    from pytest_tvmperf.builder.executor_choice import get_executor
    from pytest_tvmperf.builder.rebuild import lowered_module
    from pytest_tvmperf.builder.targets import resolve_target

    db = ROOT / "baselines" / "tuning"
    cases = [
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch=1)),
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch=1, bind_params=False)),
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch="n")),
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch="n", bind_params=False)),
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch=1).with_pipeline("dlight")),
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch=1).with_pipeline("tuned")),
        ("llvm", "vm-bytecode", lambda: workloads.mlp(batch=1).with_pipeline("unfused")),
        ("llvm", "vm-bytecode", lambda: workloads.small_mlp_onnx()),
        ("llvm", "vm-bytecode", lambda: workloads.torch_mlp(batch="n")),
        ("llvm", "vm-bytecode", lambda: workloads.dla_conv("stem")),
        ("llvm", "prim", lambda: workloads.rgb2yuv(schedule="default")),
        ("llvm", "prim", lambda: workloads.rgb2yuv(schedule="parallel")),
        ("llvm", "prim", lambda: workloads.multiply()),
        ("cuda", "prim", lambda: workloads.rgb2yuv(schedule="gpu")),
        ("cuda", "vm-bytecode", lambda: workloads.dla_conv("stem")),
        ("cuda", "vm-bytecode", lambda: workloads.mlp(batch=1)),
        # CUDA graph capture: the captured regions are called through vm.builtin.cuda_graph.*
        ("cuda", "vm-cudagraph", lambda: workloads.mlp(batch=1)),
        ("cuda", "vm-cudagraph", lambda: workloads.dla_conv("stem")),
    ]
    try:
        cases += network_cases()
    except ImportError as exc:  # torch missing: derive from the rest
        print(f"  skipped the user networks: {exc}", file=sys.stderr)
    for target_name, executor, make in cases:
        try:
            workload = make()
            compiled = get_executor(executor).compile(workload, resolve_target(target_name), db)
        except Exception as exc:  # an optional extra (onnx, torch) missing: say so, derive from the rest
            print(
                f"  skipped {target_name} {executor}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}",
                file=sys.stderr,
            )
            continue
        module = lowered_module(compiled)
        if module is not None:
            yield f"{workload.name} ({target_name}, {executor})", json.loads(tvm.ir.save_json(module))


def _fields(type_key: str) -> dict[str, str]:
    from tvm_ffi import core

    info = core._lookup_or_register_type_info_from_type_key(type_key)
    fields: dict[str, str] = {}
    while info is not None:
        for field in info.fields:
            fields.setdefault(field.name, INLINE.get(field.field_static_type_index, "ref"))
        info = info.parent_type_info
    return fields


def derive(graphs: Iterable[tuple[str, dict]]) -> dict[str, Any]:
    builtins: set[str] = set()
    objects: dict[str, dict[str, str]] = {}
    data_objects: dict[str, str] = {}
    ops: set[str] = set()
    env_funcs: set[str] = set()
    extern: set[str] = set()
    calls: set[str] = set()
    attr_keys: set[str] = set()
    module_attrs: set[str] = set()
    metadata: set[str] = set()
    for _name, graph in graphs:
        nodes = graph["nodes"]
        metadata |= set(graph.get("metadata", {}))

        def string(i, nodes=nodes):
            t, d = nodes[i]["type"], nodes[i].get("data")
            if t == "ffi.String":
                return d
            if t.endswith("StringImm"):
                return string(d["value"], nodes)
            return None

        name_maps: set[int] = set()
        for node in nodes:
            kind, data = node["type"], node.get("data")
            if kind in ir_allowlist.BUILTIN_KINDS:
                builtins.add(kind)
                if kind in ("ffi.Map", "ffi.Dict"):
                    for k, v in zip(data[0::2], data[1::2]):
                        if string(k) in ir_allowlist.NAME_VALUED_ATTRS:
                            name_maps.add(v)
                continue
            if not isinstance(data, dict):
                data_objects[kind] = "str" if isinstance(data, str) else "int"
                if kind == "ir.Op":
                    ops.add(data)
                elif kind == "ir.EnvFunc":
                    env_funcs.add(data)
                continue
            objects.setdefault(kind, _fields(kind))
            if kind == "ir.IRModule":
                name_maps.add(data["global_var_map_"])
                table = nodes[data["attrs"]].get("data", {}).get("__dict__")
                if table is not None:
                    module_attrs |= {string(k) for k in nodes[table]["data"][0::2]}
            elif kind == "relax.expr.ExternFunc":
                extern.add(string(data["global_symbol"]))
            elif kind == "tirx.AttrStmt":
                attr_keys.add(string(data["attr_key"]))
            elif kind in ("ir.Call", "tirx.Call", "relax.expr.Call"):
                op = nodes[data["op"]]
                if op["type"] == "ir.Op" and op["data"] in ir_allowlist.CALL_BY_NAME_OPS:
                    calls.add(string(nodes[data["args"]]["data"][0]))
        for i, node in enumerate(nodes):
            if node["type"] in ("ffi.Map", "ffi.Dict") and i not in name_maps:
                attr_keys |= {s for s in (string(k) for k in node["data"][0::2]) if s is not None}
    import tvm
    from tvm_ffi import core

    registered = {
        core._type_index_to_type_info(i).type_key
        for i in range(64, 4096)
        if core._type_index_to_type_info(i) is not None
    }
    tvm.ir.SequentialSpan([tvm.ir.Span(tvm.ir.SourceName(""), 0, 0, 0, 0)])  # registers the span types
    registered = registered | {"ir.Span", "ir.SequentialSpan"}
    for kind in [k for k in registered if k.startswith("prim.")] + list(EXTRA_TYPES):
        if kind in registered:
            objects.setdefault(kind, _fields(kind))
    builtins |= set(EXTRA_BUILTINS)
    data_objects.setdefault("ir.SourceName", "str")  # a Span's file name (TVMScript kernels)
    data_objects.setdefault("tirx.Axis", "str")  # a layout axis's name (TVMScript kernels)
    op_names = {str(n) for n in tvm.get_global_func("ir.ListOpNames")()}
    ops |= {op for op in EXTRA_OPS if op in op_names}
    return {
        "ALLOWED_BUILTINS": builtins,
        "ALLOWED_OBJECTS": objects,
        "ALLOWED_DATA_OBJECTS": data_objects,
        "ALLOWED_OPS": ops,
        "ALLOWED_ENV_FUNCS": env_funcs,
        "ALLOWED_EXTERN_FUNCS": extern,
        "ALLOWED_CALL_NAMES": calls - ir_allowlist.MATH_FUNCTIONS,
        "ALLOWED_ATTR_KEYS": attr_keys,
        "ALLOWED_MODULE_ATTRS": module_attrs,
        "ALLOWED_METADATA": metadata,
    }


def _set(name: str, values: set[str]) -> str:
    if not values:
        return f"{name}: frozenset[str] = frozenset()\n"
    body = "".join(f"    {v!r},\n" for v in sorted(values))
    return f"{name}: frozenset[str] = frozenset({{\n{body}}})\n"


def render(derived: dict[str, Any]) -> str:
    out = [BEGIN + " (do not edit by hand: run it with --write) ---\n"]
    for name, value in derived.items():
        if name == "ALLOWED_OBJECTS":
            body = "".join(
                f"    {k!r}: MappingProxyType({dict(sorted(v.items()))!r}),\n" for k, v in sorted(value.items())
            )
            out.append(f"{name}: Mapping[str, Mapping[str, str]] = MappingProxyType({{\n{body}}})\n")
        elif name == "ALLOWED_DATA_OBJECTS":
            out.append(f"{name}: Mapping[str, str] = MappingProxyType({dict(sorted(value.items()))!r})\n")
        else:
            out.append(_set(name, value))
    out.append(END + "\n")
    return "".join(out)


def current() -> dict[str, Any]:
    return {
        name: (
            dict((k, dict(v)) for k, v in getattr(ir_allowlist, name).items())
            if name == "ALLOWED_OBJECTS"
            else dict(getattr(ir_allowlist, name))
            if name == "ALLOWED_DATA_OBJECTS"
            else set(getattr(ir_allowlist, name))
        )
        for name in (
            "ALLOWED_BUILTINS",
            "ALLOWED_OBJECTS",
            "ALLOWED_DATA_OBJECTS",
            "ALLOWED_OPS",
            "ALLOWED_ENV_FUNCS",
            "ALLOWED_EXTERN_FUNCS",
            "ALLOWED_CALL_NAMES",
            "ALLOWED_ATTR_KEYS",
            "ALLOWED_MODULE_ATTRS",
            "ALLOWED_METADATA",
        )
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when ir_allowlist.py's lists differ")
    parser.add_argument("--write", action="store_true", help="rewrite the derived block of ir_allowlist.py")
    parser.add_argument("--stored-only", action="store_true", help="derive from baselines/artifacts/ir only")
    args = parser.parse_args(argv)
    graphs = list(stored_graphs())
    stored = len(graphs)
    if not args.stored_only:
        graphs += list(built_graphs())
    derived = derive(graphs)
    have = current()
    print(f"derived from {stored} stored IR file(s) and {len(graphs) - stored} build(s) of the bundled workloads:")
    differs = False
    for name, value in derived.items():
        old = have[name]
        if name == "ALLOWED_OBJECTS":
            added, removed = sorted(set(value) - set(old)), sorted(set(old) - set(value))
            changed = sorted(k for k in set(value) & set(old) if value[k] != old[k])
        else:
            added, removed, changed = sorted(set(value) - set(old)), sorted(set(old) - set(value)), []
        print(
            f"  {name}: {len(value)}" + (f"  (+{added} -{removed} ~{changed})" if added or removed or changed else "")
        )
        differs |= bool(added or removed or changed)
    if args.write:
        text = MODULE.read_text()
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n", lambda _m: render(derived), text, flags=re.S)
        MODULE.write_text(text)
        print(f"wrote {MODULE.relative_to(ROOT)}")
        return 0
    if args.check and differs:
        print("ir_allowlist.py's lists differ from the derivation: review the difference, then run with --write")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
