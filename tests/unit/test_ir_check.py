"""A stored IR may only call what a compiled workload calls (store/ir_check.py): checked on
the JSON graph that ``tvm.ir.save_json`` writes, before TVM reads it."""

from __future__ import annotations

import json

import pytest
import tvm
from tvm import relax, te, tirx

from pytest_tvmperf.store.ir_check import UnsafeIR, called_by_name, check_graph
from pytest_tvmperf.workloads import mlp


def graph(module) -> dict:
    return json.loads(tvm.ir.save_json(module))


def prim(call):
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + tirx.Cast("float32", call(a[i])), name="B")
    return tvm.IRModule({"main": te.create_prim_func([a, b])})


def test_a_call_to_system_is_refused_naming_it():
    module = prim(lambda x: tirx.call_extern("int32", "system", "id > /tmp/owned"))
    with pytest.raises(UnsafeIR, match=r"it calls 'system' \(T.call_extern\)") as info:
        check_graph(graph(module))
    assert info.value.symbol == "system"


@pytest.mark.parametrize("make", [lambda x: tirx.call_pure_extern("int32", "popen", "x", "r"),
                                  lambda x: tirx.call_packed("runtime.ModuleLoadFromFile", "evil.so")])
def test_other_ways_of_calling_by_name_are_refused(make):
    with pytest.raises(UnsafeIR):
        check_graph(graph(prim(make)))


def test_math_functions_are_allowed():
    module = prim(lambda x: tirx.call_pure_extern("float32", "expf", x))
    assert [s for s, _ in called_by_name(graph(module))] == ["expf"]
    check_graph(graph(module))


def test_a_relax_extern_func_outside_the_vm_builtins_is_refused():
    from tvm.script import relax as R

    x = relax.Var("x", R.Tensor((4,), "float32"))
    call = relax.Call(relax.ExternFunc("system"), [x], ty_args=[R.Tensor((4,), "float32")])
    evil = tvm.IRModule({"main": relax.Function([x], call, R.Tensor((4,), "float32"), is_pure=False)})
    with pytest.raises(UnsafeIR, match=r"'system' \(a Relax ExternFunc\)"):
        check_graph(graph(evil))


def test_what_the_plugin_stores_of_a_compiled_mlp_passes():
    """The lowered module kept as a baseline's IR calls VM builtins and its own kernels only."""
    from pytest_tvmperf.build.executors import get_executor
    from pytest_tvmperf.build.rebuild import lowered_module
    from pytest_tvmperf.build.targets import resolve_target

    compiled = get_executor("vm-bytecode").compile(mlp(batch=1), resolve_target("llvm"), None)
    module = lowered_module(compiled)
    names = {s for s, _ in called_by_name(graph(module))}
    check_graph(graph(module))
    assert names and all(n.startswith("vm.builtin.") for n in names), names


def test_a_graph_that_is_no_module_is_left_to_tvm():
    check_graph({"nodes": "nonsense"})
    check_graph([])
