"""The resources a deployment pays (issue 48), gated as a user runs pytest: a dynamic-batch
Relax model whose change allocates more at run time fails on alloc_bytes alone (timing and
the simulated cost off, its planned storage unchanged), an unrolled TE loop fails on
code_bytes, vm-compiled (which cannot read its allocations) is n/a with the reason and
passes, and a baseline recorded before these metrics gates as before and says so once."""

from __future__ import annotations

import json

from chain_workload import CHAIN_WORKLOAD

TESTS = (
    CHAIN_WORKLOAD
    + """
from tvm import s_tir, te


def scale(unroll):
    a = te.placeholder((4096,), name="A")
    b = te.compute((4096,), lambda i: te.sqrt(a[i]) * 2.0 + a[i], name="B")
    func = te.create_prim_func([a, b])
    if unroll:
        sch = s_tir.Schedule(func)
        (i,) = sch.get_loops(sch.get_sblock("B"))
        sch.unroll(sch.split(i, factors=[None, 64])[1])
        func = sch.mod["main"]
    return Workload(name="scale", program=func, make_inputs=lambda rng, d: [rng.uniform(size=4096).astype("float32")],
                    reference=lambda x: np.sqrt(x) * 2 + x)


@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"], timing=False, code="off")
def test_chain(tvmperf):
    tvmperf.check(chain(int(os.environ.get("CHAIN_HIDDEN", "16"))))


@pytest.mark.tvmperf(executors=["prim"], timing=False)
def test_scale(tvmperf):
    tvmperf.check(scale(os.environ.get("SCALE_UNROLL") == "1"))
"""
)

PREDATES = "baselines predate alloc_bytes, code_bytes: not gated against it; they will be recorded at the next --tvmperf-update"


def test_alloc_and_code_bytes_are_gated(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=3)
    tests = project.baselines()["tests"]
    bytecode, compiled, prim = (
        tests[f"test_{t}"]["exact"] for t in ("chain[llvm-vm-bytecode]", "chain[llvm-vm-compiled]", "scale[llvm-prim]")
    )
    # n = 3 rows: 3 x 16 and 3 x 4 floats, each the output of its kernel
    assert bytecode["alloc_bytes"] == 3 * 16 * 4 + 3 * 4 * 4 and bytecode["storage_bytes"] == 0
    assert sorted(bytecode["resource_parts"]["alloc_bytes"].values()) == [48, 192]
    assert (
        compiled["alloc_bytes"] is None
        and "vm-compiled runs no VM instructions" in compiled["not_measured"]["alloc_bytes"]
    )
    assert prim["code_bytes"] == sum(prim["resource_parts"]["code_bytes"].values()) > 0
    assert prim["measured_with"]["code_bytes"].startswith("tvm ")

    project.set_env("CHAIN_HIDDEN", "32")  # the hidden layer's (n, 32) allocation
    project.set_env("SCALE_UNROLL", "1")  # 64 copies of the loop body
    changed = project.run("--tvmperf-json=results.json")
    changed.assert_outcomes(passed=1, failed=2)
    out = changed.stdout.str()
    assert "tvmperf: alloc_bytes regressed against the baseline" in out  # alone: calls, kernels, storage unchanged
    changed.stdout.fnmatch_lines(
        [
            "*alloc_bytes 240 B -> 432 B (+192 B, limit no increase)*",
            "*by allocation site: output of matmul: 192 -> 384 B (+192)*",
        ]
    )
    assert "tvmperf: code_bytes regressed against the baseline" in out
    changed.stdout.fnmatch_lines(["*code_bytes * B -> * B (+* B, limit +1%, at most * B)*", "*by kernel: main: *"])
    entries = {
        e["nodeid"].split("::")[-1]: e
        for e in json.loads((project.pytester.path / "results.json").read_text())["tests"]
    }
    exact = entries["test_chain[llvm-vm-compiled]"]["record"]["exact"]  # n/a with its reason, and it passed
    assert entries["test_chain[llvm-vm-compiled]"]["verdict"] == "pass"
    assert exact["alloc_bytes"] is None and exact["not_measured"]["alloc_bytes"].startswith("vm-compiled runs")

    # a baseline from before these metrics: gated as before, and one line says so
    for entry in tests.values():
        for key in ("alloc_bytes", "code_bytes", "resource_parts", "not_measured"):
            entry["exact"].pop(key, None)
        entry["exact"].get("measured_with", {}).pop("code_bytes", None)
    project.baseline_file().write_text(json.dumps({**project.baselines(), "tests": tests}, indent=1))
    old = project.run()
    old.assert_outcomes(passed=3)
    assert old.stdout.str().count(PREDATES) == 1
