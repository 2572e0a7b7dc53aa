"""Portable a/b: the baseline's program is stored as IR and rebuilt on the machine that
runs the gate; the old form (a compiled ``.so`` per machine) keeps working."""

from __future__ import annotations

import gzip
import hashlib
import json

import tvm

TESTS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))

@pytest.mark.tvmperf(executors=["prim"])
def test_b(tvmperf):
    tvmperf.check(workloads.multiply(m=16, n=16))
"""

OTHER_MCPU = "x86-64-v2"


def _files(project, pattern):
    return sorted((project.pytester.path / "baselines").rglob(pattern))


def _emulate_other_mcpu(project):
    """Another machine as the plugin sees it: LLVM's host CPU is another one, so the
    target (and the machine fingerprint) differ and a library built for the recording
    target is not this machine's."""
    project.monkeypatch.setattr(tvm.target.codegen, "llvm_get_system_cpu", lambda: OTHER_MCPU)


def test_update_stores_ir_and_another_mcpu_gates_a_b_against_it_rebuilt(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    entries = project.baselines()["tests"]
    assert _files(project, "*.so") == []  # no native code among the baselines
    for entry in entries.values():
        path = project.pytester.path / "baselines" / entry["ir"]["path"]
        assert path.name.endswith(".json.gz") and entry["ir"]["path"].startswith("artifacts/ir/")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["ir"]["sha256"]
        assert not any("artifact" in t for t in entry["timings"].values())
    recorded_mcpu = entries["test_a[llvm-prim]"]["target"]["mcpu"]
    assert recorded_mcpu != OTHER_MCPU

    _emulate_other_mcpu(project)
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_a[[]llvm-prim[]]*1.01 ms*1.00x [[]*[]] a/b, baseline rebuilt here*pass*",
            "*test_b[[]llvm-prim[]]*a/b, baseline rebuilt here*pass*",
        ]
    )
    # no time baseline of this machine, and yet compared a/b (code_bytes, whose size moves with
    # the target's CPU, is held for another mcpu: values/resources.py)
    held = [line for line in result.stdout.lines if "not gated" in line and "code_bytes not gated" not in line]
    assert not held, result.stdout.str()
    cache = project.pytester.path / ".tvmperf-cache"
    (library,) = cache.rglob("prim-*.so")  # multiply() is one symbolic-shape program: one IR, one library
    assert library.parent.name not in entries["test_a[llvm-prim]"]["timings"]  # built for this (other) machine
    assert library.name.startswith(f"prim-{entries['test_a[llvm-prim]']['ir']['sha256'][:32]}")
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"

    project.set_env("TVMPERF_FAKE_SCALE", "1.10")  # a real 10% slowdown is caught on the other machine
    slower = project.run()
    slower.assert_outcomes(failed=2)
    slower.stdout.fnmatch_lines(
        [
            "*time 1.01 ms -> 1.11 ms (medians, side by side); a/b ratio 1.10x (97.5% CI 1.05-1.15x), limit +5%, 45 samples*",
            "*compared: a/b, baseline rebuilt here: the baseline's IR rebuilt for this machine, timed side by side*",
        ]
    )


def test_an_old_so_baseline_still_works_and_update_migrates_it(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)
    assert len(_files(project, "*.so")) == 2 and _files(project, "*.json.gz") == []
    assert all("ir" not in e for e in project.baselines()["tests"].values())

    project.set_env("TVMPERF_TRUST_ARTIFACTS", "on")  # the old form's libraries are loaded only when trusted
    project.set_env("TVMPERF_FAKE_SCALE", "1.10")
    old = project.run()
    old.assert_outcomes(failed=2)
    old.stdout.fnmatch_lines(
        [
            "*(medians, side by side); a/b ratio 1.10x (97.5% CI 1.05-1.15x), limit +5%*",
            "*compared: the baseline's artifact timed side by side*",
        ]
    )
    # another machine cannot use the old form's library: shown, not gated
    native = tvm.target.codegen.llvm_get_system_cpu
    _emulate_other_mcpu(project)
    project.run().stdout.fnmatch_lines(["*2 test(s): time shown, not gated: no time baseline for this machine*"])
    project.monkeypatch.setattr(tvm.target.codegen, "llvm_get_system_cpu", native)
    project.monkeypatch.delenv("TVMPERF_FAKE_SCALE")

    project.run("--tvmperf-update").assert_outcomes(passed=2)  # the default form now: IR
    assert _files(project, "*.so") == []  # superseded and no longer named: deleted
    assert len(_files(project, "*.json.gz")) == 1  # one program, one IR file
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*a/b, baseline rebuilt here*pass*"])


def _entry_ir(project, test_id="test_a[llvm-prim]"):
    entry = project.baselines()["tests"][test_id]
    return project.pytester.path / "baselines" / entry["ir"]["path"]


def test_a_damaged_or_missing_ir_file_fails_the_test_naming_file_test_and_field(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    path = _entry_ir(project)
    shown = path.relative_to(project.pytester.path)
    path.write_bytes(path.read_bytes()[:100])  # truncated
    result = project.run()
    result.assert_outcomes(failed=2)  # multiply() is one symbolic-shape program: both tests name this file
    result.stdout.fnmatch_lines(
        [
            f"*baseline IR {shown} (named by field ir.path of entry 'test_a[[]llvm-prim[]]' in baselines/test_perf.json) "
            f"does not match field ir.sha256 of that entry*re-record the test with `pytest --tvmperf-update`*"
        ]
    )
    path.unlink()
    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"*baseline IR {shown} (named by field ir.path of entry*) is missing*"])
    project.run("--tvmperf-update").assert_outcomes(passed=2)  # re-recording repairs it
    assert _entry_ir(project).exists()
    project.run().assert_outcomes(passed=2)


def test_an_ir_this_tvm_cannot_load_falls_back_to_the_normalized_comparison_and_says_why(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    path = _entry_ir(project)
    data = json.loads(gzip.decompress(path.read_bytes()))
    data["nodes"][data["root_index"]]["type"] = "relax.NoSuchNodeOfAFutureTVM"  # what an IR of another TVM may hold
    data["metadata"]["tvm_version"] = "0.99.0"  # saved by another TVM (the same version's is refused: issue 33)
    path.write_bytes(gzip.compress(json.dumps(data).encode(), mtime=0))
    baselines = project.baselines()
    for entry in baselines["tests"].values():  # both tests name this file (one symbolic-shape program)
        entry["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    project.baseline_file().write_text(json.dumps(baselines))

    project.set_env("TVMPERF_FAKE_SCALE", "3")  # fail, so that the message shows the note
    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*time 1.01 ms -> 3.03 ms (stored median -> this run's); normalized ratio 3.00x (*",
            "*compared: normalized by the reference kernel*",
            "*note: baseline IR baselines/artifacts/ir/*.json.gz cannot be loaded: TVM 0.27* cannot load it (*"
            "NoSuchNodeOfAFutureTVM*); a/b timing is off for this test; the time falls back to the comparison with "
            "stored numbers (normalized)*",
        ]
    )
    assert "rebuilt here" not in result.stdout.str()


def test_a_broken_cached_library_is_rebuilt(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.run().assert_outcomes(passed=2)
    (cached, *_) = sorted((project.pytester.path / ".tvmperf-cache").rglob("prim-*.so"))
    cached.write_bytes(b"not a shared library")
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_a[[]llvm-prim[]]*a/b, baseline rebuilt here*pass*",
            "*test_b[[]llvm-prim[]]*a/b, baseline rebuilt here*pass*",
        ]
    )
    assert cached.read_bytes() != b"not a shared library"


MLP_TWO_EXECUTORS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""


def test_executors_of_one_relax_program_share_one_ir_file(project):
    project.pytester.makepyfile(test_perf=MLP_TWO_EXECUTORS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    entries = project.baselines()["tests"]
    paths = {e["ir"]["path"] for e in entries.values()}
    kernels = {
        f"artifacts/ir/{line.split()[1][:24]}.json.gz" for e in entries.values() for line in e["ir"]["functions"]
    }
    stored = {str(p.relative_to(project.pytester.path / "baselines")) for p in _files(project, "*.json.gz")}
    assert len(paths) == 1 and stored == paths | kernels  # one IR file and its kernels' files (issue 47), shared
    assert not [p for p in (project.pytester.path / "baselines").rglob("*") if ".tmp" in p.name]
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_mlp[[]llvm-vm-bytecode[]]*a/b, baseline rebuilt here*",
            "*test_mlp[[]llvm-vm-compiled[]]*a/b, baseline rebuilt here*",
        ]
    )


def test_an_ir_planted_to_run_a_command_is_refused_and_nothing_runs(project):
    """Issue 23 §1: a change to baselines/ alone (an IR calling system(), its sha256 updated)
    was rebuilt and run by the next gate. Now it is refused before TVM reads it."""
    from tvm import te, tirx

    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    path = _entry_ir(project)
    owned = project.pytester.path / "owned"
    a = te.placeholder((8,), name="A")
    b = te.compute(
        (8,), lambda i: a[i] + tirx.Cast("float32", tirx.call_extern("int32", "system", f"id > {owned}")), name="B"
    )
    planted = tvm.IRModule({"main": te.create_prim_func([a, b])})
    path.write_bytes(gzip.compress(tvm.ir.save_json(planted).encode(), mtime=0))
    baselines = project.baselines()
    for entry in baselines["tests"].values():
        entry["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    project.baseline_file().write_text(json.dumps(baselines))

    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            f"*baseline IR {path.relative_to(project.pytester.path)} (named by field ir.path of entry "
            f"'test_a[[]llvm-prim[]]' in baselines/test_perf.json) is refused: it calls 'system' (T.call_extern, node *), "
            f"which the plugin's own builds never call*Nothing of it was built or run*"
        ]
    )
    assert not owned.exists()
    assert not list(project.pytester.path.glob(".tvmperf-cache/**/*.so"))  # nothing was built from it either


PLANTED_LIBRARY = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(OWNED, "a");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
"""


def test_an_old_form_library_planted_in_baselines_is_not_loaded_unless_trusted(project):
    """Issue 23 §1: a shared library with a constructor, named by an entry's
    ``timings.<fingerprint>.artifact`` with its sha256, was dlopen'ed by the next gate.
    Now the old form's libraries are loaded only with --tvmperf-trust-artifacts=on."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler (TVM exports libraries with it)"
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)
    owned = project.pytester.path / "owned"
    source = project.pytester.path / "planted.c"
    source.write_text(PLANTED_LIBRARY.replace("OWNED", json.dumps(str(owned))))
    baselines = project.baselines()
    for entry in baselines["tests"].values():
        (timing,) = entry["timings"].values()
        so = project.pytester.path / "baselines" / timing["artifact"]["path"]
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(source)], check=True)
        timing["artifact"]["sha256"] = hashlib.sha256(so.read_bytes()).hexdigest()
    project.baseline_file().write_text(json.dumps(baselines))

    project.set_env("TVMPERF_FAKE_SCALE", "3")  # fail, so that the message shows the note
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*note: the baseline's compiled library *.so (the old form) is not loaded: it is native code*",
            "*baselines of the old form (a compiled .so) compared without a/b timing*--tvmperf-trust-artifacts=on*",
        ]
    )
    assert not owned.exists()

    # the user who accepts the risk opts in (command line, ini or environment)
    project.set_env("TVMPERF_TRUST_ARTIFACTS", "on")
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    assert owned.exists()  # loaded: in the child first (that is all the opt-in risks, and it is said)
    assert "compared without a/b timing" not in result.stdout.str()


def test_weights_are_stored_once_apart_from_the_ir_and_pruned_when_unnamed(project):
    """Issue 37: a network's bound weights made most of its IR file, one copy per test and
    per re-record. They are stored once by content, apart from the IR; the rebuilt program
    is the recorded one (it passes its a/b gate); an unnamed weight file is pruned."""
    project.pytester.makepyfile(test_perf=MLP_TWO_EXECUTORS)
    project.set_env(
        "PYTEST_ADDOPTS", "--tvmperf-baseline-weights=exact"
    )  # stored bit for bit (issue 47: not the default)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    entries = project.baselines()["tests"]
    named = {w["path"] for e in entries.values() for w in e["ir"]["weights"]}
    stored = {str(p.relative_to(project.pytester.path / "baselines")) for p in _files(project, "*.npy.gz")}
    assert named == stored and len(named) >= 2  # mlp's large weights, one file each, for both executors
    (ir,) = _files(project, "*.json.gz")
    assert ir.stat().st_size < 100_000 < sum((project.pytester.path / "baselines" / p).stat().st_size for p in named)
    project.run("--tvmperf-update").assert_outcomes(passed=2)  # a re-record adds no copy
    assert {str(p.relative_to(project.pytester.path / "baselines")) for p in _files(project, "*.npy.gz")} == stored
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_mlp[[]llvm-vm-bytecode[]]*a/b, baseline rebuilt here*"])
    project.pytester.makepyfile(test_perf=TESTS)  # the network's test is gone
    project.run("--tvmperf-update", "--tvmperf-prune").assert_outcomes(passed=2)
    assert _files(project, "*.npy.gz") == []


OFF_THE_LISTS = """
import numpy as np
import pytest
from tvm import te, tirx
from pytest_tvmperf import Workload


def kernel():
    a = te.placeholder((8,), name="A")
    # getpid() > 0 is 1: a harmless call, but one the plugin's own builds never make
    b = te.compute((8,), lambda i: a[i] + tirx.Cast("float32", tirx.call_extern("int32", "getpid") > 0), name="B")
    return Workload(name="pid", program=te.create_prim_func([a, b]).with_attr("global_symbol", "pid"), entry="pid",
                    make_inputs=lambda rng, dims: [rng.standard_normal(8).astype("float32")],
                    reference=lambda x: x + np.float32(1))


@pytest.mark.tvmperf(executors=["prim"])
def test_pid(tvmperf):
    tvmperf.check(kernel())
"""


def test_an_ir_the_gate_would_refuse_is_not_recorded_and_says_what_to_do(project):
    """Issue 33 (left over): a user program with something off the stored-IR lists was
    recorded, and every later gate then refused its baseline. The update now says so."""
    project.pytester.makepyfile(test_perf=OFF_THE_LISTS)
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: test_perf.py::test_pid[[]llvm-prim[]]: the program's IR cannot be stored as its baseline: it calls "
            "'getpid' (T.call_extern*so every later gate would refuse to rebuild it. This test writes no baseline, the "
            "others keep theirs: record it with --tvmperf-baseline-program=so*"
        ]
    )
    assert not project.baseline_file().exists() or "test_pid[llvm-prim]" not in project.baselines()["tests"]
    assert not list((project.pytester.path / "baselines").glob("artifacts/ir/*"))
    # the form the message names records it
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=1)
    assert "test_pid[llvm-prim]" in project.baselines()["tests"]
