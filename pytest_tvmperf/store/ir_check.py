"""Pure: may a stored IR be built and run? A baseline's IR is data that a pull request can
change, and the gate compiles and runs it. So before TVM reads a byte of it, its JSON graph
is checked against an **allowlist of what the plugin itself stores** (store/ir_allowlist.py):
every node type and field, operator, name called, attribute and annotation key. Anything
else (a module attribute such as ``external_mods``, an annotation such as
``pragma_import_llvm``, a builtin such as ``vm.builtin.invoke_debug_func``) is refused,
naming it. A list of what is forbidden keeps losing to a language as large as TVM IR; a
list of what the plugin writes does not grow with it.

The graph is ``tvm.ir.save_json``'s (``{"root_index", "nodes": [{"type", "data"}],
"metadata"}``), walked without recursion: a node the root ``ir.IRModule`` does not reach is
refused (TVM's writer never leaves one); every reference points to an earlier node, as
TVM's writer writes them (no cycle: depth is measured in one pass); depth and size are
bounded, since TVM's reader and passes recurse once per level.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

from pytest_tvmperf.store.ir_allowlist import BUILTIN_KINDS, CALL_BY_NAME_OPS, DEFAULT, NAME_VALUED_ATTRS, Allowlist

#: a stored IR nests 4 levels of JSON and some 50 levels of IR; these bounds are far above
#: what any workload stores and far below what TVM's recursive reader and passes survive
MAX_JSON_DEPTH = 16
MAX_IR_DEPTH = 2000
MAX_NODES = 2_000_000


class UnsafeIR(Exception):
    """A stored IR holding something the plugin's own builds never store: ``what`` names
    it (a symbol, a key, a node type), ``message`` says where and why."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


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
            raise UnsafeIR(
                f"node {parent} ({where}) refers to {child!r}, not to an earlier node as TVM's writer does", where
            )
        self.where.setdefault(child, where)
        self.roles.setdefault(child, set()).add(role)


def _check_shape(graph: Any) -> list[Any]:
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise UnsafeIR("it is not a tvm.ir.save_json graph (an object with a list of nodes)", "graph")
    if extra := sorted(set(graph) - {"root_index", "nodes", "metadata"}):
        raise UnsafeIR(f"it has the top-level key {extra[0]!r}, which tvm.ir.save_json never writes", extra[0])
    nodes = graph["nodes"]
    if not nodes:
        raise UnsafeIR("it has no nodes", "nodes")
    if len(nodes) > MAX_NODES:
        raise UnsafeIR(f"it has {len(nodes)} nodes, more than the {MAX_NODES} a stored IR may have", "nodes")
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("type"), str) or set(node) - {"type", "data"}:
            raise UnsafeIR(f'node {i} is not a {{"type", "data"}} object', f"node {i}")
    root = graph.get("root_index")
    if root != len(nodes) - 1 or isinstance(root, bool):
        raise UnsafeIR(
            f"its root_index is {root!r}, not the last node ({len(nodes) - 1}) as TVM's writer puts it", "root_index"
        )
    return nodes


def _check_metadata(graph: dict, allow: Allowlist) -> None:
    metadata = graph.get("metadata", {})
    if not isinstance(metadata, dict):
        raise UnsafeIR("its metadata is not an object", "metadata")
    for key, value in metadata.items():
        if key not in allow.metadata:
            raise UnsafeIR(f"its metadata has the key {key!r}, which the plugin's own builds never store", key)
        if not isinstance(value, str) or len(value) > 200:
            raise UnsafeIR(f"its metadata {key!r} is not a short string", key)


def saved_by(graph: Any) -> str | None:
    """The TVM version a graph says it was saved by (its ``metadata.tvm_version``)."""
    metadata = graph.get("metadata") if isinstance(graph, dict) else None
    version = metadata.get("tvm_version") if isinstance(metadata, dict) else None
    return version if isinstance(version, str) else None


def _inline_ok(kind: str, value: Any) -> bool:
    if kind in ("int", "float"):
        return isinstance(value, int if kind == "int" else (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "dtype":
        return isinstance(value, str) and len(value) < 64
    return value is None


def _check_builtin(g: _Graph, i: int, kind: str, data: Any, form: str) -> None:
    where = f"node {i} ({kind})"
    if form in ("none", "bool", "int", "float"):
        ok = _inline_ok(form, data)
    elif form == "str":
        ok = isinstance(data, str)
    elif form == "ints":
        ok = isinstance(data, list) and all(_inline_ok("int", x) for x in data)
    else:  # refs, pairs
        ok = isinstance(data, list) and (form == "refs" or len(data) % 2 == 0)
    if not ok:
        raise UnsafeIR(f"{where} has data of the wrong form", where)
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
                raise UnsafeIR(
                    f"it has the attribute or annotation key {name!r} (in {keys_of}, node {i}), "
                    "which the plugin's own builds never store",
                    name,
                )


#: the magic number TVM writes in front of a saved tensor
TENSOR_MAGIC = 0xDD5E40F096B4A13F


def tensor_problem(text: str) -> str | None:
    """Why the base64 text of an ``ffi.Tensor`` node is not a tensor as TVM saves it (magic,
    a CPU device, a byte size of its shape and dtype, exactly that many bytes following, or
    none: a seeded weight), or None. TVM allocates what the header says: a header claiming
    more than the file holds is refused here."""
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
    if (
        any(d < 0 for d in shape)
        or size != math.prod(shape) * ((bits * lanes + 7) // 8)
        or len(raw) - (40 + 8 * ndim) not in (size, 0)
    ):  # its data, or none (a seeded weight: store/seeded.py)
        return f"a tensor whose header (shape {list(shape)}, {size} bytes) does not match the {len(raw)} bytes it has"
    return None


def _check_object(g: _Graph, i: int, kind: str, data: Any) -> None:
    allow = g.allow
    if kind in allow.data_objects:
        form = allow.data_objects[kind]
        if not _inline_ok(form, data) if form != "str" else not isinstance(data, str):
            raise UnsafeIR(f"node {i} ({kind}) has data of the wrong form", kind)
        if kind == "ir.Op" and data not in allow.ops:
            raise UnsafeIR(f"it uses the operator {data!r} (node {i}), which the plugin's own builds never use", data)
        if kind == "ffi.Tensor" and tensor_problem(data) is not None:
            raise UnsafeIR(f"it holds {tensor_problem(data)} (node {i})", kind)
        if kind == "ir.EnvFunc" and data not in allow.env_funcs:
            raise UnsafeIR(
                f"it names the global function {data!r} (an ir.EnvFunc, node {i}), which the plugin's own "
                "builds never name",
                data,
            )
        return
    fields = allow.objects.get(kind)
    if fields is None:
        what = (
            "a compiled module (a runtime module is native code)"
            if "Module" in kind and kind != "ir.IRModule"
            else "a node type"
        )
        raise UnsafeIR(
            f"it holds {what} of type {kind!r} (node {i}, in {g.where.get(i, 'the root')}), "
            "which the plugin's own builds never store",
            kind,
        )
    if not isinstance(data, dict):
        raise UnsafeIR(f"node {i} ({kind}) has data of the wrong form", kind)
    for name, value in data.items():
        kind_of = fields.get(name)
        if kind_of is None:
            raise UnsafeIR(
                f"node {i} ({kind}) has the field {name!r}, which the plugin's own builds never store", f"{kind}.{name}"
            )
        if kind_of == "ref":
            role = "names" if (kind, name) == ("ir.IRModule", "global_var_map_") else ""
            g.refer(i, value, f"{kind}.{name}", role)
        elif not _inline_ok(kind_of, value):
            raise UnsafeIR(f"node {i} ({kind}) has field {name!r} of the wrong form", f"{kind}.{name}")


def _check_semantics(g: _Graph, i: int, kind: str, data: Any) -> None:
    """The checks on what an allowed node says: whom it calls by name, and the module's attributes."""
    allow = g.allow
    if kind == "relax.expr.ExternFunc":
        name = g.string(data.get("global_symbol", -1)) if isinstance(data.get("global_symbol"), int) else None
        if name not in allow.extern_funcs:
            raise UnsafeIR(
                f"it calls {name!r} (a Relax ExternFunc, node {i}), which the plugin's own builds never "
                "call: only the VM builtins they use may be called, each by its exact name",
                str(name),
            )
    elif kind in ("ir.Call", "tirx.Call", "relax.expr.Call") and isinstance(data.get("op"), int):
        op_kind, op = g.node(data["op"])
        if op_kind == "ir.Op" and op in CALL_BY_NAME_OPS:
            args_index = data.get("args")
            args = g.node(args_index)[1] if isinstance(args_index, int) and 0 <= args_index < i else None
            name = (
                g.string(args[0])
                if isinstance(args, list) and args and isinstance(args[0], int) and 0 <= args[0] < i
                else None
            )
            if name not in allow.call_names:
                raise UnsafeIR(
                    f"it calls {name!r} (T.{op.split('.', 1)[1]}, node {i}), which the plugin's own builds "
                    "never call: only C math functions may be called by name",
                    str(name),
                )
    elif kind == "ir.IRModule":
        attrs = data.get("attrs")
        if isinstance(attrs, int) and 0 <= attrs < i and g.node(attrs)[0] == "ir.DictAttrs":
            table = g.node(attrs)[1].get("__dict__") if isinstance(g.node(attrs)[1], dict) else None
            pairs = g.node(table)[1] if isinstance(table, int) and 0 <= table < attrs else []
            for key in pairs[0::2] if isinstance(pairs, list) else []:
                name = g.string(key) if isinstance(key, int) and 0 <= key < table else None
                if name not in allow.module_attrs:
                    raise UnsafeIR(
                        f"its module has the attribute {name!r}, which the plugin's own builds never set "
                        "(a module attribute can link native code into the build)",
                        str(name),
                    )
    elif kind == "tirx.AttrStmt" and isinstance(data.get("attr_key"), int):
        name = g.string(data["attr_key"])
        if name not in allow.attr_keys:
            raise UnsafeIR(
                f"it has the attribute statement {name!r} (node {i}), which the plugin's own builds never store",
                str(name),
            )


def check_graph(graph: Any, allow: Allowlist = DEFAULT) -> None:
    """Raise :class:`UnsafeIR` naming the first thing in ``graph`` (a parsed
    ``tvm.ir.save_json`` text) that is not on ``allow``."""
    nodes = _check_shape(graph)
    _check_metadata(graph, allow)
    g = _Graph(nodes, allow)
    root = len(nodes) - 1
    if nodes[root]["type"] != "ir.IRModule":
        raise UnsafeIR(f"its root is a {nodes[root]['type']!r}, not an ir.IRModule", nodes[root]["type"])
    g.roles[root] = {""}
    g.where[root] = "the root"
    for i in range(root, -1, -1):  # parents come after their children: each node is seen after all that refer to it
        if i not in g.roles:
            raise UnsafeIR(
                f"node {i} ({nodes[i]['type']}) is not part of the module: nothing refers to it (TVM's "
                "writer only writes what the module holds)",
                f"node {i}",
            )
        kind, data = g.node(i)
        if kind == "ir.IRModule" and i != root:
            raise UnsafeIR(f"it holds a second module (node {i}, in {g.where[i]})", kind)
        form = BUILTIN_KINDS.get(kind) if kind in allow.builtins else None
        if form is not None:
            _check_builtin(g, i, kind, data, form)
        elif kind in BUILTIN_KINDS:
            raise UnsafeIR(f"it holds a {kind} (node {i}), " + "which the plugin's own builds never store", kind)
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
            raise UnsafeIR(
                f"it is nested more than {MAX_IR_DEPTH} levels deep (node {i}, {kind}); the plugin's own "
                "IR nests some 50 levels, and TVM reads IR recursively",
                "depth",
            )
