"""--tvmperf-against-tvm=0.26.0 end to end: the other version's environment (installed
once per machine into the user's cache: minutes the first time, then found), its pass
building the project's workloads with TVM 0.26.0, today's run loading those builds and
gating them side by side. The fake timer (conftest.py) makes today's build a chosen
factor slower, so the verdicts cannot flake; everything else is real.

Skipped with the reason when apache-tvm 0.26.0 is neither in the cache nor reachable on
the package index (no network)."""

from __future__ import annotations

import json
import os

import pytest

from pytest_tvmperf.against import env

OTHER = "0.26.0"
#: the machine's cache, as it is before the project fixture points TVMPERF_CACHE_DIR into the project
MACHINE_CACHE = env.cache_root()

TESTS = """
import tvm
from pytest_tvmperf import workloads


def test_mul(tvmperf):
    tvmperf.check(workloads.multiply(256, 256))


def test_new_api(tvmperf):
    if tvm.__version__.startswith("0.26"):  # stands for a workload using an API that release lacks
        raise AttributeError("module 'tvm.relax' has no attribute 'brand_new_op'")
    tvmperf.check(workloads.multiply(64, 64))
"""


@pytest.fixture(scope="module")
def other_env():
    """The environment of apache-tvm 0.26.0, made once per machine."""
    found = env._read(env.env_dir(OTHER, MACHINE_CACHE))
    if found is None:
        why = env.index_has(OTHER)
        if why is not None:
            pytest.skip(f"apache-tvm {OTHER} is not installed in {MACHINE_CACHE} and cannot be installed here: {why}")
        found = env.ensure_env(OTHER, MACHINE_CACHE)
    return found


@pytest.fixture
def against(project, other_env):
    project.set_env("TVMPERF_CACHE_DIR", str(MACHINE_CACHE))
    project.pytester.makepyfile(test_perf=TESTS)
    return project


def test_an_upgrade_that_slows_a_test_fails_it_with_the_upgrade_worded(against):
    against.set_env("TVMPERF_FAKE_SCALE", "1.5")  # today's build 1.5x the other version's
    result = against.run("--tvmperf-executors=prim", f"--tvmperf-against-tvm={OTHER}", "-rs", "--tvmperf-confirm=no")
    result.assert_outcomes(failed=1, skipped=1)
    out = result.stdout.str()
    import tvm

    today = tvm.__version__
    assert f"TVM {today} vs {OTHER}: 1.50x slower (a/b)" in out
    assert "to report the upgrade without failing: --tvmperf-against-tvm-report-only" in out
    # the workload 0.26.0 cannot build: reported with that environment's error, not a crash
    assert "not compared: TVM 0.26.0 could not build it (failed)" in out
    assert "no attribute 'brand_new_op'" in out
    assert f"TVM {today} vs {OTHER}, 2 test(s): 1 slower, 1 not compared" in out
    assert not list(against.pytester.path.glob("baselines/*.json"))  # no baseline is read or written


def test_report_only_reports_the_upgrade_without_failing(against):
    against.set_env("TVMPERF_FAKE_SCALE", "0.8")
    result = against.run(
        "--tvmperf-executors=prim",
        f"--tvmperf-against-tvm={OTHER}",
        "--tvmperf-against-tvm-report-only",
        "--tvmperf-json=results.json",
        "-k",
        "test_mul",
    )
    result.assert_outcomes(passed=1)
    assert "1.25x faster (a/b)" in result.stdout.str()
    data = json.loads((against.pytester.path / "results.json").read_text())
    assert data["upgrade"]["other"] == OTHER and data["upgrade"]["counts"]["faster"] == 1
    (entry,) = data["tests"]
    assert entry["time"]["mode"] == f"a/b vs TVM {OTHER}" and entry["baseline"]["tvm_version"] == OTHER
    # both versions' build times side by side (issue 48): each its own process's whole build, shown, not gated
    compiled = next(m for m in entry["metrics"] if m["metric"] == "compile_s")
    assert compiled["status"] == "not gated" and compiled["current"] > 0 and compiled["baseline"] > 0
    assert compiled["note"].startswith(f"compile time: TVM {entry['record']['tvm_version']} ")
    assert f", TVM {OTHER} " in compiled["note"]


def test_a_version_that_cannot_be_installed_is_one_usage_error(project, other_env, tmp_path):
    project.set_env("TVMPERF_CACHE_DIR", str(tmp_path / "cache"))
    project.pytester.makepyfile(test_perf=TESTS)
    result = project.run("--tvmperf-against-tvm=0.0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--tvmperf-against-tvm=0.0.1: the environment of apache-tvm 0.0.1 cannot be made" in err
    assert "pip install apache-tvm==0.0.1 failed" in err and "Traceback" not in err
    assert not [
        p for p in (tmp_path / "cache").iterdir() if not p.name.endswith((".lock", ".lock.pid"))
    ]  # a lock and its holder
    assert os.environ.get("TVMPERF_CACHE_DIR") == str(tmp_path / "cache")


def test_the_other_builds_kernels_are_timed_here_too(against):
    """Per kernel: the other version's build is loaded in this process and its kernels
    timed like today's, so the reports put each kernel's time on both sides."""
    against.pytester.makepyfile(
        test_mlp="""
from pytest_tvmperf import workloads


def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""
    )
    result = against.run(
        "--tvmperf-executors=vm-bytecode",
        "--tvmperf-simulate=off",
        f"--tvmperf-against-tvm={OTHER}",
        "--tvmperf-against-tvm-report-only",
        "--tvmperf-json=results.json",
        "test_mlp.py",
    )
    result.assert_outcomes(passed=1)
    (entry,) = json.loads((against.pytester.path / "results.json").read_text())["tests"]
    kernels = {k["name"]: k for k in entry["kernels"]}
    assert any(name.startswith("fused_") for name in kernels), kernels
    assert all(k["time_s"] is not None and k["baseline_time_s"] is not None for k in kernels.values()), kernels
    assert entry["baseline"]["kernel_time_s"], entry["baseline"]
