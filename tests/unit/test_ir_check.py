"""A stored IR may only hold what the plugin's own builds store (store/ir_check.py): an
allowlist checked on the JSON graph that ``tvm.ir.save_json`` writes, before TVM reads it
(issue 33, cases 1-4 and 11)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import tvm
from tvm import relax, te, tirx

from pytest_tvmperf.store import bounded_json, ir_allowlist, ir_check, lowered_ir
from pytest_tvmperf.store.ir_check import UnsafeIR, check_graph
from pytest_tvmperf.workloads import mlp

ROOT = Path(__file__).resolve().parents[2]


def graph(module) -> dict:
    return json.loads(tvm.ir.save_json(module))


def prim(call=None, annotate: dict | None = None):
    a = te.placeholder((4,), name="A")
    body = (lambda i: a[i] + tirx.Cast("float32", call(a[i]))) if call else (lambda i: a[i] * 2.0)
    b = te.compute((4,), body, name="B")
    func = te.create_prim_func([a, b])
    if annotate:
        sch = tvm.s_tir.Schedule(func)
        (loop,) = sch.get_loops(sch.get_sblock("B"))
        for key, value in annotate.items():
            sch.annotate(loop, key, value)
        func = sch.mod["main"]
    return tvm.IRModule({"main": func})


def _shift(g: dict, by: int) -> dict:
    """``g`` with every reference moved ``by`` places (to make room for nodes in front)."""
    nodes = []
    for node in g["nodes"]:
        node = dict(node)
        kind, data = node["type"], node.get("data")
        if ir_allowlist.BUILTIN_KINDS.get(kind) in ("refs", "pairs"):
            node["data"] = [x + by for x in data]
        elif isinstance(data, dict):
            fields = ir_allowlist.ALLOWED_OBJECTS[kind]
            node["data"] = {k: (v + by if fields[k] == "ref" else v) for k, v in data.items()}
        nodes.append(node)
    return {**g, "root_index": g["root_index"] + by, "nodes": nodes}


def with_nodes_in_front(g: dict, *extra: dict) -> dict:
    shifted = _shift(g, len(extra))
    return {**shifted, "nodes": list(extra) + shifted["nodes"]}


# --- what the plugin stores passes ---------------------------------------------------------

STORED = sorted((ROOT / "baselines" / "artifacts" / "ir").glob("*.json*"))


@pytest.mark.parametrize("path", STORED, ids=[p.name for p in STORED])
def test_every_ir_the_bundled_suite_stores_passes(path):
    data = path.read_bytes()
    text = (gzip.decompress(data) if path.name.endswith(".gz") else data).decode()
    check_graph(bounded_json.loads(text, ir_check.MAX_JSON_DEPTH))


def test_the_bundled_suite_stores_some_ir():
    assert len(STORED) >= 5


def test_what_the_plugin_stores_of_a_compiled_mlp_passes():
    from pytest_tvmperf.builder.executor_choice import get_executor
    from pytest_tvmperf.builder.rebuild import lowered_module
    from pytest_tvmperf.builder.targets import resolve_target

    compiled = get_executor("vm-bytecode").compile(mlp(batch=1), resolve_target("llvm"), None)
    check_graph(graph(lowered_module(compiled)))


def test_math_functions_and_plain_kernels_pass():
    check_graph(graph(prim()))
    check_graph(graph(prim(lambda x: tirx.call_pure_extern("float32", "expf", x))))
    check_graph(graph(prim(annotate={"pragma_unroll_explicit": 1})))


def test_the_annotations_a_tuned_schedule_leaves_pass():
    """MetaSchedule's search picks its rules anew each run: a tuned ResNet-18's IR held
    ``meta_schedule.random_compute_producer``, which no stored IR of the bundled suite had, and
    its baseline could not be recorded. The keys tuning records may hold are allowed in IR too."""
    check_graph(graph(prim(annotate={"meta_schedule.random_compute_producer": 1})))
    check_graph(graph(prim(annotate={"meta_schedule.cooperative_fetch": 2})))
    with pytest.raises(UnsafeIR, match="pragma_import_llvm"):
        check_graph(graph(prim(annotate={"pragma_import_llvm": "x"})))


def test_the_lists_are_frozen_data():
    assert isinstance(ir_allowlist.ALLOWED_OPS, frozenset) and isinstance(ir_allowlist.ALLOWED_EXTERN_FUNCS, frozenset)
    with pytest.raises(TypeError):
        ir_allowlist.ALLOWED_OBJECTS["ffi.Module"] = {}  # type: ignore[index]
    assert not any(name.startswith("vm.builtin.invoke") for name in ir_allowlist.ALLOWED_EXTERN_FUNCS)
    assert (
        "pragma_import_llvm" not in ir_allowlist.ALLOWED_ATTR_KEYS
        and "external_mods" not in ir_allowlist.ALLOWED_MODULE_ATTRS
    )


# --- calls by name ----------------------------------------------------------------------------


def test_a_call_to_system_is_refused_naming_it():
    module = prim(lambda x: tirx.call_extern("int32", "system", "id > /tmp/owned"))
    with pytest.raises(UnsafeIR, match=r"it calls 'system' \(T.call_extern, node \d+\)") as info:
        check_graph(graph(module))
    assert info.value.what == "system"


@pytest.mark.parametrize(
    "make",
    [
        lambda x: tirx.call_pure_extern("int32", "popen", "x", "r"),
        lambda x: tirx.call_packed("runtime.ModuleLoadFromFile", "evil.so"),
    ],
    ids=["popen", "call_packed"],
)
def test_other_ways_of_calling_by_name_are_refused(make):
    with pytest.raises(UnsafeIR):
        check_graph(graph(prim(make)))


def test_a_dangling_global_symbol_does_not_make_a_name_callable():
    """Issue 33 case 1: {"global_symbol": "system"} in a node nothing refers to counted as a
    function of the module, so T.call_extern("system") passed. Only the root module counts."""
    g = graph(prim(lambda x: tirx.call_extern("int32", "system", "id > /tmp/owned")))
    dangling = with_nodes_in_front(
        g,
        {"type": "ffi.String", "data": "global_symbol"},
        {"type": "ffi.String", "data": "system"},
        {"type": "ffi.Map", "data": [0, 1]},
    )
    with pytest.raises(UnsafeIR, match="'system'"):
        check_graph(dangling)


def test_a_node_nothing_refers_to_is_refused():
    g = with_nodes_in_front(graph(prim()), {"type": "ffi.String", "data": "anything"})
    with pytest.raises(UnsafeIR, match=r"node 0 \(ffi.String\) is not part of the module: nothing refers to it"):
        check_graph(g)


def test_vm_builtins_are_allowed_by_exact_name_only():
    """Issue 33 case 2: vm.builtin.invoke_debug_func calls any registered global by name."""
    from tvm.script import relax as R

    x = relax.Var("x", R.Tensor((4,), "float32"))
    call = relax.Call(relax.ExternFunc("vm.builtin.invoke_debug_func"), [x], ty_args=[R.Tensor((4,), "float32")])
    evil = tvm.IRModule({"main": relax.Function([x], call, R.Tensor((4,), "float32"), is_pure=False)})
    with pytest.raises(UnsafeIR, match=r"it calls 'vm.builtin.invoke_debug_func' \(a Relax ExternFunc") as info:
        check_graph(graph(evil))
    assert info.value.what == "vm.builtin.invoke_debug_func"


def test_a_module_attribute_such_as_external_mods_is_refused():
    """Issue 33 case 3: external_mods holding a static library is linked into the build."""
    module = prim().with_attr("external_mods", ["placeholder"])
    g = graph(module)
    for node in g["nodes"]:
        if node.get("data") == "placeholder":
            node["type"], node["data"] = "ffi.Module", "c3RhdGljIGxpYnJhcnk="
    with pytest.raises(UnsafeIR, match=r"its module has the attribute 'external_mods'") as info:
        check_graph(g)
    assert info.value.what == "external_mods"


def test_a_module_node_anywhere_is_refused():
    g = graph(prim(annotate={"pragma_unroll_explicit": 1}))
    target = next(n for n in g["nodes"] if n["type"] == "int")
    target["type"], target["data"] = "ffi.Module", {"blob": 0}
    with pytest.raises(UnsafeIR, match=r"a compiled module .* of type 'ffi.Module'"):
        check_graph(g)


def test_pragma_import_llvm_is_refused():
    """Issue 33 case 4: a loop annotation carrying LLVM IR text is linked by the codegen."""
    g = graph(prim(annotate={"pragma_import_llvm": "define float @expf(float %x) { ret float 0.0 }"}))
    with pytest.raises(
        UnsafeIR,
        match=r"the attribute or annotation key 'pragma_import_llvm' \(in tirx.For"
        r".annotations",
    ) as info:
        check_graph(g)
    assert info.value.what == "pragma_import_llvm"


@pytest.mark.parametrize(
    "edit, words",
    [
        (
            lambda g: g["nodes"].__setitem__(g["root_index"], {"type": "ir.IRModule", "data": {"evil": 0}}),
            "field 'evil'",
        ),
        (lambda g: g.__setitem__("extra", 1), "top-level key 'extra'"),
        (lambda g: g.__setitem__("root_index", 0), "root_index is 0"),
        (lambda g: g["nodes"][-1]["data"].__setitem__("attrs", len(g["nodes"]) - 1), "not to an earlier node"),
        (
            lambda g: next(n for n in g["nodes"] if n["type"] == "ir.Op").__setitem__(
                "data", "tirx.tvm_call_packed_lowered"
            ),
            "operator 'tirx.tvm_call_packed_lowered'",
        ),
    ],
    ids=["unknown-field", "top-level-key", "root-not-last", "cycle", "unknown-op"],
)
def test_other_departures_from_what_tvm_writes_are_refused(edit, words):
    g = graph(prim(lambda x: tirx.call_pure_extern("float32", "expf", x)))
    edit(g)
    with pytest.raises(UnsafeIR, match=words.replace("(", r"\(")):
        check_graph(g)


def test_an_env_func_naming_another_global_is_refused():
    g = json.loads(
        gzip.decompress(sorted(p for p in STORED if b"ir.EnvFunc" in gzip.decompress(p.read_bytes()))[0].read_bytes())
    )
    next(n for n in g["nodes"] if n["type"] == "ir.EnvFunc")["data"] = "rpc.CreatePipeClient"
    with pytest.raises(UnsafeIR, match="'rpc.CreatePipeClient'"):
        check_graph(g)


# --- bounds (case 11) -------------------------------------------------------------------------


def test_deeply_nested_json_is_refused_without_recursion():
    text = '{"root_index": 0, "nodes": [' + "[" * 200_000 + "]" * 200_000 + "]}"
    with pytest.raises(bounded_json.TooDeep, match="nested more than 16 levels"):
        bounded_json.loads(text, ir_check.MAX_JSON_DEPTH)


def test_a_deeply_nested_ir_file_is_an_error_naming_the_file():
    data = gzip.compress(('{"root_index": 0, "nodes": [' + "[" * 100_000 + "]" * 100_000 + "]}").encode(), mtime=0)
    with pytest.raises(
        lowered_ir.IRFileError,
        match=r"baseline IR x.json.gz \(entry\) is refused: its JSON is nested "
        r"more than 16 levels deep",
    ):
        lowered_ir.check_safe(data, "baseline IR x.json.gz (entry)", "test_a")
    with pytest.raises(lowered_ir.IRLoadError):
        lowered_ir.decode(data)


def test_a_deep_chain_of_ir_nodes_is_refused():
    """Flat JSON, but a chain of references deeper than TVM's recursive reader survives."""
    depth = ir_check.MAX_IR_DEPTH + 10
    nodes = [{"type": "ffi.Array", "data": []}] + [{"type": "ffi.Array", "data": [i]} for i in range(depth)]
    nodes += [
        {"type": "ffi.String", "data": "tirx.noalias"},
        {"type": "ffi.Map", "data": [depth + 1, depth]},
        {"type": "ir.IRModule", "data": {"global_infos": depth + 2}},
    ]
    with pytest.raises(UnsafeIR, match=f"nested more than {ir_check.MAX_IR_DEPTH} levels deep"):
        check_graph({"root_index": len(nodes) - 1, "nodes": nodes})


def test_nesting_depth_skips_brackets_inside_strings():
    assert bounded_json.nesting_depth('{"a": "[[[[", "b": [[1], {"c": "]]\\"]"}]}', 10) == 3


def test_the_derivation_from_the_stored_ir_is_within_the_lists():
    """benchmarks/ir_allowlist.py derives the lists; what it finds in the stored IR alone
    is in them (its --check adds the bundled workloads' builds, which takes a minute)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ir_allowlist", ROOT / "benchmarks" / "ir_allowlist.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    derived = script.derive(script.stored_graphs())
    have = script.current()
    for name, value in derived.items():
        if name == "ALLOWED_OBJECTS":
            assert all(have[name][k] == v for k, v in value.items()), name
        else:
            assert set(value) <= set(have[name]), (name, set(value) - set(have[name]))


def test_a_tensor_whose_header_claims_more_bytes_than_it_has_is_refused():
    """TVM allocates what a saved tensor's header says: a stored weight claiming 2**40
    bytes would be a memory bomb."""
    import base64
    import struct

    path = next(p for p in STORED if b"ffi.Tensor" in gzip.decompress(p.read_bytes()))
    g = json.loads(gzip.decompress(path.read_bytes()))
    node = next(n for n in g["nodes"] if n["type"] == "ffi.Tensor")
    assert ir_check.tensor_problem(node["data"]) is None
    raw = bytearray(base64.b64decode(node["data"]))
    ndim = struct.unpack_from("<i", raw, 24)[0]
    struct.pack_into("<q", raw, 32, 2**37)  # the first dimension
    struct.pack_into("<q", raw, 32 + 8 * ndim, 2**40)  # and the byte size to match it
    node["data"] = base64.b64encode(bytes(raw)).decode()
    with pytest.raises(UnsafeIR, match=r"a tensor whose header .* does not match the \d+ bytes it has"):
        check_graph(g)


def test_the_cuda_graph_executors_own_build_may_be_stored():
    """The first run on a GPU (an H200) could not record vm-cudagraph: its lowered module
    calls vm.builtin.cuda_graph.run_or_capture and get_cached_alloc, which the allowlist
    did not hold. Lowered for cuda without a GPU (no kernel is compiled)."""
    from pytest_tvmperf.builder.cudagraph import CUDA_GRAPH_CONFIG
    from pytest_tvmperf.builder.pipelines import lower_relax
    from pytest_tvmperf.builder.targets import resolve_target

    workload = mlp(batch=1)
    with tvm.transform.PassContext(config=CUDA_GRAPH_CONFIG):
        lowered = lower_relax(workload.program, resolve_target("cuda").tvm_target(), workload.pipeline, None)
    g = graph(lowered)
    assert "vm.builtin.cuda_graph.run_or_capture" in json.dumps(g)
    check_graph(g)
