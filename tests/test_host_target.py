"""Which CPU the kernels are built for, as a user meets it: a host that looks like a Zen 4
VM whose hypervisor hides AVX-512 (GitHub's hosted runners), the override option, and a
kernel that dies of SIGILL. Every machine runs these: the host's model and flags are
injected (a conftest that names the model, ``$TVMPERF_CPUINFO`` for the flags)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_tvmperf.builder import host_cpu
from test_baselines_hostile_data import LOOPS_FROM_SECOND_CALL

PRIM_TEST = """
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload, workloads

def scale(k: float, n: int = 4096):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * k, name="B")
    return Workload(name=f"scale{k:g}", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
                    reference=lambda x: x * np.float32(k), rtol=1e-6, atol=1e-6)

@pytest.mark.tvmperf(executors=["prim"])
def test_scale(tvmperf):
    tvmperf.check(scale(2.0))

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""

#: LLVM names this host's CPU as a Zen 4 (as it does on a Zen 4 VM without AVX-512)
ZEN4_MODEL = """
import tvm
tvm.target.codegen.llvm_get_system_cpu = lambda: "znver4"
"""

SIGILL_TEST = """
import numpy as np
import pytest
from tvm import te, tirx
from pytest_tvmperf import Workload

def dies_of_sigill(n: int = 16):
    a = te.placeholder((n,), name="A")
    # raise(SIGILL): what the first AVX-512 instruction does on a CPU whose OS hides AVX-512
    b = te.compute((n,), lambda i: a[i] + tirx.Cast("float32", tirx.call_extern("int32", "raise", 4)), name="B")
    return Workload(name="sigill", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(n, "float32")], reference=lambda x: x)

@pytest.mark.tvmperf(executors=["prim"])
def test_sigill(tvmperf):
    tvmperf.check(dies_of_sigill())
"""


def _host_flags() -> set[str]:
    view = host_cpu.read_host()
    return set(view.kernel_flags or ())


def _vm_without_avx512(tmp: Path) -> Path:
    """A cpuinfo file: this machine's flags with every AVX-512 flag taken away."""
    flags = sorted(f for f in _host_flags() if not f.startswith("avx512"))
    path = tmp / "cpuinfo-no-avx512"
    path.write_text("processor\t: 0\nflags\t\t: " + " ".join(flags) + "\n")
    return path


def _stored_targets(root: Path) -> dict[str, dict]:
    tests = json.loads((root / "baselines" / "test_perf.json").read_text())["tests"]
    return {name: entry["target"] for name, entry in tests.items()}


def _features(target: dict) -> set[str]:
    import tvm

    return {str(f) for f in tvm.target.codegen.llvm_get_cpu_features(tvm.target.Target(target))}


@pytest.mark.skipif(not host_cpu.is_x86(__import__("platform").machine() + "-"), reason="an x86 CPU model is emulated")
def test_a_zen4_vm_without_avx512_records_and_gates(project):
    """README commands 1 and 2 died of SIGILL on such a VM: every llvm build assumed AVX-512."""
    project.pytester.makeconftest(project.pytester.path.joinpath("conftest.py").read_text() + ZEN4_MODEL)
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.set_env(host_cpu.CPUINFO_ENV, str(_vm_without_avx512(project.pytester.path)))
    first = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tvmperf-update")
    first.assert_outcomes(passed=2)
    targets = _stored_targets(project.pytester.path)
    for name, target in targets.items():
        assert target["mcpu"] == "znver4", name  # the model's scheduling model is kept
        assert "-avx512f" in target["mattr"], target  # what the OS does not enable is switched off
        assert not {f for f in _features(target) if f.startswith("avx512")}, name
    gate = project.pytester.runpytest_subprocess("-p", "no:cacheprovider")
    gate.assert_outcomes(passed=2)
    assert "SIGILL" not in gate.stdout.str()


def test_the_override_sets_the_host_target_for_the_whole_run(project):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    first = project.run("--tvmperf-update", "--tvmperf-llvm-target=x86-64-v3")
    first.assert_outcomes(passed=2)
    assert {t["mcpu"] for t in _stored_targets(project.pytester.path).values()} == {"x86-64-v3"}
    # the environment variable, as a runner sets it; the command line wins over it
    project.set_env("TVMPERF_LLVM_TARGET", '{"kind": "llvm", "mcpu": "x86-64-v2"}')
    env = project.run("--tvmperf-update")
    env.assert_outcomes(passed=2)
    assert {t["mcpu"] for t in _stored_targets(project.pytester.path).values()} == {"x86-64-v2"}
    cli = project.run("--tvmperf-update", '--tvmperf-llvm-target={"mcpu": "haswell", "mattr": ["-fma"]}')
    cli.assert_outcomes(passed=2)
    stored = _stored_targets(project.pytester.path)["test_scale[llvm-prim]"]
    assert stored["mcpu"] == "haswell" and stored["mattr"] == ["-fma"]
    # the baselines recorded with it gate with it: the same target, the same machine
    gate = project.run('--tvmperf-llvm-target={"mcpu": "haswell", "mattr": ["-fma"]}')
    gate.assert_outcomes(passed=2)


def test_the_override_in_the_ini_and_a_regression_repeats_it_in_the_accept_command(project):
    project.pytester.makeini("[pytest]\ntvmperf_llvm_target = x86-64-v2\n")
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    assert {t["mcpu"] for t in _stored_targets(project.pytester.path).values()} == {"x86-64-v2"}
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    slow = project.run("--tvmperf-llvm-target=x86-64-v2", "--tvmperf-confirm=false")
    slow.assert_outcomes(failed=2)
    assert "--tvmperf-llvm-target=x86-64-v2" in slow.stdout.str().split("to accept")[-1]


@pytest.mark.parametrize(
    "value, words",
    [
        ("-mcpu=znver4", "flags such as -mcpu=... are gone"),
        ('["znver4"]', "neither an mcpu name"),
        ('{"kind": "cuda"}', "the kind must be llvm"),
        ("{not json", "not valid JSON"),
        ("nosuchcpu", "LLVM does not know the CPU 'nosuchcpu'"),
        ('{"mcpu": "haswell", "vector_width": 3}', "TVM does not take the target"),
    ],
)
def test_a_bad_override_is_a_usage_error(project, value, words):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    result = project.run(f"--tvmperf-llvm-target={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert words in result.stderr.str(), result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_a_bad_environment_variable_names_itself(project):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.set_env("TVMPERF_LLVM_TARGET", '["x86-64-v3"]')
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "environment variable TVMPERF_LLVM_TARGET='[\"x86-64-v3\"]'" in result.stderr.str()


def test_a_kernel_that_dies_of_sigill_is_told_why_and_how_to_change_the_target(project):
    project.pytester.makepyfile(test_perf=SIGILL_TEST)
    project.set_env(host_cpu.CPUINFO_ENV, str(_vm_without_avx512(project.pytester.path)))
    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tvmperf-update", "--tvmperf-llvm-target=znver4"
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "the compiled kernel crashed (SIGILL) when run in a child process" in out
    assert "it was built for llvm -mcpu=znver4;" in out
    missing = re.search(r"assumes CPU features this machine's OS does not enable: ([^.]+)\.", out)
    assert missing and "avx512f" in missing.group(1).split(", "), out
    assert "--tvmperf-llvm-target" in out.split("SIGILL means")[1]
    assert not project.baseline_file().exists()


def test_another_crash_keeps_its_message(project):
    project.pytester.makepyfile(test_perf=SIGILL_TEST.replace('"raise", 4', '"raise", 11'))
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tvmperf-update")
    result.assert_outcomes(failed=1)
    assert "the compiled kernel crashed (SIGSEGV)" in result.stdout.str()
    assert "SIGILL means" not in result.stdout.str()


def test_a_kernel_that_never_returns_fails_its_test_within_the_child_timeout(project):
    """Issue 23 §4: a kernel that never returns (sleep() in an extern) hung the isolation
    child, and with it the run, forever."""
    project.pytester.makepyfile(
        test_perf=SIGILL_TEST.replace('"raise", 4', '"sleep", 3600').replace("def test_sigill", "def test_hangs")
        + PRIM_TEST.split("from pytest_tvmperf import Workload, workloads")[1]
    )
    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tvmperf-update", "--tvmperf-child-timeout=15", "-k", "hangs or scale"
    )
    result.assert_outcomes(failed=1, passed=1)  # the next test runs, in a new child
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: sigill on llvm/prim: the compiled kernel did not return (hung: no answer "
            "within 15 s (--tvmperf-child-timeout)) when run in a child process; nothing was run "
            "in the session*"
        ]
    )
    assert sorted(project.baselines()["tests"]) == ["test_scale[llvm-prim]"]


SECOND_CALL_LOOPS = (
    "import pytest\nfrom pytest_tvmperf import Workload\n"
    + LOOPS_FROM_SECOND_CALL
    + """

@pytest.mark.tvmperf(executors=["prim"])
def test_loops(tvmperf):
    tvmperf.check(Workload(name="loops", program=main, reference=lambda a: a * 2,
                           make_inputs=lambda rng, dims: [rng.uniform(size=64).astype("float32")]))
"""
)


def test_todays_kernel_that_loops_from_its_second_call_stops_the_run_naming_the_test(project):
    """issue 66 case 8: today's kernel that returns on its first call (in the child) and loops from its
    second hung the session in the timing code, past --tvmperf-child-timeout, with nothing printed
    after the test id (only the baseline's program had a watchdog). Now every call is bounded alike."""
    project.pytester.makepyfile(test_perf=SECOND_CALL_LOOPS)
    # the real clock (today's program is called); no simulated cost
    project.pytester.makeconftest(
        "from pytest_tvmperf.measure import metric_sources\n\n\ndef pytest_configure(config):\n"
        "    metric_sources.SOURCES = tuple(s for s in metric_sources.SOURCES if not s.endswith(':SimulatedCost'))\n"
    )
    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tvmperf-update", "--tvmperf-child-timeout=5", timeout=300
    )  # before the fix: hung until this timeout
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "tvmperf: test_perf.py::test_loops[[]llvm-prim[]]: today's program did not return within 5 s "
            "(--tvmperf-child-timeout) when timed in the session*"
        ]
    )
    assert not project.baseline_file().exists()
