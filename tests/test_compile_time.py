"""compile_s gated side by side (issue 48), as a user runs pytest: the baseline's stored IR
and today's lowered IR built in turn, on an injected fake build clock (nothing sleeps,
tests/conftest.py ``tvmperf_compile_timer``): a changed program whose build takes 1.6x
fails on compile_s alone, with before, after and limit in the failure, the JSON, the
JUnit properties and the summary; the unchanged program is not built twice; a threshold
or --tvmperf-resources leaves it out; a baseline without stored IR gates as before, n/a."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

TESTS = """
import os

import numpy as np
import pytest
from tvm import s_tir, te

from pytest_tvmperf import Workload


def scale(unroll):
    a = te.placeholder((256,), name="A")
    b = te.compute((256,), lambda i: a[i] * 2.0 + a[i], name="B")
    func = te.create_prim_func([a, b])
    if unroll:
        sch = s_tir.Schedule(func)
        (i,) = sch.get_loops(sch.get_sblock("B"))
        sch.unroll(sch.split(i, factors=[None, 8])[1])
        func = sch.mod["main"]
    return Workload(name="scale", program=func, make_inputs=lambda rng, d: [rng.uniform(size=256).astype("float32")],
                    reference=lambda x: x * 2 + x)


@pytest.mark.tvmperf(executors=["prim"], code="off")
def test_scale(tvmperf):
    tvmperf.check(scale(os.environ.get("SCALE_UNROLL") == "1"))
"""


def _entry(project, name: str = "results.json") -> dict:
    (entry,) = json.loads((project.pytester.path / name).read_text())["tests"]
    return entry


def _compile_cell(entry: dict) -> dict:
    return next(m for m in entry["metrics"] if m["metric"] == "compile_s")


def test_compile_time_is_gated_side_by_side_and_an_unchanged_program_is_not_built_twice(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    log = project.pytester.path / "builds.log"
    project.set_env("TVMPERF_FAKE_COMPILE_BUILD", "1")  # the builds run, each logged
    project.set_env("TVMPERF_COMPILE_LOG", str(log))

    # the baseline's own program (even under TVMPERF_SAME_PROGRAM=time, tests/conftest.py): not built twice
    project.set_env("TVMPERF_FAKE_COMPILE_SCALE", "3")
    same = project.run("--tvmperf-json=results.json")
    same.assert_outcomes(passed=1)
    assert not log.exists()  # no build beside the one that prepared the test
    cell = _compile_cell(_entry(project))
    assert cell["status"] == "not gated" and "not compiled twice" in cell["note"]
    same.stdout.fnmatch_lines(["compile_s test_scale[llvm-prim]: same program, not compiled twice"])

    # a changed program whose build takes 1.6x (the fake clock): fails on compile_s alone
    project.set_env("SCALE_UNROLL", "1")
    project.set_env("TVMPERF_FAKE_COMPILE_SCALE", "1.6")
    slower = project.run("--tvmperf-json=results.json", "--junitxml=junit.xml")
    slower.assert_outcomes(failed=1)
    assert log.read_text().split() == ["baseline", "current", "current", "baseline"] * 2
    out = slower.stdout.str()
    assert "tvmperf: compile_s regressed against the baseline" in out
    slower.stdout.fnmatch_lines(
        [
            "*compile_s 1 s -> 1.6 s (medians, built side by side); a/b ratio 1.60x (*% CI *-*x), limit +25%, "
            "at most 1.25x",
            "*compared: the baseline's stored IR and today's lowered IR, * 4 build(s) of each side, interleaved",
        ]
    )
    slower.stdout.fnmatch_lines(["compile_s test_scale[[]llvm-prim]: 1 s -> 1.6 s (1.60x *, limit +25%): regressed"])
    entry = _entry(project)
    assert entry["failed"] == ["compile_s"]  # alone: the code size is off, the counts unchanged
    cell = _compile_cell(entry)
    assert (cell["status"], cell["baseline"], cell["current"], cell["limit"]) == ("regressed", 1.0, 1.6, "+25%")
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(project.pytester.path / "junit.xml").iter("property")
        if "compile" in p.get("name")
    }
    assert props == {"tvmperf_compile_s": "1.6", "tvmperf_baseline_compile_s": "1.0", "tvmperf_compile_ratio": "1.6"}

    # its threshold (the alias compile=) or the resources option leaves it be
    log.unlink()
    project.run("--tvmperf-threshold=compile=70%").assert_outcomes(passed=1)
    project.run("--tvmperf-resources=alloc_bytes,code_bytes").assert_outcomes(passed=1)
    assert len(log.read_text().split()) == 8  # built for the first run only

    # a baseline without stored IR (recorded before IR baselines): gated as before, compile_s n/a with the reason
    data = project.baselines()
    for entry in data["tests"].values():
        entry.pop("ir")
    project.baseline_file().write_text(json.dumps(data))
    project.run("--tvmperf-json=results.json").assert_outcomes(passed=1)
    cell = _compile_cell(_entry(project))
    assert cell["status"] == "n/a" and cell["note"].startswith("the baseline stores no IR") and cell["current"] is None
    assert len(log.read_text().split()) == 8


def test_builds_straddling_the_limit_get_more_builds_and_are_inconclusive_once_the_budget_is_spent(project):
    """issue 60, one rule for every timed metric: builds around 1.05x the baseline's (-30%, 0, +30% in
    turn) against +25% straddle it; they get 2, then 4 more pairs within a budget of 6 rounds, and are
    inconclusive (the test passes, counted as inconclusive), as a time interval straddling its limit
    after the budget is; with the budget off, after the first 4 builds. Builds that agree, 1.25x: more
    of them cannot decide, none are added, and the verdict says so."""
    project.pytester.makepyfile(test_perf=TESTS.replace('code="off"', 'code="off", decide_budget="60s,6"'))
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    log = project.pytester.path / "builds.log"
    project.set_env("TVMPERF_FAKE_COMPILE_BUILD", "1")
    project.set_env("TVMPERF_COMPILE_LOG", str(log))
    project.set_env("SCALE_UNROLL", "1")
    project.set_env("TVMPERF_FAKE_COMPILE_SCALE", "1.05")
    project.set_env("TVMPERF_FAKE_COMPILE_SPREAD", "0.3")
    result = project.run("--tvmperf-json=results.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*compile_s*limit +25%): inconclusive", "tvmperf: 1 test(s) inconclusive*"])
    assert len(log.read_text().split()) == 2 * (4 + 2 + 4)
    cell = _compile_cell(_entry(project))
    assert cell["status"] == "inconclusive"
    assert cell["note"].startswith(
        "10 build(s) of each side, interleaved (2 more look(s): its budget's 6 rounds spent)"
    )
    log.unlink()
    off = project.run("--tvmperf-json=results.json", "--tvmperf-decide-budget=off")
    off.assert_outcomes(passed=1)
    assert len(log.read_text().split()) == 2 * 4 and _compile_cell(_entry(project))["status"] == "inconclusive"
    log.unlink()
    project.set_env("TVMPERF_FAKE_COMPILE_SCALE", "1.25")
    project.set_env("TVMPERF_FAKE_COMPILE_SPREAD", "0")
    project.run("--tvmperf-json=results.json").assert_outcomes(passed=1)
    assert len(log.read_text().split()) == 2 * 4
    assert "more builds cannot decide it" in _compile_cell(_entry(project))["note"]
