"""Remote devices through a TVM RPC tracker, on loopback: a tracker and RPC servers on
127.0.0.1 (tests/rpc_fixtures.py), the plugin timing on them with TVM's own timer."""

from __future__ import annotations

import json
import sys

import pytest

from rpc_fixtures import RpcFarm, free_port

pytest.importorskip("tornado", reason="the TVM RPC tracker needs tornado (pip install 'pytest-tvmperf[rpc]')")

KEY = "board"

REMOTE_TESTS = """
import pytest
from tvm import te
from pytest_tvmperf import Workload, workloads

def scale2(n=4096):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    return Workload(name=f"scale2(n={n})", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
                    reference=lambda x: x * 2.0, rtol=1e-6, atol=1e-6)

@pytest.mark.tvmperf(executors=["prim"])
def test_scale(tvmperf):
    tvmperf.check(scale2())

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""

TWO_PRIM_TESTS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.rgb2yuv(schedule="default"))

@pytest.mark.tvmperf(executors=["prim"])
def test_b(tvmperf):
    tvmperf.check(workloads.rgb2yuv(schedule="parallel"))
"""

#: kills the RPC server (its whole process group) just before the first timing
KILL_BEFORE_TIMING = """
import os, signal
import pytest
from pytest_tvmperf.builder.timer import TvmTimer

@pytest.fixture
def tvmperf_timer():
    real = TvmTimer()
    def timer(task, rounds):
        pgid = int(os.environ["TVMPERF_TEST_KILL_PGID"])
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return real(task, rounds)
    return timer
"""

#: stops the RPC server (SIGSTOP to its process group) just before the first timing: the
#: device keeps its connection open and never answers
STOP_BEFORE_TIMING = KILL_BEFORE_TIMING.replace("signal.SIGKILL", "signal.SIGSTOP")

#: the reference kernel's samples on the device twice as slow in 2 of every 3 rounds (a
#: device that other work disturbs), when TVMPERF_TEST_DISTURB is set
DISTURB_DEVICE = """
import os
from dataclasses import replace
import pytest
from pytest_tvmperf.builder.timer import TvmTimer

@pytest.fixture
def tvmperf_timer():
    real = TvmTimer()
    def timer(task, rounds):
        got = real(task, rounds)
        if not os.environ.get("TVMPERF_TEST_DISTURB") or got.reference is None:
            return got
        # 10x in 2 rounds of 3: more than a loopback device's own noise under CI's load can mask
        # (2x once did, its undisturbed rounds slowed as much by the load)
        return replace(got, reference=tuple(r * (10.0 if i % 3 else 1.0) for i, r in enumerate(got.reference)))
    return timer
"""

FAST = ("-p", "no:cacheprovider", "--tvmperf-repeat=3", "--tvmperf-min-repeat-ms=2")


@pytest.fixture(scope="module")
def rpc_farm(tmp_path_factory):
    farm = RpcFarm(python=sys.executable, log_dir=tmp_path_factory.mktemp("rpc-logs"), lifetime_s=1200)
    try:
        farm.start()
        farm.add_server(KEY)
        farm.add_server(KEY)
        yield farm
    finally:
        farm.stop()


def _baselines(pytester) -> dict:
    return json.loads((pytester.path / "baselines" / "test_perf.json").read_text())


def test_record_then_gate_on_a_remote_key(pytester, rpc_farm):
    pytester.makepyfile(test_perf=REMOTE_TESTS)
    remote = (f"--tvmperf-rpc={rpc_farm.address}", f"--tvmperf-targets=llvm@rpc:{KEY}")
    first = pytester.runpytest(*FAST, *remote, "--tvmperf-update")
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["*tvmperf summary*", f"*test_scale[[]rpc:{KEY}-llvm-prim[]]*recorded*"])
    first.stdout.fnmatch_lines([f"*test_mlp[[]rpc:{KEY}-llvm-vm-bytecode[]]*recorded*"])
    tests = _baselines(pytester)["tests"]
    entry = tests[f"test_mlp[rpc:{KEY}-llvm-vm-bytecode]"]
    assert entry["exact"]["instructions"] == {"forward": 17}  # exact metrics from the host's build
    assert entry["exact"]["calls"]  # executed calls: the device runs the host's code here (loopback)
    (timing,) = entry["timings"].values()
    assert f"via rpc:{KEY}" in timing["machine"]["cpu_model"]  # the device's fingerprint, with its key
    assert (
        entry["ir"]["path"] and "artifact" not in timing
    )  # the a/b program as IR, rebuilt for the device at gate time

    # time is not gated here: loopback devices share this (busy) CI machine, and nothing screens
    # a device's samples for preemption; the exact metrics are gated against the device's baseline
    gate = pytester.runpytest(*FAST, *remote, "--tvmperf-threshold=time=off")
    gate.assert_outcomes(passed=2)
    gate.stdout.fnmatch_lines([f"*test_mlp[[]rpc:{KEY}-llvm-vm-bytecode[]]*17/17*"])
    assert rpc_farm.wait_free(KEY, 2) == 2  # the run gave its device back to the tracker when it ended


def test_a_disturbed_device_holds_the_time_verdict_with_the_reason(pytester, rpc_farm, monkeypatch):
    """No CPU wait can be read from a device: the reference kernel timed there in the same
    rounds screens the rounds, and a device disturbed in most of them is 'device busy'."""
    pytester.makepyfile(test_perf=TWO_PRIM_TESTS)
    pytester.makeconftest(DISTURB_DEVICE)
    remote = (f"--tvmperf-rpc={rpc_farm.address}", f"--tvmperf-targets=llvm@rpc:{KEY}", "-k", "test_a")
    pytester.runpytest(*FAST, *remote, "--tvmperf-update").assert_outcomes(passed=1)
    monkeypatch.setenv("TVMPERF_TEST_DISTURB", "1")
    # in a child process: a failed in-process run keeps its traceback, and with it the RPC
    # session, so the device would not go back to the tracker for the tests after this one
    gate = pytester.runpytest_subprocess(
        *FAST, *remote, "--tvmperf-repeat=6", "--tvmperf-inconclusive=fail", timeout=300
    )
    gate.assert_outcomes(failed=1)
    gate.stdout.fnmatch_lines(
        [
            "*device busy: * of rounds disturbed (the reference kernel, timed on the device in the "
            "same rounds, ran more than 25% over its lower quartile)*"
        ]
    )
    gate.stdout.no_fnmatch_line("*regressed*")


def test_unknown_key_lists_the_keys_the_tracker_has(pytester, rpc_farm):
    pytester.makepyfile(test_perf=REMOTE_TESTS)
    result = pytester.runpytest(*FAST, f"--tvmperf-rpc={rpc_farm.address}", "--tvmperf-targets=llvm@rpc:nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*has no device with key 'nope' (its keys: {KEY})*python -m tvm.exec.rpc_server "
            f"--tracker {rpc_farm.address} --key nope*",
            "key *servers*free*",
            f"{KEY} *2 *",
        ]
    )


def test_no_tracker_running_is_an_error_at_start_up(pytester):
    pytester.makepyfile(test_perf=REMOTE_TESTS)
    port = free_port()  # nothing listens there
    result = pytester.runpytest(*FAST, f"--tvmperf-rpc=127.0.0.1:{port}", f"--tvmperf-targets=llvm@rpc:{KEY}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*no RPC tracker answers at 127.0.0.1:{port}*python -m tvm.exec.rpc_tracker*"])


def test_the_advice_to_start_a_tracker_works_as_printed_on_a_port_above_9199():
    """issue 23: the advised command failed for ports >= 9199 (the tracker's --port-end
    defaults to 9199, so it had no port to try). Run as printed, it now listens."""
    import re
    import shlex
    import subprocess

    from rpc_fixtures import START_TIMEOUT_S, RpcFarm, _wait_until
    from pytest_tvmperf.farm import tracker

    port = free_port()
    while port < 9200:  # the case of the issue
        port = free_port()
    with pytest.raises(tracker.TrackerError) as error:
        tracker.summary(("127.0.0.1", port))
    command = re.search(r"start one with (python -m tvm\.exec\.rpc_tracker [^,]+),", str(error.value)).group(1)
    args = shlex.split(command)
    assert args[:3] == ["python", "-m", "tvm.exec.rpc_tracker"]
    proc = subprocess.Popen(
        ["timeout", "-s", "KILL", "300", sys.executable, *args[1:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def answers() -> bool:
            try:
                return "queue_info" in tracker.summary(("127.0.0.1", port), timeout=2)
            except tracker.TrackerError:
                return False

        _wait_until(answers, f"the advised tracker on port {port}", START_TIMEOUT_S, proc)
    finally:
        RpcFarm.kill(proc)


def test_remote_target_without_a_tracker_address_is_a_usage_error(pytester):
    pytester.makepyfile(test_perf=REMOTE_TESTS)
    result = pytester.runpytest(*FAST, f"--tvmperf-targets=llvm@rpc:{KEY}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*run on RPC devices: give the tracker with --tvmperf-rpc=HOST:PORT*"])


def _recorded_on_a_server_of_its_own(pytester, rpc_farm, key: str):
    """A new server under ``key``, test_a recorded on it: (its process, the remote options,
    the baseline file's bytes)."""
    server = rpc_farm.add_server(key)
    pytester.makepyfile(test_perf=TWO_PRIM_TESTS)
    remote = (f"--tvmperf-rpc={rpc_farm.address}", f"--tvmperf-targets=llvm@rpc:{key}")
    pytester.runpytest(*FAST, *remote, "--tvmperf-update", "-k", "test_a").assert_outcomes(passed=1)
    return server, remote, (pytester.path / "baselines" / "test_perf.json").read_bytes()


def test_a_server_killed_mid_run_fails_the_test_and_loses_no_baseline(pytester, rpc_farm, monkeypatch):
    doomed, remote, before = _recorded_on_a_server_of_its_own(pytester, rpc_farm, "doomed")
    pytester.makeconftest(KILL_BEFORE_TIMING)
    monkeypatch.setenv("TVMPERF_TEST_KILL_PGID", str(doomed.pid))
    # in a child process with a deadline: a hang fails this test instead of stalling CI
    killed = pytester.runpytest_subprocess(*FAST, *remote, "--tvmperf-update", "-k", "test_a", timeout=300)
    killed.assert_outcomes(failed=1)
    killed.stdout.fnmatch_lines(
        ["*the RPC device rpc:doomed (server 127.0.0.1:*, tracker*) went away while**writes no baseline*"]
    )
    assert "During handling of the above exception" not in killed.stdout.str()
    assert (pytester.path / "baselines" / "test_perf.json").read_bytes() == before


#: counts the candidate batches MetaSchedule's RPC runner measures, in a file
SPY_RPC_RUNNER = """
import os
from tvm.s_tir.meta_schedule.runner import RPCRunner

_cls = RPCRunner._cls  # the class under MetaSchedule's derived-object wrapper
_run = _cls.run

def _counted(self, runner_inputs):
    with open(os.environ["TVMPERF_TEST_RPC_RUNS"], "a") as f:
        f.write(f"{len(runner_inputs)} {self.rpc_config.tracker_key}\\n")
    return _run(self, runner_inputs)

_cls.run = _counted
"""


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tune_measures_candidates_on_the_keys_devices(pytester, rpc_farm, monkeypatch):
    """--tvmperf-tune on a remote target: MetaSchedule's RPC runner measures on the key's
    device. The key has one server: the run gives it back to the tracker for tuning and
    asks for it again to time the tuned build."""
    import inspect

    from tests.unit.test_tuning import SIZES, tiny_mlp

    rpc_farm.add_server("solo")
    pytester.makepyfile(
        test_perf=f"""
import numpy as np
import pytest
from pytest_tvmperf import Workload

SIZES = {SIZES!r}

{inspect.getsource(tiny_mlp)}

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_default(tvmperf):  # timed first: the device's session holds the reference kernel
    tvmperf.check(tiny_mlp(4))

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_tuned(tvmperf):
    tvmperf.check(tiny_mlp(4).with_pipeline("tuned"))
"""
    )
    pytester.makeconftest(SPY_RPC_RUNNER)
    runs = pytester.path / "rpc-runs.txt"
    monkeypatch.setenv("TVMPERF_TEST_RPC_RUNS", str(runs))
    remote = (f"--tvmperf-rpc={rpc_farm.address}", "--tvmperf-targets=llvm@rpc:solo", "--tvmperf-threshold=time=off")
    tuned = pytester.runpytest_subprocess(*FAST, *remote, "--tvmperf-update", "--tvmperf-tune=4", timeout=600)
    tuned.assert_outcomes(passed=2)
    assert "tuning tiny_mlp(4) on rpc:solo" in tuned.stderr.str()
    batches = runs.read_text().split("\n")[:-1]
    assert batches and all(line.endswith(" solo") for line in batches), batches
    entry = _baselines(pytester)["tests"]["test_tuned[rpc:solo-llvm-vm-bytecode]"]
    assert entry["pipeline"] == "tuned" and entry["tuning"]["missing"] == []
    (timing,) = entry["timings"].values()
    assert "via rpc:solo" in timing["machine"]["cpu_model"]  # timed on the device again after tuning
    assert rpc_farm.wait_free("solo", 1) == 1  # and given back at the end
    # the records are the device target's: the next run finds them without tuning
    runs.unlink()
    pytester.runpytest_subprocess(*FAST, *remote, timeout=600).assert_outcomes(passed=2)
    assert not runs.exists()


def test_a_device_that_hangs_fails_its_test_within_the_call_timeout(pytester, rpc_farm, monkeypatch):
    hung, remote, before = _recorded_on_a_server_of_its_own(pytester, rpc_farm, "frozen")
    pytester.makeconftest(STOP_BEFORE_TIMING)
    monkeypatch.setenv("TVMPERF_TEST_KILL_PGID", str(hung.pid))
    try:
        # the child's own deadline (300 s) is far above the call timeout: a hang fails this test
        stuck = pytester.runpytest_subprocess(
            *FAST, *remote, "--tvmperf-rpc-timeout=10", "--tvmperf-update", "-k", "test_a", timeout=300
        )
    finally:
        rpc_farm.kill(hung)
    stuck.assert_outcomes(failed=1)
    stuck.stdout.fnmatch_lines(
        [
            "*the RPC device rpc:frozen (server 127.0.0.1:*) stopped answering while timing the "
            "workload (no answer within 10 s (--tvmperf-rpc-timeout))*writes no baseline*"
        ]
    )
    assert (pytester.path / "baselines" / "test_perf.json").read_bytes() == before


def test_after_a_device_hangs_the_later_tests_of_its_key_do_not_wait_for_a_free_one(pytester, rpc_farm, monkeypatch):
    """issue 23: after the test that hit a stopped server failed within the call timeout,
    each later test of the key waited 600 s for a free device (the stopped server stays
    registered and busy). Now the next waits at most the call timeout, and the rest fail
    at once naming what happened."""
    hung, remote, before = _recorded_on_a_server_of_its_own(pytester, rpc_farm, "wedged")
    pytester.makepyfile(
        test_perf=TWO_PRIM_TESTS
        + """

@pytest.mark.tvmperf(executors=["prim"])
def test_c(tvmperf):
    tvmperf.check(workloads.rgb2yuv(schedule="default"))
"""
    )
    pytester.makeconftest(STOP_BEFORE_TIMING)
    monkeypatch.setenv("TVMPERF_TEST_KILL_PGID", str(hung.pid))
    # the call timeout well above what uploading and running the workload take on a loaded 2-core CI
    # runner (at 5 s, test_a's first call ran past it before the server was stopped, so test_b got the
    # server and hung in its place); a bounded child: waiting 600 s per later test would run past it
    try:
        stuck = pytester.runpytest_subprocess(
            *FAST, *remote, "--tvmperf-rpc-timeout=30", "--tvmperf-update", timeout=400
        )
    finally:
        rpc_farm.kill(hung)
    stuck.assert_outcomes(failed=3)
    # each failure's own section (the short summary truncates its lines unless $CI is set)
    stuck.stdout.fnmatch_lines(
        [
            "*_ test_a?rpc:wedged-llvm-prim? _*",
            "*the RPC device rpc:wedged (server 127.0.0.1:*) stopped answering while *(no answer within 30 s*",
            "*_ test_b?rpc:wedged-llvm-prim? _*",
            "*no device with key 'wedged' became free at the RPC tracker * within 30 s (all busy)*",
            "*no device of key 'wedged' after an earlier test of this run: the RPC device rpc:wedged*stopped answering*"
            "waited at most 30 s (--tvmperf-rpc-timeout)*every later test of this key fails at once*",
            "*_ test_c?rpc:wedged-llvm-prim? _*",
            "tvmperf: target llvm@rpc:wedged: no device of key 'wedged' after an earlier test of this run*",
        ]
    )
    assert "within 600 s" not in stuck.stdout.str()
    assert (pytester.path / "baselines" / "test_perf.json").read_bytes() == before


def test_two_workers_time_on_two_servers_with_the_summary_intact(pytester, rpc_farm):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_perf=TWO_PRIM_TESTS)
    result = pytester.runpytest(
        *FAST, "-n", "2", f"--tvmperf-rpc={rpc_farm.address}", f"--tvmperf-targets=llvm@rpc:{KEY}", "--tvmperf-update"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*tvmperf summary*", f"*test_a[[]rpc:{KEY}-llvm-prim[]]*recorded*"])
    result.stdout.fnmatch_lines([f"*test_b[[]rpc:{KEY}-llvm-prim[]]*recorded*"])
    assert sorted(_baselines(pytester)["tests"]) == [f"test_a[rpc:{KEY}-llvm-prim]", f"test_b[rpc:{KEY}-llvm-prim]"]


def test_devices_command_lists_what_the_tracker_offers(rpc_farm, capsys):
    from pytest_tvmperf.command.cli import main

    rpc_farm.wait_free(KEY, 2)  # a device the last test used registers again a moment after its session ended
    assert main(["devices", "--rpc", rpc_farm.address]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"RPC tracker {rpc_farm.address}"
    assert any(line.split()[:3] == [KEY, "2", "2"] for line in out), out
    assert main(["devices", "--rpc", f"127.0.0.1:{free_port()}"]) == 2
    assert "no RPC tracker answers" in capsys.readouterr().err


def test_a_device_on_a_zen4_vm_without_avx512_is_built_for_what_its_os_enables(pytester, rpc_farm):
    """The device names its CPU znver4 and its OS enables no AVX-512 (a hosted runner's VM):
    its builds switch AVX-512 off, so they record and gate instead of killing the server."""
    rpc_farm.add_server("zen4vm", cpu="znver4", hide="avx512")
    pytester.makepyfile(test_perf=REMOTE_TESTS)
    remote = (f"--tvmperf-rpc={rpc_farm.address}", "--tvmperf-targets=llvm@rpc:zen4vm")
    first = pytester.runpytest(*FAST, *remote, "--tvmperf-update")
    first.assert_outcomes(passed=2)
    tests = _baselines(pytester)["tests"]
    for name in ("test_scale[rpc:zen4vm-llvm-prim]", "test_mlp[rpc:zen4vm-llvm-vm-bytecode]"):
        target = tests[name]["target"]
        assert target["mcpu"] == "znver4" and "-avx512f" in target["mattr"], target
    gate = pytester.runpytest(*FAST, *remote, "--tvmperf-threshold=time=off")
    gate.assert_outcomes(passed=2)
    assert "went away" not in gate.stdout.str()
