"""A test's exact metrics and simulated counts do not depend on the tests run before it
(issue 22): a suite recorded in one session gives the same numbers, to the instruction,
for each test run alone (``-k``), for the suite in reverse order, and under ``-n 2``.

The session's one measuring process (measure/sim_harness.py) used to keep what the
runtime's path depends on from request to request: the VM's pooled allocator, the heap,
lazily built tables. An ONNX model on ``vm-bytecode`` recorded in a full run then ran
+55 instructions in its ``[runtime]`` line when run alone, and the kernels' ``est_cycles``
moved by a few cache misses. Each request is now counted in a child forked from one same
state of the measuring process."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None or os.uname().machine not in ("x86_64", "amd64"),
    reason="valgrind is not installed on this x86-64 host (apt-get install valgrind)",
)

# pytester drops modules first imported during its in-process runs, and onnx's pybind11
# extension cannot be imported twice into one process: import what the runs use now
try:
    import onnx  # noqa: F401
    import onnx.helper  # noqa: F401
    import onnx.numpy_helper  # noqa: F401
    import tvm.relax.frontend.onnx  # noqa: F401

    HAS_ONNX = True
except ImportError:
    HAS_ONNX = False

SUITE = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["prim"])
def test_multiply(tvmperf):
    tvmperf.check(workloads.multiply(64, 64))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""

ONNX = """

@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_onnx(tvmperf):
    tvmperf.check(workloads.small_mlp_onnx())
"""

#: the suite in reverse order when TVMPERF_TEST_REVERSE=1 (also in xdist workers)
REVERSE = """

def pytest_collection_modifyitems(items):
    if os.environ.get("TVMPERF_TEST_REVERSE") == "1":
        items.reverse()
"""

#: no allowance on the counts (any growth fails); recorded with the injected timer (three
#: rounds), gated with no timing, as the user who saw it did
GATE = ("--tvmperf-simulate=on", "--tvmperf-peers=none", "--tvmperf-threshold=time=off,cpu_instructions=0,est_cycles=0")
RECORD = ("--tvmperf-update", "--tvmperf-repeat=3")
UNTIMED = ("--tvmperf-timing=off",)


def _names_out(tests: dict) -> dict:
    """Each test's exact metrics with the maps keyed by kernel reduced to their sorted
    (kernel-less) items: the store keys kernels by identity (``matmul_add@02d5190a64``), a
    run's results by this build's names (``fused_matmul_add``); the numbers are the same."""

    def values(counts):
        if not isinstance(counts, dict):
            return counts
        return sorted((("" if "@" in k or "fused_" in k else k), values(v)) for k, v in counts.items())

    out = {}
    for test, exact in tests.items():
        exact = dict(exact)
        for field in ("by_callee", "calls", "instructions", "kernel_time_s", "resource_parts"):
            exact[field] = values(exact.get(field))
        exact["per_kernel"] = {m: values(c) for m, c in (exact.get("per_kernel") or {}).items()}
        exact.pop("bytecode", None)
        out[test] = exact
    return out


def exact_metrics(project, json_path) -> dict:
    """{test id: its exact metrics (static and executed VM counts, per-kernel simulated
    counts, what they were measured with)} from one run's --tvmperf-json."""
    tests = json.loads(json_path.read_text())["tests"]
    got = {}
    for t in tests:
        exact = t["record"]["exact"]
        assert exact["per_kernel"].get("cpu_instructions"), (t["test_id"], t.get("skipped"))
        got[t["test_id"]] = exact
    return got


def differences(expected: dict, got: dict) -> list[str]:
    """Readable lines for what differs (per kernel, per metric)."""
    out = []
    for test, exact in got.items():
        for key in sorted(set(exact) | set(expected[test])):
            a, b = expected[test].get(key), exact.get(key)
            if a == b:
                continue
            if key == "per_kernel":
                for metric in sorted(set(a) | set(b)):
                    for kernel in sorted(set(a.get(metric, {})) | set(b.get(metric, {}))):
                        x, y = a.get(metric, {}).get(kernel), b.get(metric, {}).get(kernel)
                        if x != y:
                            out.append(f"{test} {metric} {kernel}: {x} -> {y}")
            else:
                out.append(f"{test} {key}: {a} -> {b}")
    return out


def test_the_counts_do_not_depend_on_the_tests_before(project, simulated_cost):
    project.pytester.makeconftest(project.pytester.path.joinpath("conftest.py").read_text() + REVERSE)
    project.pytester.makepyfile(test_perf=SUITE + (ONNX if HAS_ONNX else ""))
    runs, problems = {}, []

    def run(name, *args, passed):
        """One session; what went wrong is kept for the one assertion at the end (every
        difference of every run, not only the first)."""
        json_path = project.pytester.path / f"{name}.json"
        result = project.run(*GATE, f"--tvmperf-json={json_path}", *args)
        outcomes = result.parseoutcomes()
        if outcomes.get("passed", 0) != passed or set(outcomes) - {"passed", "deselected", "warnings"}:
            problems.append(
                f"{name}: {outcomes}, expected {passed} passed: "
                + " | ".join(line.strip() for line in result.outlines if "->" in line or "simulated cost:" in line)
            )
        if "tvmperf: simulated cost:" in result.stdout.str():
            problems.append(f"{name}: the simulated cost was not measured everywhere")
        runs[name] = exact_metrics(project, json_path)

    run("recorded", *RECORD, passed=4 if HAS_ONNX else 2)
    recorded = runs["recorded"]
    assert not problems, problems
    assert "[runtime]" in recorded["test_mlp[llvm-vm-bytecode]"]["per_kernel"]["cpu_instructions"]
    assert recorded["test_mlp[llvm-vm-bytecode]"]["calls"], "the VM's executed calls are counted"
    stored = {t: e["exact"] for t, e in project.baselines()["tests"].items()}
    assert _names_out(recorded) == _names_out(stored)  # the store keys kernels by identity

    for test in recorded:  # each alone: the first and only request of its measuring process
        name, _, params = test.partition("[")
        run(
            test,
            *UNTIMED,
            "-k",
            name + (" and " + params.split("-")[-1].rstrip("]") if "onnx" in name else ""),
            passed=1,
        )
    project.set_env("TVMPERF_TEST_REVERSE", "1")
    run("reversed", *UNTIMED, passed=len(recorded))
    if importlib.util.find_spec("xdist") is not None:
        run("xdist", *UNTIMED, "-n", "2", passed=len(recorded))

    for name, got in runs.items():
        problems += [f"{name}: {line}" for line in differences(recorded, got)]
    assert not problems, "\n".join(problems)
