"""The tuned pipeline through the plugin, as a user runs it: a missing database fails
with the tune command, --tvmperf-tune tunes (with a progress bar) and records which
records the baseline was measured with, a changed database is named, and a stale one
(the workload changed since tuning) fails naming its kernels."""

from __future__ import annotations

import inspect
import json
import re

import pytest

import platform

from pytest_tvmperf.builder import host_cpu
from tests.test_host_target import ZEN4_MODEL, _vm_without_avx512
from tests.unit.test_tuning import SIZES, tiny_mlp

TUNED_TEST = f"""
import os
import numpy as np
import pytest
from pytest_tvmperf import Workload

SIZES = {SIZES!r}

{inspect.getsource(tiny_mlp)}

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_tuned(tvmperf):
    tvmperf.check(tiny_mlp(int(os.environ.get("TINY_BATCH", "4"))).with_pipeline("tuned"))
"""


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tune_record_gate_and_stale_database(project):
    project.pytester.makepyfile(test_perf=TUNED_TEST)
    db = project.pytester.path / "baselines" / "tuning"

    missing = project.run("--tvmperf-update")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [
            "*tiny_mlp(4) on llvm/vm-bytecode: tuning database */baselines/tuning does not exist; "
            "create it with: pytest --tvmperf-tune=TRIALS*"
        ]
    )

    tuned = project.run("--tvmperf-update", "--tvmperf-tune=4")
    tuned.assert_outcomes(passed=1)
    assert "tuning tiny_mlp(4)" in tuned.stderr.str()  # the progress bar, through pytest's capture
    assert sorted(p.name for p in db.iterdir()) == [
        "database_tuning_record.json",
        "database_workload.json",
        "tuning_runs.jsonl",  # the run's time and trials, kept with the records
    ]
    entry = project.baselines()["tests"]["test_tuned[llvm-vm-bytecode]"]
    assert entry["pipeline"] == "tuned"
    assert entry["tuning"]["db_dir"] == "baselines/tuning" and entry["tuning"]["missing"] == []
    assert len(entry["tuning"]["tasks"]) == 2 and len(entry["tuning"]["records_hash"]) == 16

    project.run().assert_outcomes(passed=1)

    # another test tunes the same kernels into the shared database and finds faster schedules (issue 37 §3):
    # this test keeps the records its baseline was measured with, and says nothing changed
    records = db / "database_tuning_record.json"
    original = records.read_text()
    faster = [json.loads(line) for line in original.splitlines() if line.strip()]
    for row in faster:
        row[1][1] = [t * 0.1 for t in row[1][1]]
    records.write_text(original + "".join(json.dumps(r) + "\n" for r in faster))
    isolated = project.run()
    isolated.assert_outcomes(passed=1)
    assert "records changed since the baseline" not in isolated.stdout.str()
    records.write_text(original)

    # the records changed under the baseline (as after a re-tune): named in the summary
    rows = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    for row in rows:
        row[1][1] = [t * 0.5 for t in row[1][1]]  # run_secs
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    changed = project.run()
    changed.assert_outcomes(passed=1)
    changed.stdout.fnmatch_lines(["*1 test(s): tuning database records changed since the baseline*"])

    # tuned on another CPU (a real one, another model): its schedules apply here, the test is gated, and says so
    saved = records.read_text()
    records.write_text(re.sub(r'"mcpu": "[^"]*"', '"mcpu": "x86-64-v2"', re.sub(r',"mattr":\[[^]]*\]', "", saved)))
    elsewhere = project.run("-rs")
    elsewhere.assert_outcomes(passed=1)
    assert "schedules tuned on x86-64-v2, applied on " in elsewhere.stdout.str()
    assert ": 2 of 2 kernels" in elsewhere.stdout.str()
    # the strict mode takes this target's own records only: shown as a skip with the reason, not failed
    strict = project.run("-rs", "--tvmperf-tuned=exact")
    strict.assert_outcomes(skipped=1)
    # the summary says what a newcomer runs to record them here (not only visible with -rs)
    strict.stdout.fnmatch_lines(
        [
            "tvmperf: 1 tuned test(s) skipped: the tuning database has records for other CPUs "
            "only; to tune and record them on this machine (*): pytest --tvmperf-tune=64 "
            "--tvmperf-update --tvmperf-tuned=exact 'test_perf.py::test_tuned[[]llvm-vm-bytecode[]]'"
        ]
    )
    strict.stdout.fnmatch_lines(
        [
            "*the tuning database baselines/tuning has no records for this target (llvm: *, "
            "2 of 2 kernel(s)) but has some for 1 other target(s) (--tvmperf-tuned=exact); "
            "tune here with:*"
        ]
    )
    # under xdist the skip happens on a worker: the controller's summary still says what to run
    workers = project.run("-rs", "--tvmperf-tuned=exact", "-n", "2")
    workers.assert_outcomes(skipped=1)
    workers.stdout.fnmatch_lines(
        [
            "tvmperf: 1 tuned test(s) skipped: the tuning database has records for other CPUs "
            "only; to tune and record them on this machine (*): pytest --tvmperf-tune=64 "
            "--tvmperf-update --tvmperf-tuned=exact 'test_perf.py::test_tuned[[]llvm-vm-bytecode[]]'"
        ]
    )

    # tuned on a Zen 4 workstation (AVX-512), gated on a Zen 4 VM whose hypervisor hides AVX-512 (GitHub's hosted
    # runners), emulated by injecting the host's model and flags as tests/test_host_target.py does
    if host_cpu.is_x86(platform.machine() + "-"):
        records.write_text(re.sub(r'"mcpu": "[^"]*"', '"mcpu": "znver4"', re.sub(r',"mattr":\[[^]]*\]', "", saved)))
        conftest = project.pytester.path.joinpath("conftest.py").read_text()
        project.pytester.makeconftest(conftest + ZEN4_MODEL)  # read by the subprocess only
        project.set_env(host_cpu.CPUINFO_ENV, str(_vm_without_avx512(project.pytester.path)))
        vm = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
        vm.assert_outcomes(passed=1)
        vm.stdout.fnmatch_lines(
            ["*schedules tuned on znver4 with other CPU features or cores, applied on znver4: 2 of 2 kernels*"]
        )
        project.set_env(host_cpu.CPUINFO_ENV, "")
        project.pytester.makeconftest(conftest)  # the in-process runs below must not take the emulated model
    records.write_text(saved)

    # the workload changed since tuning: no record applies to any kernel; gated untuned, said in one line
    project.set_env("TINY_BATCH", "2")
    untuned = project.run("--tvmperf-update")
    untuned.assert_outcomes(passed=1)
    untuned.stdout.fnmatch_lines(
        [
            "tvmperf: tuning database baselines/tuning has no record that applies to any kernel "
            "of tiny_mlp(2) on *: gated untuned; tune here with: pytest --tvmperf-tune=TRIALS*"
        ]
    )
    assert project.baselines()["tests"]["test_tuned[llvm-vm-bytecode]"]["tuning"]["source"].startswith(
        "untuned: baselines/tuning has no record that applies here"
    )
    # ... and the strict mode fails it, naming the kernels
    stale = project.run("--tvmperf-update", "--tvmperf-tuned=exact")
    stale.assert_outcomes(failed=1)
    stale.stdout.fnmatch_lines(
        [
            "*the tuning database baselines/tuning is stale: 2 of 2 kernel(s) have no tuning record*",
            "*re-tune with: pytest --tvmperf-tune=TRIALS --tvmperf-update --tvmperf-tuned=exact*",
        ]
    )


def test_an_unparseable_budget_is_a_usage_error_listing_the_forms(project):
    project.pytester.makepyfile(test_perf=TUNED_TEST)
    result = project.run("--tvmperf-tune-budget=half an hour")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "accepted forms: 90s, 30m, 1.5h, 1h30m" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize(
    "where, args, shown",
    [
        ('tuning_db="dbs/mine"', (), "*/dbs/mine does not exist*"),  # the workload's own
        ("", ("--tvmperf-tuning-db=elsewhere",), "*/baselines/elsewhere does not exist*"),  # the option
    ],
)
def test_the_database_comes_from_the_workload_or_the_option(project, where, args, shown):
    project.pytester.makepyfile(
        test_perf=f"""
import dataclasses
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_tuned(tvmperf):
    w = workloads.mlp(batch=1)
    tvmperf.check(dataclasses.replace(w, pipeline="tuned", {where}) if {bool(where)} else w.with_pipeline("tuned"))
"""
    )
    result = project.run("--tvmperf-update", *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([shown])


# --- issue 47: tuning keeps its budget (a fake tuner on a fake clock: nothing is measured) ----

FAKE_TUNER = '''

from pytest_tvmperf.builder.tuning_display import TunerChoice


class _FakeClock:
    now = 0.0

    def __call__(self):
        return self.now


class _FakeTuner:
    """Each trial takes 5 s of the fake clock, in batches of up to 16; nothing is measured."""

    def __init__(self, clock):
        self.clock = clock

    def start(self):
        pass

    def tune(self, kernel, trials, on_batch):
        while trials > 0:
            n = min(16, trials)
            self.clock.now += 5.0 * n
            trials -= n
            if not on_batch(n, n):
                return


@pytest.fixture
def tvmperf_tuner():
    clock = _FakeClock()
    return TunerChoice(make=lambda kernels: _FakeTuner(clock), clock=clock)
'''


def _fake_tuner_project(project):
    project.pytester.makepyfile(test_perf=TUNED_TEST)
    conftest = project.pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + FAKE_TUNER)


def test_a_budget_run_prints_its_estimate_first_then_plain_lines_in_a_log(project):
    _fake_tuner_project(project)
    result = project.run("--tvmperf-tune-budget=4m")
    result.assert_outcomes(failed=1)  # the fake tuner measured nothing: no valid schedule, said so
    result.stdout.fnmatch_lines(["*tuning found no valid schedule for 2 of 2 kernel(s)*"])
    err = result.stderr.str()
    lines = [line for line in err.splitlines() if line.startswith(("tuning tiny_mlp", "tvmperf tune"))]
    assert lines == [  # 5 s a trial: 2 x 10 s for a first batch each, the 220 s left by share
        "tvmperf tune tiny_mlp(4): 2 kernel(s), 47 trials, about 3.9 min of the 4 min budget "
        "(first batch: 2 trial(s) in 10 s)",
        "tuning tiny_mlp(4): 1/2 kernels fused_matmul_add: 2/31 trials, 10 s",  # the largest kernel first
        "tuning tiny_mlp(4): 1/2 kernels fused_matmul_add: 18/31 trials, 90 s",
        "tuning tiny_mlp(4): 1/2 kernels fused_matmul_add: done, 31/31 trials in 2.6 min",
        "tuning tiny_mlp(4): 2/2 kernels fused_matmul1_add1: 16/17 trials, 80 s",  # its own clock
        "tuning tiny_mlp(4): 2/2 kernels fused_matmul1_add1: done, 17/17 trials in 85 s",
        "tvmperf tune tiny_mlp(4): 4.0 min used of the 4 min budget, 48 trial(s) on 2 kernel(s), 0 record(s) written",
    ]
    assert "\r" not in err and "\x1b" not in err  # stderr is not a terminal here: no tqdm codes
    runs = [
        json.loads(line)
        for p in project.pytester.path.rglob("tuning_runs.jsonl")
        for line in p.read_text().splitlines()
    ]
    assert [(r["workload"], r["used_s"], r["budget_s"], r["trials"], r["kernels"]) for r in runs] == [
        ("tiny_mlp(4)", 240.0, 240.0, 48, 2)  # kept with the records: the time it took against its budget
    ]


def test_a_budget_too_small_for_one_schedule_per_kernel_is_a_usage_error(project):
    _fake_tuner_project(project)
    result = project.run("--tvmperf-tune-budget=15")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # as an unparseable --tvmperf-tune-budget
    result.stdout.fnmatch_lines(
        [
            "*tiny_mlp(4) on llvm/vm-bytecode: the tuning budget 15s is too small for tiny_mlp(4): "
            "its 2 kernel(s) need at least 2 trials each to build one valid schedule, and the first "
            "batch took 10.0 s for 2 trial(s); the smallest budget that would do: 20s. Run again "
            "with --tvmperf-tune-budget=20s (or: tvmperf tune --budget 20s)*"
        ]
    )
    assert "tvmperf tune tiny_mlp(4): 2 kernel(s)" not in result.stderr.str()  # no estimate: nothing more is tuned


def test_under_xdist_a_budget_too_small_fails_the_test_with_the_message(project):
    """A pytest.exit in an xdist worker is an internal error that loses the message."""
    _fake_tuner_project(project)
    result = project.run("--tvmperf-tune-budget=15", "-n", "2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the tuning budget 15s is too small for tiny_mlp(4)*the smallest budget that would "
            "do: 20s. Run again with --tvmperf-tune-budget=20s*"
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str()
