"""Issue 33, code execution through baselines/: cases 1-4 and 11 (a stored IR), 5 and 18 (the
tuning database). Each attack is a change to baselines/ alone; the gate refuses it naming
the file, the entry or line, and the key or symbol, and nothing of it runs."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import tvm
from tvm import relax, te, tirx

from gitrepo import first_commit

from pytest_tvmperf.store import ir_allowlist

ROOT = Path(__file__).resolve().parent.parent

TESTS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


def _graph(module) -> dict:
    return json.loads(tvm.ir.save_json(module))


def _prim(call=None, annotate=None):
    a = te.placeholder((8,), name="A")
    body = (lambda i: a[i] + tirx.Cast("float32", call())) if call else (lambda i: a[i] * 2.0)
    func = te.create_prim_func([a, te.compute((8,), body, name="B")])
    if annotate:
        sch = tvm.s_tir.Schedule(func)
        (loop,) = sch.get_loops(sch.get_sblock("B"))
        sch.annotate(loop, *annotate)
        func = sch.mod["main"]
    return tvm.IRModule({"main": func})


def _in_front(graph: dict, *extra: dict) -> dict:
    """``graph`` with ``extra`` nodes nothing refers to in front (every reference moved)."""
    by, nodes = len(extra), list(extra)
    for node in graph["nodes"]:
        kind, data = node["type"], node.get("data")
        if ir_allowlist.BUILTIN_KINDS.get(kind) in ("refs", "pairs"):
            data = [x + by for x in data]
        elif isinstance(data, dict):
            data = {k: v + by if ir_allowlist.ALLOWED_OBJECTS[kind][k] == "ref" else v for k, v in data.items()}
        nodes.append({**node, "data": data} if "data" in node else node)
    return {**graph, "root_index": graph["root_index"] + by, "nodes": nodes}


def _attacks(marker: Path) -> dict[str, tuple[bytes, str]]:
    """Each case's planted IR file (gzip'ed) and the words the refusal must hold."""
    system = lambda: tirx.call_extern("int32", "system", f"touch {marker}")  # noqa: E731
    dangling = _in_front(
        _graph(_prim(system)),
        {"type": "ffi.String", "data": "global_symbol"},
        {"type": "ffi.String", "data": "system"},
        {"type": "ffi.Map", "data": [0, 1]},
    )
    from tvm.script import relax as R

    x = relax.Var("x", R.Tensor((8,), "float32"))
    debug = relax.Call(relax.ExternFunc("vm.builtin.invoke_debug_func"), [x], ty_args=[R.Tensor((8,), "float32")])
    builtin = tvm.IRModule({"main": relax.Function([x], debug, R.Tensor((8,), "float32"), is_pure=False)})
    external = _graph(_prim().with_attr("external_mods", ["lib"]))
    for node in external["nodes"]:
        if node.get("data") == "lib":
            node["type"], node["data"] = "ffi.Module", "c3RhdGljIGxpYnJhcnk="
    llvm = f'define float @expf(float %x) {{ call i32 @system(i8* c"touch {marker}") ret float 0.0 }}'
    deep = ('{"root_index": 0, "nodes": [' + "[" * 50_000 + "]" * 50_000 + "]}").encode()
    text = lambda g: json.dumps(g).encode()  # noqa: E731
    return {
        "case1": (text(dangling), "it calls 'system' (T.call_extern"),
        "case2": (text(_graph(builtin)), "it calls 'vm.builtin.invoke_debug_func' (a Relax ExternFunc"),
        "case3": (text(external), "its module has the attribute 'external_mods'"),
        "case4": (
            text(_graph(_prim(annotate=("pragma_import_llvm", llvm)))),
            "the attribute or annotation key 'pragma_import_llvm' (in tirx.For.annotations",
        ),
        "case11": (deep, "its JSON is nested more than 16 levels deep"),
    }


def test_planted_ir_is_refused_naming_file_entry_and_key_and_nothing_runs(project):
    """Cases 1-4 and 11: each IR, planted with its sha256 updated, is refused before TVM
    reads it: the test fails naming the file, the entry and the offending symbol or key."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    entry = project.baselines()["tests"]["test_a[llvm-prim]"]
    path = root / "baselines" / entry["ir"]["path"]
    marker = root / "owned"
    for case, (data, words) in _attacks(marker).items():
        path.write_bytes(gzip.compress(data, mtime=0))
        baselines = project.baselines()
        baselines["tests"]["test_a[llvm-prim]"]["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        project.baseline_file().write_text(json.dumps(baselines))
        result = project.run()
        result.assert_outcomes(failed=1)
        out = result.stdout.str()
        assert (
            f"baseline IR {path.relative_to(root)} (named by field ir.path of entry 'test_a[llvm-prim]' in "
            f"baselines/test_perf.json) is refused: "
        ) in out, (case, out[-3000:])
        assert words in out, (case, out[-3000:])
        assert "RecursionError" not in out and "Traceback" not in out, case
        assert not marker.exists(), case
        assert not list(root.glob(".tvmperf-cache/**/*.so")), case  # nothing was built from it


TUNED = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"], timing=False)
def test_tuned(tvmperf):
    tvmperf.check(workloads.mlp(batch=1).with_pipeline("tuned"))
"""


def test_planted_tuning_records_are_refused_and_the_ref_side_reads_the_database_from_the_ref(project):
    """Cases 5 and 18: a record whose trace annotates pragma_import_llvm, and a deeply
    nested line, are refused naming the file and the line before MetaSchedule reads them, with
    --tvmperf-baselines-ref too: today's build reads the work tree's database (issue 66), and a pull
    request that deletes it fails under the ref as it would once merged."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TUNED)
    db = root / "baselines" / "tuning"
    shutil.copytree(ROOT / "baselines" / "tuning", db)
    first_commit(root, "main")

    records = db / "database_tuning_record.json"
    lines = records.read_text().splitlines()
    original, row = lines[0], json.loads(lines[0])
    row[1][0][0].append(
        ["Annotate", ["b0", json.dumps("define float @expf(float) { ret float 0.0 }")], ["pragma_import_llvm"], []]
    )
    lines[0] = json.dumps(row)
    records.write_text("\n".join(lines) + "\n")  # the pull request's change to baselines/ alone
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tuning database file *baselines/tuning/database_tuning_record.json, line 1: "
            "refused: instruction * of its trace (Annotate) sets the annotation "
            "'pragma_import_llvm'*"
        ]
    )

    # issue 66 case 2: under a ref only the baseline side comes from it; today's build reads the work tree's
    # database (the ref's hid a deleted or re-tuned one), checked and refused alike
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baselines/tuning/database_tuning_record.json, line 1: refused*pragma_import_llvm*"])

    lines[0] = original
    lines.insert(1, "[0, " + "[" * 50_000 + "]" * 50_000 + "]")
    records.write_text("\n".join(lines) + "\n")
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*database_tuning_record.json, line 2: *nested more than 32 levels deep*"])
    assert "RecursionError" not in result.stdout.str()

    shutil.rmtree(db)  # the pull request deletes the database: it passed under the ref, and failed once merged
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tuning database*baselines/tuning*does not exist*"])
