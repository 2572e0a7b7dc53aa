"""--tvmperf-benchmark-json: the timings in pytest-benchmark's JSON format, read by the
real ``pytest-benchmark compare``."""

from __future__ import annotations

import json
import subprocess
import sys

from test_gate import TWO_TESTS

from pytest_tvmperf.judge.confirmation import looks

STATS = {
    "min",
    "max",
    "mean",
    "stddev",
    "rounds",
    "median",
    "iqr",
    "q1",
    "q3",
    "iqr_outliers",
    "stddev_outliers",
    "outliers",
    "ld15iqr",
    "hd15iqr",
    "ops",
    "total",
    "data",
    "iterations",
}


def test_benchmark_json_is_read_by_pytest_benchmark_compare(project, tmp_path):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)  # mode "a/b"
    project.set_env("TVMPERF_TRUST_ARTIFACTS", "on")  # the old form's libraries are loaded only when trusted
    first, second = tmp_path / "0001_first.json", tmp_path / "0002_second.json"
    result = project.run(f"--tvmperf-benchmark-json={first}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"*pytest-benchmark JSON (2 timed tests): {first}*"])
    project.set_env("TVMPERF_FAKE_SCALE", "1.02")
    project.run(f"--tvmperf-benchmark-json={second}").assert_outcomes(passed=2)

    data = json.loads(first.read_text())
    assert set(data) >= {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    bench = {b["name"]: b for b in data["benchmarks"]}
    assert set(bench) == {"test_a[llvm-prim]", "test_b[llvm-prim]"}
    a = bench["test_a[llvm-prim]"]
    assert a["fullname"] == "test_perf.py::test_a[llvm-prim]" and a["params"] == {"tvmperf": "llvm-prim"}
    assert set(a["stats"]) >= STATS
    # a pass is told at the first look of the sequential sampling (judge/confirmation.py: looks(15))
    assert a["stats"]["rounds"] == len(a["stats"]["data"]) == looks(15)[0] and a["stats"]["iterations"] == 1
    assert 0.9e-3 < a["stats"]["median"] < 1.1e-3  # the injected timer's 1 ms
    assert a["extra_info"]["tvmperf_verdict"] == "pass" and a["extra_info"]["tvmperf_mode"] == "a/b"
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, no temporary left

    compare = subprocess.run(
        [sys.executable, "-m", "pytest_benchmark", "compare", str(first), str(second), "--columns=min,median,max"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert compare.returncode == 0, compare.stderr
    out = compare.stdout
    for name in ("test_a[llvm-prim]", "test_b[llvm-prim]"):
        assert out.count(name) == 2, out  # one row per file
    assert "0001_first" in out and "0002_second" in out
    assert "Median" in out


def test_untimed_tests_are_left_out_of_the_benchmark_json(project, tmp_path):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    out = tmp_path / "b.json"
    project.run("--tvmperf-timing=off", f"--tvmperf-benchmark-json={out}").assert_outcomes(passed=2)
    assert json.loads(out.read_text())["benchmarks"] == []
