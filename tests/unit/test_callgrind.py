"""Simulated cost, the pure parts: reading a callgrind dump into per-kernel lines
(measure/callgrind.py), and the source's choices (measure/simulate.py) without valgrind."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_tvmperf.config.markers import MarkerSettings
from pytest_tvmperf.config.per_test import TestSettings, settings_for_test
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.config.parsing import parse_simulate
from pytest_tvmperf.measure import callgrind, metric_sources
from pytest_tvmperf.measure.callgrind import RUNTIME_LINE, est_cycles, kernel_of, parse, per_kernel
from pytest_tvmperf.measure.metric_sources import SourceFailed, collect, load_sources
from pytest_tvmperf.measure.simulate import SimulatedCost, harness_env, host_problem, simulate_choice, valgrind_command

LIB = "/tmp/req3/sim.so"
# events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
DUMP = f"""\
version: 1
creator: callgrind-3.19.0
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw

ob=/usr/lib/libpython3.11.so.1.0
fn=_PyEval_EvalFrameDefault
0 500 100 50 5 5 0 1 0 0
cob=/usr/lib/libc.so.6
cfn=malloc
calls=1 0
0 80 10 10 0 0 0 0 0 0

ob=/venv/tvm/lib/libtvm_runtime.so
fn=tvm::runtime::vm::VirtualMachineImpl::RunLoop()
0 300 60 20 2 1 0 0 0 0
cob=/usr/lib/libc.so.6
cfn=malloc
calls=2 0
0 160 20 20 0 0 0 0 0 0
cob={LIB}
cfn=__tvm_ffi_fused_add
calls=1 0
0 1111 1 1 1 1 1 1 1 1

ob={LIB}
fn=__tvm_ffi_fused_add
0 40 4 4 1 0 0 0 0 0
fn=fused_add_compute_
0 1000 200 100 1 10 5 0 2 1
cob=/usr/lib/libm.so.6
cfn=expf
calls=4 0
0 60 0 0 0 1 0 0 0 0
fn=fused_add_compute__lambda_0
0 200 20 10 0 0 0 0 0 0
fn=__vmtir__main
0 30 0 0 0 0 0 0 0 0

ob=/usr/lib/libm.so.6
fn=expf
0 60 0 0 0 1 0 0 0 0

totals: 3000 400 200 10 17 5 1 3 1
"""


def test_est_cycles_is_instructions_plus_miss_penalties():
    cost = {"Ir": 1000, "I1mr": 1, "D1mr": 2, "D1mw": 3, "ILmr": 1, "DLmr": 1, "DLmw": 1}
    assert est_cycles(cost) == 1000 + 10 * 6 + 100 * 3


def test_parse_reads_self_costs_call_edges_and_totals():
    profile = parse(DUMP.splitlines(True))
    selfs = {(f.obj.rsplit("/", 1)[-1], f.name): f.events["Ir"] for f in profile.functions}
    assert selfs[("libtvm_runtime.so", "tvm::runtime::vm::VirtualMachineImpl::RunLoop()")] == 300  # calls excluded
    assert selfs[("sim.so", "fused_add_compute_")] == 1000
    edges = {(c.caller, c.callee_obj.rsplit("/", 1)[-1], c.callee): c.events["Ir"] for c in profile.calls}
    assert edges[("fused_add_compute_", "libm.so.6", "expf")] == 60
    # a call without cob= stays in the caller's object; one with cob= does not leak into the next call
    assert edges[("tvm::runtime::vm::VirtualMachineImpl::RunLoop()", "sim.so", "__tvm_ffi_fused_add")] == 1111
    assert profile.totals["Ir"] == 3000


def test_compressed_names_are_expanded():
    text = "events: Ir\nob=(1) /x/sim.so\nfn=(1) k_compute_\n0 7\nfn=(2) other\n0 1\nfn=(1)\n0 3\n"
    profile = parse(text.splitlines(True))
    assert {(f.obj, f.name): f.events["Ir"] for f in profile.functions} == {
        ("/x/sim.so", "k_compute_"): 10,
        ("/x/sim.so", "other"): 1,
    }


@pytest.mark.parametrize(
    "function, kernel",
    [
        ("__tvm_ffi_fused_matmul_add", "fused_matmul_add"),
        ("fused_matmul_add_compute_", "fused_matmul_add"),
        ("fused_add_compute__lambda_0", "fused_add"),
        ("main", "main"),
        ("__tvm_ffi___vmtir__main", None),
        ("__vmtir__main", None),
        ("__tvm_main__", None),
    ],
)
def test_kernel_of(function, kernel):
    assert kernel_of(function) == kernel


def test_per_kernel_lines_fold_a_kernels_functions_and_its_calls_out_of_tvm():
    lines = per_kernel(parse(DUMP.splitlines(True)), LIB)
    # wrapper 40 + body 1000 + parallel lambda 200 + the body's expf calls 60
    assert lines["cpu_instructions"]["fused_add"] == 1300
    # the VM's own code and the library's __vmtir__ code; not the malloc calls, not Python
    assert lines["cpu_instructions"][RUNTIME_LINE] == 300 + 30
    assert set(lines["cpu_instructions"]) == {"fused_add", RUNTIME_LINE}
    assert lines["est_cycles"]["fused_add"] == 1300 + 10 * (1 + 1 + 10 + 5 + 1) + 100 * (2 + 1)


def test_parse_simulate():
    assert [parse_simulate(v) for v in ("on", "off", "true", "0", True)] == ["on", "off", "on", "off", "on"]
    with pytest.raises(ValueError, match="expected on or off"):
        parse_simulate("sometimes")


def test_the_command_line_wins_over_the_ini_and_the_default_is_auto():
    assert simulate_choice(settings_for_test(Settings())) == ("auto", "default")
    assert simulate_choice(settings_for_test(Settings(simulate="off")))[0] == "off"
    from_cli = Settings(simulate="on", pinned=frozenset({"simulate"}))  # the command line's on over the ini's off
    assert simulate_choice(settings_for_test(from_cli, MarkerSettings(simulate="off")))[0] == "on"


def test_host_problems_name_the_fix():
    assert "x86-64" in host_problem(machine="aarch64")
    assert (
        host_problem(which=lambda name: None, machine="x86_64")
        == "valgrind is not installed (apt-get install valgrind)"
    )
    assert host_problem(which=lambda name: "/usr/bin/" + name, machine="x86_64") is None


def test_the_measuring_process_is_pinned():
    command = valgrind_command(Path("/tmp/cg.out.%p"), python="python")
    assert all(opt in command for opt in (*callgrind.CACHE_MODEL, "--cache-sim=yes", "--instr-atstart=no"))
    assert "--callgrind-out-file=/tmp/cg.out.%p" in command  # a file per process: each request's child has its own
    env = harness_env({"TVM_NUM_THREADS": "8"}, Path("/tmp/cg.out"))
    assert env["TVM_NUM_THREADS"] == "1" and env["PYTHONHASHSEED"] == "0"


def test_the_measuring_process_environment_does_not_depend_on_the_session():
    """The environment is copied into the process's stack and heap: what changes from one
    session to the next (the test that started the process, xdist's worker, an activated
    venv's PATH) is left out, so every request starts from the same heap."""
    base = {"HOME": "/home/u", "PYTHONPATH": "/src", "LD_LIBRARY_PATH": "/opt/lib", "TVMPERF_TVM_RUNTIME": "/rt.so"}
    session = {
        **base,
        "PYTEST_CURRENT_TEST": "test_perf.py::test_a[llvm-prim] (call)",
        "PYTEST_XDIST_WORKER": "gw1",
        "PATH": "/venv/bin:/usr/bin",
        "VIRTUAL_ENV": "/venv",
        "TVMPERF_TEST_REVERSE": "1",
        "CI": "true",
    }
    out = Path("/tmp/tvmperf-00001234-sim-abcdefgh/cg.out.%p")
    assert harness_env(session, out) == harness_env(dict(reversed(list(base.items()))), out)
    assert list(harness_env(session, out))[:4] == sorted(base)  # the same order, whatever the session's


def _harness(tmp_path):
    import subprocess
    import sys

    from pytest_tvmperf.measure.sim_env import HARNESS

    # natively: valgrind's client requests are no-ops on a real CPU
    return subprocess.Popen(
        [sys.executable, str(HARNESS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=harness_env({}, tmp_path / "cg.out.%p") | {"TVMPERF_PRELOAD_RUNTIME": "0"},
    )


def test_each_request_is_answered_by_a_fresh_child_and_end_of_input_ends_it(tmp_path):
    """The measuring process forks a child per request (the same state for every request):
    a request that fails is answered with its error, a child that ends without answering is
    reported, and the next request is still served; end of input ends the process."""
    import json

    proc = _harness(tmp_path)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        hello = json.loads(proc.stdout.readline())
        assert hello["ready"] and not hello["on_valgrind"]
        for rid in (1, 2):
            proc.stdin.write(
                json.dumps({"id": rid, "lib": str(tmp_path / "missing.so"), "func": "f", "inputs": []}) + "\n"
            )
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            assert answer["id"] == str(rid) and not answer["ok"] and answer["error"]
        proc.stdin.write("{not json\n")
        proc.stdin.flush()
        assert "ended with status 1" in json.loads(proc.stdout.readline())["error"]
        proc.stdin.write(json.dumps({"id": 3, "lib": str(tmp_path / "missing.so"), "func": "f", "inputs": []}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == "3"
        proc.stdin.close()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class FakeTarget:
    name: str = "llvm"
    device_type: str = "cpu"


@dataclass(frozen=True)
class FakeWorkload:
    pipeline: str = "default"


@dataclass(frozen=True)
class FakePrepared:
    executor: str = "prim"
    target: FakeTarget = FakeTarget()
    workload: FakeWorkload = FakeWorkload()


def test_unavailable_says_why(monkeypatch):
    from pytest_tvmperf.measure import simulate

    monkeypatch.setattr(simulate, "host_problem", lambda: None)
    source = SimulatedCost()
    off = settings_for_test(Settings(simulate="off", pinned=frozenset({"simulate"})))
    assert source.unavailable(FakePrepared(), TestSettings()) is None
    assert source.unavailable(FakePrepared(), off) == "switched off (--tvmperf-simulate=off)"
    assert "cuda" in source.unavailable(FakePrepared(target=FakeTarget("cuda", "cuda")), TestSettings())
    assert "tuned" in source.unavailable(FakePrepared(workload=FakeWorkload("tuned")), TestSettings())
    monkeypatch.setattr(simulate, "host_problem", lambda: "valgrind is not installed (apt-get install valgrind)")
    assert source.unavailable(FakePrepared(), TestSettings()) == "valgrind is not installed (apt-get install valgrind)"


def test_a_failed_simulation_is_a_reason_not_a_failure():
    class Broken:
        name = "simulated cost"
        metrics = SimulatedCost.metrics

        def unavailable(self, prepared, settings):
            return None

        def collect(self, prepared, settings):
            raise SourceFailed("the measuring process ended")

    got = collect((Broken(),), None, None)
    assert got.per_kernel == {} and got.skipped == ("simulated cost: the measuring process ended",)
    assert set(got.missing) == {m.name for m in SimulatedCost.metrics}


def test_a_registered_class_is_one_source_per_session(monkeypatch):
    monkeypatch.setattr(metric_sources, "SOURCES", ("pytest_tvmperf.measure.simulate:SimulatedCost",))
    first, second = load_sources(), load_sources()
    assert isinstance(first[0], SimulatedCost) and first[0] is not second[0]
    assert settings_for_test(Settings(), MarkerSettings(simulate="on")).simulate == "on"


def test_the_summary_says_the_simulated_cost_was_gated_when_the_time_was_not():
    from pytest_tvmperf.judge.metric_verdict import MetricVerdict
    from pytest_tvmperf.judge.verdict import Verdict
    from pytest_tvmperf.measure.simulate import simulated_gate_note

    class Comparison:
        def __init__(self, verdicts):
            self.verdicts = verdicts

        def get(self, metric):
            return self.verdicts.get(metric)

    gated = Comparison(
        {
            "cpu_instructions": MetricVerdict("cpu_instructions", Verdict.PASS, 10, 10, "+1%"),
            "est_cycles": MetricVerdict("est_cycles", Verdict.NA, None, 12, "+1%"),
        }
    )
    assert simulated_gate_note(Verdict.NOT_GATED, gated) == "simulated cost gated (cpu_instructions)"
    assert simulated_gate_note(Verdict.PASS, gated) == ""
    assert simulated_gate_note(Verdict.NOT_GATED, Comparison({})) == ""


def test_a_failed_request_leaves_the_measuring_process_serving(tmp_path):
    """A request that fails in its child is that test's reason (RequestFailed), not the
    session's: the next request is served (the process would be marked broken otherwise)."""
    from pytest_tvmperf.measure.simulate import RequestFailed, SimProcess

    process = SimProcess(tmp_path)
    process._proc = _harness(tmp_path)
    try:
        assert process._read(60, "starting")["ready"]
        for _ in range(2):
            with pytest.raises(RequestFailed, match="simulating f failed"):
                process.measure(tmp_path / "missing.so", "f", [], vm=False)
    finally:
        process.close()
