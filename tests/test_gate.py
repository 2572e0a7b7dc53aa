"""End to end, as a user runs it: record -> pass -> regress -> update -> pass."""

from __future__ import annotations

import json

import pytest

from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.store.rerecord import dump_text

MLP_TEST = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, bind_params=os.environ.get("MLP_BIND", "1") == "1"))
"""

TWO_TESTS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))

@pytest.mark.tvmperf(executors=["prim"])
def test_b(tvmperf):
    tvmperf.check(workloads.multiply(m=16, n=16))
"""


def test_record_pass_regress_update_pass(project):
    project.pytester.makepyfile(test_perf=MLP_TEST)

    first = project.run()
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(
        [
            "*no baseline for test_mlp[[]llvm-vm-bytecode[]]*",
            "*create it with: pytest --tvmperf-update*test_perf.py::test_mlp*",
        ]
    )

    project.run("--tvmperf-update").assert_outcomes(passed=1)
    entry = project.baselines()["tests"]["test_mlp[llvm-vm-bytecode]"]
    assert entry["exact"]["instructions"] == {"forward": 17}
    assert entry["target"]["kind"] == "llvm" and entry["target"]["mcpu"]
    assert entry["tvm_version"].startswith("0.27")
    ((fingerprint, timing),) = entry["timings"].items()
    assert timing["machine"]["logical_cores"] >= 1 and len(fingerprint) == 12

    project.run().assert_outcomes(passed=1)

    # the same test id switched to the slower variant: weights passed at run time
    project.set_env("MLP_BIND", "0")
    slower = project.run()
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            "*instructions*regressed against the baseline in baselines/test_perf.json*",
            "*instructions 17 -> 28 (+11, limit no increase)*",
            "*kernels since the baseline*new: transpose*",
            "*workload was mlp(batch=1, bind_params=True), now mlp(batch=1, bind_params=False)*",
            "*to accept these values as the new baseline: pytest --tvmperf-update*test_perf.py::test_mlp*",
            "details:",  # the head's 12 lines are full: the callees follow
            "*by callee:*transpose*",
        ]
    )
    out = slower.stdout.lines
    first = next(i for i, line in enumerate(out) if line.startswith("tvmperf: instructions"))
    assert out.index("details:") - first <= 12

    project.run("--tvmperf-update").assert_outcomes(passed=1)
    assert project.baselines()["tests"]["test_mlp[llvm-vm-bytecode]"]["exact"]["instructions"] == {"forward": 28}
    project.run().assert_outcomes(passed=1)


def test_time_gate_with_injected_slowdown(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)  # the old form
    artifacts = list((project.pytester.path / "baselines" / "artifacts").rglob("*.so"))
    assert len(artifacts) == 2  # saved for a/b timing, one per test
    project.set_env("TVMPERF_TRUST_ARTIFACTS", "on")  # the old form's libraries are loaded only when trusted

    project.set_env("TVMPERF_FAKE_SCALE", "1.02")  # +2%: inside the default 5% threshold
    project.run().assert_outcomes(passed=2)

    project.set_env("TVMPERF_FAKE_SCALE", "1.10")  # a real 10% slowdown is caught
    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: time regressed against the baseline in baselines/test_perf.json*",
            "*time 1.01 ms -> 1.11 ms (medians, side by side); a/b ratio 1.10x (97.5% CI 1.05-1.15x), limit +5%, 45 samples*",
            "*compared: the baseline's artifact timed side by side*",
            "*note: first measurement regressed at 1.10x (97.5% CI 1.05-1.15x, a/b); re-measured with 45 samples in all: confirmed*",
        ]
    )
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*prim*llvm*1.11 ms*1.01 ms*1.10x*regressed*"])

    # a looser threshold from the command line lets the 10% pass
    project.run("--tvmperf-threshold=time=20%").assert_outcomes(passed=2)


def test_noise_larger_than_threshold_is_inconclusive_and_configurable(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.set_env("TVMPERF_FAKE_SCALE", "1.04")
    noisy = ["--tvmperf-noise=ab=5%"]  # the side-by-side noise now exceeds the 5% threshold
    result = project.run(*noisy)  # one summary line for both, no multi-line warning per test
    result.assert_outcomes(passed=2, warnings=0)
    result.stdout.fnmatch_lines(
        [
            "*test_a[[]llvm-prim[]]*inconclusive*",
            "tvmperf: 2 test(s) inconclusive (*): not failed; each test's details with -v;*",
        ]
    )
    assert "TvmperfInconclusive" not in result.stdout.str()
    result = project.run(*noisy, "-v")  # with -v: each test's details as a warning
    result.assert_outcomes(passed=2, warnings=2)
    result.stdout.fnmatch_lines(
        ["*TvmperfInconclusive: tvmperf: time inconclusive*noise is larger than the threshold*"]
    )
    project.run(*noisy, "--tvmperf-inconclusive=fail").assert_outcomes(failed=2)
    project.run(*noisy, "--tvmperf-inconclusive=pass").assert_outcomes(passed=2, warnings=0)


def test_improvement_is_reported_not_failed(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.set_env("TVMPERF_FAKE_SCALE", "0.3")
    result = project.run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*0.30x*improved*"])


def test_threshold_precedence_cli_over_marker_over_ini(project):
    project.pytester.makepyfile(
        test_perf="""
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"], time="400%")
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""
    )
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "3")
    project.run().assert_outcomes(passed=1)  # marker: +400%
    project.pytester.makeini("[pytest]\ntvmperf_threshold = time=50%\n")
    project.run().assert_outcomes(passed=1)  # the marker beats the ini (closest wins)
    project.run("--tvmperf-threshold=time=50%").assert_outcomes(failed=1)  # the command line beats the marker


def test_update_rewrites_only_the_tests_that_ran(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    before = project.baselines()["tests"]
    project.set_env("TVMPERF_FAKE_SCALE", "7")
    text = project.baseline_file().read_text()
    # the same program timed 7x slower: its entry is kept byte for byte (only measurements moved)
    result = project.run("--tvmperf-update", "-k", "test_a")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*baselines written for 1 test(s)*(0 rewritten, 1 kept as they were*"])
    assert project.baseline_file().read_text() == text
    # asked for: --tvmperf-retime rewrites the measurements of the tests that ran, and only those
    project.run("--tvmperf-update", "--tvmperf-retime", "-k", "test_a").assert_outcomes(passed=1, deselected=1)
    after = project.baselines()["tests"]
    assert after["test_b[llvm-prim]"] == before["test_b[llvm-prim]"]
    assert after["test_a[llvm-prim]"] != before["test_a[llvm-prim]"]
    (timing,) = after["test_a[llvm-prim]"]["timings"].values()
    assert timing["median_s"] == 0.00707
    project.run("--tvmperf-retime").stderr.fnmatch_lines(["*--tvmperf-retime*use it with --tvmperf-update*"])


#: a TE workload whose program is its constant, ``k`` (os.environ: the test picks it): another
#: k is another program with the same counts and time
SCALE_WORKLOAD = """
import os

import pytest
from tvm import te

from pytest_tvmperf import Workload, workloads


def scale(k):
    a = te.placeholder((256,), name="A")
    b = te.compute((256,), lambda i: a[i] * k, name="B")
    return Workload(name="scale", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, d: [rng.uniform(size=256).astype("float32")],
                    reference=lambda x: x * k)
"""

BUSY_CHANGE = (
    SCALE_WORKLOAD
    + """

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))


@pytest.mark.tvmperf(executors=["prim"])
def test_b(tvmperf):
    tvmperf.check(scale(float(os.environ.get("B_K", "2"))))
"""
)


def test_a_busy_rerecord_keeps_the_unchanged_entry_and_says_how_the_changed_one_was_timed(project):
    """issue 59, bad input: a whole-suite re-record on a machine too busy to time well keeps the
    unchanged program's entry as it was (its busy samples are not stored, and not noted) and writes
    the changed one, saying it was recorded on a busy machine."""
    project.pytester.makepyfile(test_perf=BUSY_CHANGE)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    before = project.baselines()["tests"]
    project.set_env("TVMPERF_FAKE_PREEMPTED", "0.6")  # every sample waited 60% of its time for a CPU
    project.set_env("B_K", "3")  # test_b's program changed
    result = project.run("--tvmperf-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 test(s): recorded on a busy machine*", "*(1 rewritten, 1 kept as they were*"])
    after = project.baselines()["tests"]
    assert after["test_a[llvm-prim]"] == before["test_a[llvm-prim]"]
    assert after["test_b[llvm-prim]"]["ir"] != before["test_b[llvm-prim]"]["ir"]


def test_baseline_file_is_stable_and_sorted(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    text = project.baseline_file().read_text()
    data = json.loads(text)
    assert data["schema_version"] == 1
    assert text == dump_text(data)  # sorted, two-space indent, each list of numbers on one line
    assert '"samples_s": [' in text and '"samples_s": [\n' not in text
    assert list(data["tests"]) == ["test_a[llvm-prim]", "test_b[llvm-prim]"]


def _move_timings_to_another_machine(project, **machine) -> None:
    path = project.baseline_file()
    data = json.loads(path.read_text())
    for entry in data["tests"].values():
        (timing,) = entry["timings"].values()
        timing["machine"].update(machine)
        entry["timings"] = {Machine.from_json(timing["machine"]).fingerprint: timing}  # the key is checked
    path.write_text(json.dumps(data))


def test_time_from_another_machine_is_compared_normalized_or_skipped(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)  # no IR to rebuild
    _move_timings_to_another_machine(project, tvm_threads=7)  # same CPU model, another thread count
    project.set_env("TVMPERF_FAKE_SCALE", "10")
    result = project.run("--tvmperf-other-machine=normalized")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*time 1.01 ms -> 10.1 ms (stored median -> this run's); normalized ratio 10.00x (97.5% CI *",
            "*compared: vs another machine (*, *), normalized*",
        ]
    )
    result = project.run()  # the default: shown, not gated, and said so
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_a[[]llvm-prim[]]*10.1 ms*-*pass*",
            "*2 test(s): time shown, not gated: no time baseline for this machine*--tvmperf-other-machine=skip*",
        ]
    )


def test_a_baseline_from_another_cpu_model_never_fails_the_time_gate(project):
    """The reference kernel does not scale like the workload across micro-architectures
    (unchanged code measured 2.6-2.7x apart between AMD and Intel): shown, held at
    inconclusive, never failed; the exact metrics stay gated."""
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)  # no IR to rebuild
    _move_timings_to_another_machine(project, cpu_model="Other CPU")
    project.set_env("TVMPERF_FAKE_SCALE", "10")
    result = project.run("--tvmperf-other-machine=normalized")
    result.assert_outcomes(passed=2, warnings=0)
    result.stdout.fnmatch_lines(["*2 test(s): time inconclusive: baseline from another CPU model (Other CPU)*"])
    result = project.run("--tvmperf-other-machine=normalized", "--tvmperf-inconclusive=fail")
    result.stdout.fnmatch_lines(
        ["*baseline from another CPU model (Other CPU): normalized times do not carry across CPU models*"]
    )


def test_interrupted_update_leaves_baselines_intact(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    before = project.baseline_file().read_text()
    project.pytester.makepyfile(
        test_perf=TWO_TESTS
        + """
def test_zz_interrupt():
    raise KeyboardInterrupt
"""
    )
    project.set_env("TVMPERF_FAKE_SCALE", "5")
    # in a subprocess: an in-process run would hand the Ctrl-C on to this test session
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tvmperf-update")
    assert result.ret == 2  # pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*run interrupted: no baseline file was changed*"])
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    assert project.baseline_file().read_text() == before


def test_executors_and_targets_from_ini_and_test_ids(project):
    project.pytester.makeini("[pytest]\ntvmperf_executors = vm-compiled\ntvmperf_targets = llvm\n")
    project.pytester.makepyfile(
        test_perf="""
from pytest_tvmperf import workloads

def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""
    )
    result = project.run("--tvmperf-update", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_perf.py::test_mlp[[]llvm-vm-compiled[]] PASSED*"])
    entry = project.baselines()["tests"]["test_mlp[llvm-vm-compiled]"]
    assert entry["exact"]["instructions"] is None  # compiled mode: n/a, never 0
    assert entry["exact"]["calls"] is None
    assert entry["exact"]["kernels"] == 3
    result.stdout.fnmatch_lines(["*test_mlp[[]llvm-vm-compiled[]]*vm-compiled*llvm*n/a*recorded*"])
    # the command line beats ini
    result = project.run("--tvmperf-executors=vm-bytecode,vm-compiled", "--tvmperf-update", "-v")
    result.assert_outcomes(passed=2)


def test_one_check_per_test(project):
    project.pytester.makepyfile(
        test_perf="""
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_twice(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
    tvmperf.check(workloads.multiply(m=8, n=8))
"""
    )
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tvmperf.check() was already called in this test*"])


def test_xdist_workers_time_one_at_a_time_and_lose_nothing(project):
    pytest.importorskip("xdist")
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    result = project.run("-n", "2", "--tvmperf-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*recorded*", "*baselines written for 2 test(s)*"])
    assert sorted(project.baselines()["tests"]) == ["test_a[llvm-prim]", "test_b[llvm-prim]"]

    project.set_env("TVMPERF_FAKE_SCALE", "1.10")
    result = project.run("-n", "2")  # the gate is not skipped under -n
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*tvmperf summary*"])
    result.stdout.fnmatch_lines(["*test_b[[]llvm-prim[]]*1.10x [[]1.05-1.15[]] a/b*regressed*"])


def test_a_measurement_that_fails_leaves_no_artifact_behind(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.set_env("TVMPERF_FAKE_SCALE", "not a number")  # the injected timer raises after the export
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=2)
    left = [p for p in (project.pytester.path / "baselines").rglob("*") if p.is_file() and p.name != ".tvmperf.lock"]
    assert left == []


def test_only_a_regression_seen_twice_fails(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    # first measurement: noisy around 1.0 (inconclusive); the re-measure alone looks 50% slower
    project.set_env("TVMPERF_FAKE_SPREAD", "0.3")
    project.set_env("TVMPERF_FAKE_CONFIRM_SCALE", "1.5")
    result = project.run("-v", "--tvmperf-decide-budget=off")
    result.assert_outcomes(passed=2, warnings=2)
    result.stdout.fnmatch_lines(
        [
            "*first measurement inconclusive at 1.0?x *; re-measured with 45 samples in all: "
            "fails on all samples, but the measurements disagree (1.0?x, then 1.5?x): inconclusive*"
        ]
    )
    # measured until decided (issue 60): the later measurements are at 1.0x again, so it passes
    result = project.run("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 test(s): decided after * more rounds*"])
    # a regression that both measurements see fails
    project.set_env("TVMPERF_FAKE_SPREAD", "0")
    project.set_env("TVMPERF_FAKE_SCALE", "1.5")
    project.run().assert_outcomes(failed=2)


THREAD_AWARE_TIMER = '''
import os
import pytest
import tvm
from pytest_tvmperf.values.samples import TimeSamples


@pytest.fixture
def tvmperf_timer():
    """As the fake timer, but a machine that cannot give 2 threads: every round at more
    than one TVM thread was preempted; at one thread the rounds are clean."""
    def timer(task, rounds):
        scale = float(os.environ.get("TVMPERF_FAKE_SCALE", "1"))
        base = [1e-3 * (1 + 0.01 * (i % 3)) for i in range(rounds)]
        busy = tvm.runtime.num_threads() > 1
        return TimeSamples(
            tuple(scale * b for b in base),
            tuple(base) if task.reference is not None else None,
            task.reference_name,
            tuple(base) if task.baseline is not None else None,
            preempted=(0.6 if busy else 0.0,) * rounds,
        )
    return timer
'''


def test_a_multithreaded_kernel_on_a_busy_machine_is_timed_at_one_thread(project):
    project.pytester.makeconftest(THREAD_AWARE_TIMER)
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.set_env("TVM_NUM_THREADS", "2")
    run = lambda *a: project.pytester.runpytest_subprocess("-p", "no:cacheprovider", *a)  # noqa: E731
    # recorded at 2 threads on the busy machine: kept, and said so
    result = run("--tvmperf-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 test(s): recorded on a busy machine (machine busy: 100% of samples preempted*"])
    # gated: the a/b pair is timed at one thread, where the verdict can be trusted
    result = run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 test(s): timed at 1 TVM thread(s): machine busy*"])
    project.set_env("TVMPERF_FAKE_SCALE", "1.5")
    result = run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*note: timed at 1 of 2 TVM threads, both sides alike: the machine could not give 2 "
            "(100% of samples preempted at 2)*"
        ]
    )
    # without the a/b artifact the stored 2-thread samples are all there is: inconclusive, not failed
    result = run("--tvmperf-artifacts=off")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*time inconclusive: machine busy*"])
