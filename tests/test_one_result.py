"""Issue 61: one result, said once. A regression judged on a busy runner (each side's own run
time) reads the same median, baseline, ratio and interval in every view a user meets: the
failure text, the summary row, the results JSON (its samples included), JUnit, the HTML chart
(right of 1.0x: slower), ``tvmperf show``, ``tvmperf diff`` of that file and ``tvmperf history``."""

from __future__ import annotations

import json
import re
import statistics
import xml.etree.ElementTree as ET

from pytest_tvmperf.command import cli
from pytest_tvmperf.result.text import fmt_time

TEST = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""

# the same-program shortcut off (TVMPERF_SAME_PROGRAM=time): the unchanged program is timed a/b
OPTIONS = ("--tvmperf-threshold=time=10%", "--tvmperf-peers=none", "--tvmperf-decide-budget=off")


def _cells(text: str) -> list[str]:
    """The summary table's row of test_a, cell by cell."""
    return re.split(r"\s{2,}", next(line for line in text.splitlines() if line.startswith("test_a[llvm-prim]")).strip())


def _run_slowed(project, capsys):
    project.pytester.makepyfile(test_perf=TEST)
    project.set_env("TVMPERF_SAME_PROGRAM", "time")
    project.run("--tvmperf-update", *OPTIONS).assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "3")
    project.set_env("TVMPERF_FAKE_SPREAD", "0.02")
    project.set_env("TVMPERF_FAKE_WAITS", "0.5")  # a busy runner: half of every sample waited for a CPU
    root = project.pytester.path
    result = project.run(
        *OPTIONS,
        f"--tvmperf-json={root / 'out.json'}",
        f"--tvmperf-html={root / 'out.html'}",
        f"--junitxml={root / 'junit.xml'}",
        f"--tvmperf-history={root / 'history.jsonl'}",
    )
    result.assert_outcomes(failed=1)
    return result, root


def test_every_view_shows_the_same_median_ratio_and_interval(project, capsys):
    result, root = _run_slowed(project, capsys)
    out = result.stdout.str()

    entry = json.loads((root / "out.json").read_text())["tests"][0]
    time = entry["time"]
    assert time["estimate"] == "own run time"
    # the JSON's samples are those its medians are of: own run time (half the wall time here), not wall
    assert statistics.median(time["samples_s"]) == time["median_s"]
    assert statistics.median(time["baseline_samples_s"]) == time["baseline_s"]
    median, baseline = fmt_time(time["median_s"]), fmt_time(time["baseline_s"])
    ratio = f"{time['ratio']:.2f}x"
    interval = f"{time['low']:.2f}-{time['high']:.2f}"
    assert 2.5 < time["ratio"] < 3.5, time

    # the failure text
    assert f"time {baseline} -> {median} (own run time medians, side by side)" in out
    assert f"a/b ratio {ratio} (" in out and f"CI {interval}x)" in out
    # the summary row
    row = _cells(out)
    assert row[3:5] == [median, baseline] and row[5].startswith(f"{ratio} [{interval}]") and "own run time" in row[5]

    # JUnit: the JSON's numbers, exactly
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(root / "junit.xml").getroot().iter("property")
        if p.get("name", "").startswith("tvmperf_")
    }
    for name, key in (("median_s", "median_s"), ("baseline_s", "baseline_s"), ("ratio", "ratio")):
        assert float(props[f"tvmperf_{name}"]) == time[key]
    assert float(props["tvmperf_ratio_low"]) == time["low"] and float(props["tvmperf_ratio_high"]) == time["high"]

    # the HTML chart: the ratio and interval in the row's title, the dot right of the 1.0x line
    html = (root / "out.html").read_text()
    assert re.search(rf"<title>[^<]*test_a\[llvm-prim\][^<]*: {re.escape(ratio)} \[{interval}\]", html)
    unity = float(re.search(r'class="tvmperf-unity" x1="([\d.]+)"', html).group(1))
    dot = float(re.search(r'class="tvmperf-marker" cx="([\d.]+)"', html).group(1))
    assert dot > unity, "a 3x regression drawn on the faster side"

    capsys.readouterr()
    # tvmperf diff of the file against the baseline the run judged: the run's verdict, its numbers
    assert cli.main(["diff", str(project.baseline_file()), str(root / "out.json")]) == 1
    diff = capsys.readouterr().out
    assert "shown as their run judged them" in diff
    assert _cells(diff) == row
    # tvmperf show: the judged median, labelled
    assert cli.main(["show", str(root / "out.json")]) == 0
    assert f"{median} (own run time)" in capsys.readouterr().out
    # tvmperf history: the same median
    assert cli.main(["history", str(root / "history.jsonl")]) == 0
    assert median in capsys.readouterr().out
