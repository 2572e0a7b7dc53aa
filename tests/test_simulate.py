"""Simulated cost (measure/simulate.py) as a user sees it: per-kernel instruction counts
recorded and gated, identical from run to run, a bigger kernel failing by name, and a
machine without valgrind skipping the metric with a one-line reason. Each run starts one
measuring process under callgrind (seconds): these tests are few and their kernels tiny."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or os.uname().machine not in ("x86_64", "amd64"),
    reason="valgrind is not installed on this x86-64 host (apt-get install valgrind)",
)

SMALL_KERNEL = """
import os
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload


def scale(steps):
    n = 256
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    factor = float(np.sum(np.arange(steps, dtype=np.float64) * 1e-3 + 1.0))
    return Workload(name="scale", program=te.create_prim_func([a, out]).with_attr("global_symbol", "scale"),
                    entry="scale", make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
                    reference=lambda x: x * np.float32(factor), rtol=1e-3, atol=1e-3)


@pytest.mark.tvmperf(executors=["prim"])
def test_scale(tvmperf):
    tvmperf.check(scale(int(os.environ.get("SCALE_STEPS", "64"))))
"""

GATE = ("--tvmperf-threshold=time=off,cpu_instructions=0", "--tvmperf-repeat=3", "--tvmperf-peers=none")


@pytest.fixture
def sim_project(project, simulated_cost):
    project.pytester.makepyfile(test_perf=SMALL_KERNEL)
    project.set_env("SCALE_STEPS", "64")
    return project


def counts(project) -> dict:
    return project.baselines()["tests"]["test_scale[llvm-prim]"]["exact"]["per_kernel"]


@needs_valgrind
def test_counts_are_recorded_per_kernel_and_identical_in_the_next_run(sim_project):
    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    recorded = counts(sim_project)
    assert set(recorded) == {"cpu_instructions", "est_cycles"}
    assert recorded["cpu_instructions"]["scale"] > 256 * 64  # at least one instruction per step
    assert "[runtime]" in recorded["cpu_instructions"]
    # a fresh session, another measuring process: the same count, gated with no allowance
    result = sim_project.run("--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*simulated cost:*")


@needs_valgrind
def test_counts_of_another_simulation_setup_are_held_with_a_line(sim_project):
    """The pinned target, LLVM, valgrind and cache model are stored with the counts; a
    baseline simulated another way is not compared (here: another valgrind), and says so."""
    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    path = sim_project.baseline_file("test_perf")
    data = json.loads(path.read_text())
    measured_with = data["tests"]["test_scale[llvm-prim]"]["exact"]["measured_with"]
    simulated = ("cpu_instructions", "est_cycles")  # beside them: code_bytes's own setup (values/resources.py)
    assert set(simulated) <= set(measured_with)
    here = measured_with["cpu_instructions"]
    assert "llvm -mcpu=haswell" in here and "valgrind-" in here and "LL=8388608,16,64" in here
    other = here.replace("valgrind-", "valgrind-0.")
    data["tests"]["test_scale[llvm-prim]"]["exact"]["measured_with"] = {
        **measured_with,
        **{m: other for m in simulated},
    }
    path.write_text(json.dumps(data))
    sim_project.set_env("SCALE_STEPS", "96")  # 50% more work: held, not failed
    result = sim_project.run("--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"*cpu_instructions not gated: measured with {here} here, {other} in the baseline*--tvmperf-update*"]
    )


@needs_valgrind
def test_a_bigger_kernel_fails_naming_it(sim_project):
    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    sim_project.set_env("SCALE_STEPS", "96")  # 50% more steps per element
    result = sim_project.run("--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cpu_instructions * -> *",
            "*kernels that grew: scale(256) -> 256 [[]scale[]] (changed): * -> * instructions (+*%)*",
            "*kernels since the baseline (matched by structure*): changed: scale(256) -> 256 [[]scale[]] "
            "(its code changed)",
        ]
    )


def _hide_valgrind(project, tmp_path: Path) -> None:
    """valgrind missing from PATH (every other program still there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            link = bin_dir / name
            if not name.startswith("valgrind") and not link.exists():
                link.symlink_to(Path(folder, name))
    project.set_env("PATH", str(bin_dir))


def test_without_valgrind_the_metric_is_skipped_with_a_reason(sim_project, tmp_path: Path):
    """Recorded, not failed, and the summary says why the simulated cost was not measured."""
    _hide_valgrind(sim_project, tmp_path)
    result = sim_project.run("--tvmperf-update", *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tvmperf: simulated cost: valgrind is not installed (apt-get install valgrind)"])
    assert "per_kernel" not in sim_project.baselines()["tests"]["test_scale[llvm-prim]"]["exact"]


def test_simulate_on_without_valgrind_is_a_usage_error(sim_project, tmp_path: Path):
    """issue 23: --tvmperf-simulate=on on a machine without valgrind was a yellow line."""
    _hide_valgrind(sim_project, tmp_path)
    result = sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--tvmperf-simulate=on: valgrind is not installed (apt-get install valgrind); "
            "leave the option out*or pass --tvmperf-simulate=off*"
        ]
    )
    assert not sim_project.baseline_file("test_perf").exists()


@needs_valgrind
def test_an_update_without_valgrind_keeps_the_stored_counts_and_says_so(sim_project, tmp_path: Path):
    """issue 23: an update on a machine without valgrind wrote the entries without
    exact.per_kernel, and the next gate with valgrind said nothing."""
    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    recorded = counts(sim_project)
    _hide_valgrind(sim_project, tmp_path)
    result = sim_project.run("--tvmperf-update", *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "tvmperf: --tvmperf-update kept the stored cpu_instructions, est_cycles counts of "
            "the entries this run could not measure*",
            "tvmperf: simulated cost: valgrind is not installed*",
        ],
        consecutive=False,
    )
    assert counts(sim_project) == recorded


KILL_VALGRIND = '''
from pytest_tvmperf.measure import simulate

_measure = simulate.SimProcess.measure


def measure(self, *args, **kwargs):
    """valgrind SIGKILLed while this test's kernel is simulated"""
    if self._proc is None:
        self.start()
    self._proc.kill()
    self._proc.wait()
    return _measure(self, *args, **kwargs)


simulate.SimProcess.measure = measure
'''


@needs_valgrind
def test_a_valgrind_killed_during_a_gate_fails_the_test_naming_its_log(sim_project):
    """issue 23: a valgrind killed mid-run left the gate passing with the counts ungated,
    and the log a message named was deleted at the session's end."""
    import re

    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    recorded = counts(sim_project)
    sim_project.pytester.makepyfile(conftest_kill=KILL_VALGRIND)
    # in a subprocess: the kill is a patch of the plugin's module
    result = sim_project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "conftest_kill", *GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: test_perf.py::test_scale[[]llvm-prim[]]: cpu_instructions, est_cycles "
            "could not be measured: simulated cost: the measuring process (valgrind) * "
            "(killed by SIGKILL)*; its log is kept as */simulate-logs/valgrind-*.log; "
            "give the workload a scaled-down simulate_as=* or --tvmperf-simulate=off*"
        ]
    )
    log = Path(re.search(r"its log is kept as (\S+\.log)", result.stdout.str()).group(1))
    # issue 37: the copy the message names outlives the next run's clean-up of scratch folders
    assert log.is_file() and log.parent.name == "simulate-logs"

    update = sim_project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "conftest_kill", "--tvmperf-update", *GATE
    )
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["*kept the stored cpu_instructions, est_cycles counts*"])
    assert counts(sim_project) == recorded


SILENT_VALGRIND = """
import subprocess
import sys

from pytest_tvmperf.measure import simulate

# the measuring process answers its start and never a request (a kernel that runs for ever under
# valgrind); it ends at the end of its input, as the harness does
SILENT = "import json, sys; print(json.dumps({'on_valgrind': True}), flush=True); [None for _ in sys.stdin]"


def start(self):
    self._proc = subprocess.Popen([sys.executable, "-c", SILENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
    (self.workdir / "valgrind.log").write_text("")
    self._read(simulate.STARTUP_TIMEOUT_S, "starting")


simulate.SimProcess.start = start
simulate.WAIT_NOTICE_S = 1.0
"""


@needs_valgrind
def test_a_simulation_that_never_answers_is_stopped_at_the_child_timeout_and_says_it_waits(sim_project):
    """issue 66 case 8: with valgrind on, a hung kernel sat silent for 150 s under a fixed 600 s
    request deadline. The request's deadline is --tvmperf-child-timeout, and a long wait says so."""
    sim_project.pytester.makepyfile(conftest_silent=SILENT_VALGRIND)
    result = sim_project.pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "conftest_silent",
        "--tvmperf-update",
        "--tvmperf-simulate=on",
        "--tvmperf-child-timeout=4",
        *GATE,
    )
    result.stdout.fnmatch_lines(
        [
            "tvmperf: simulating scale of scale under valgrind: still waiting after 1 s; it is stopped at 4 s "
            "(--tvmperf-child-timeout)",
            "*simulated cost: the measuring process (valgrind) took longer than 4s while simulating scale of scale*",
        ],
        consecutive=False,
    )
    assert "took longer than 600s" not in result.stdout.str()


def test_switched_off_by_the_marker(sim_project):
    sim_project.pytester.makepyfile(
        test_perf=SMALL_KERNEL.replace('executors=["prim"]', 'executors=["prim"], simulate="off"')
    )
    result = sim_project.run("--tvmperf-update", *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tvmperf: simulated cost: switched off*"])
    assert "per_kernel" not in sim_project.baselines()["tests"]["test_scale[llvm-prim]"]["exact"]


@needs_valgrind
def test_a_scaled_down_workload_is_simulated_in_its_place_and_named(project, simulated_cost):
    """``simulate_as``: the big shape is timed and checked, the small one is counted (the
    same count as the small workload's own test), and the record says which."""
    project.pytester.makepyfile(
        test_perf=SMALL_KERNEL
        + """

@pytest.mark.tvmperf(executors=["prim"])
def test_big(tvmperf):
    from dataclasses import replace
    tvmperf.check(replace(scale(640), simulate_as=scale(64)))
"""
    )
    project.set_env("SCALE_STEPS", "64")
    project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=2)
    tests = project.baselines()["tests"]
    big, small = tests["test_big[llvm-prim]"]["exact"], tests["test_scale[llvm-prim]"]["exact"]
    assert (
        big["measured_with"]["cpu_instructions"]
        == small["measured_with"]["cpu_instructions"] + "; scaled down to scale"
    )
    assert big["per_kernel"]["cpu_instructions"]["scale"] == small["per_kernel"]["cpu_instructions"]["scale"]


@needs_valgrind
def test_a_simulation_predicted_too_long_is_skipped_up_front_with_what_to_do(sim_project, monkeypatch):
    """issue 32: a network of seconds held the run for valgrind's 600 s timeout and gave
    nothing. The simulated call's duration is predicted from the native run (x SLOWDOWN);
    past the budget it is skipped before valgrind starts, in one line that says what to do."""
    import sys

    from pytest_tvmperf.measure import simulate

    # the patches below reach the run only on the module it imports (tests/conftest.py)
    assert sys.modules.get(simulate.__name__) is simulate, "a stale copy of measure/simulate.py: the patches would miss"

    def never(self):
        raise AssertionError("valgrind was started for a simulation predicted past its budget")

    monkeypatch.setattr(simulate, "SIMULATE_BUDGET_S", 1e-9)  # any kernel is "too long"
    monkeypatch.setattr(simulate.SimProcess, "start", never)
    result = sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "tvmperf: simulated cost: skipped scale up front (not waited for): one run takes * s "
            "here, so ~* s under valgrind (~100x), past its 1e-09 s budget; give the workload a "
            "scaled-down simulate_as=smaller_workload (counted in its place), or "
            "--tvmperf-simulate=off*"
        ]
    )
    assert "per_kernel" not in sim_project.baselines()["tests"]["test_scale[llvm-prim]"]["exact"]


def _broken_valgrind(project, tmp_path: Path) -> None:
    """A valgrind that tells its version as the real one does and dies on any measurement."""
    real = shutil.which("valgrind")
    bin_dir = tmp_path / "broken-bin"
    bin_dir.mkdir()
    fake = bin_dir / "valgrind"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then exec {real} --version; fi\nexit 3\n')
    fake.chmod(0o755)
    project.set_env("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


@needs_valgrind
def test_an_unchanged_programs_counts_are_the_baselines_and_valgrind_does_not_run(sim_project, tmp_path: Path):
    """issue 32 (model-scale cost): a gate of the baseline's own program (same lowered IR,
    weights, TVM, fixed input shapes) measured the same way takes the stored counts: a new
    count would be the same (deterministic), and a network's count costs minutes."""
    sim_project.monkeypatch.delenv("TVMPERF_SAME_PROGRAM", raising=False)  # the default, skip
    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    recorded = counts(sim_project)
    _broken_valgrind(sim_project, tmp_path)
    result = sim_project.run("--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(passed=1)  # valgrind, which would have died, was not asked
    result.stdout.fnmatch_lines(
        [
            "tvmperf: simulated cost: counts of unchanged programs taken from their baselines "
            "(the same program, with fixed input shapes, measured the same way*"
            "--tvmperf-same-program=time counts them again)"
        ]
    )
    assert counts(sim_project) == recorded
    # asked to count all the same, it counts: the broken valgrind is started, and says so
    again = sim_project.run("--tvmperf-simulate=on", "--tvmperf-same-program=time", *GATE)
    again.stdout.fnmatch_lines(["tvmperf: simulated cost: the measuring process (valgrind) ended (exit status 3)*"])
    again.stdout.no_fnmatch_line("*counts of unchanged programs taken from their baselines*")
    # another program is counted: the same
    sim_project.set_env("SCALE_STEPS", "65")
    changed = sim_project.run("--tvmperf-simulate=on", *GATE)
    changed.stdout.fnmatch_lines(["tvmperf: simulated cost: the measuring process (valgrind) ended (exit status 3)*"])
    changed.stdout.no_fnmatch_line("*counts of unchanged programs taken from their baselines*")
