"""``tvmperf history``: each test's trend over the runs of a --tvmperf-history file, with
each run's commit."""

from __future__ import annotations

import json

from pytest_tvmperf.command import cli
from pytest_tvmperf.command.cli_history import history_lines
from pytest_tvmperf.report.history import HistoryRun

from gitrepo import first_commit, git
from test_gate import TWO_TESTS


def _run(created, commit, tests):
    return HistoryRun(created, tests, commit)


def test_history_lines_show_each_run_with_its_commit_and_the_trend():
    runs = [
        _run("2026-11-20T10:00:00+00:00", "aaaa11112222", {"t.py::a": (1e-3, "pass"), "t.py::b": (2e-3, "pass")}),
        _run("2026-11-21T10:00:00+00:00", None, {"t.py::a": (1.1e-3, "pass")}),
        _run(
            "2026-11-22T10:00:00+00:00",
            "cccc33334444+dirty",
            {"t.py::a": (1.2e-3, "regressed"), "t.py::b": (None, "error")},
        ),
    ]
    lines = history_lines(runs)
    text = "\n".join(lines)
    assert lines[0] == "t.py::a"
    assert "2026-11-20 10:00" in text and "aaaa11112222" in text and "cccc33334444+dirty" in text
    a_rows = lines[2:5]
    assert a_rows[0].split()[0] == "1" and "1 ms" in a_rows[0]
    assert "+10.0%" in a_rows[1] and " - " in a_rows[1]  # run 2 had no commit recorded
    assert "regressed" in a_rows[2]
    assert "trend: 1 ms -> 1.2 ms (+20.0%) over 3 timed runs" in text
    b = lines[lines.index("t.py::b") :]
    assert len([line for line in b if line.strip().startswith(("1 ", "3 "))]) == 2  # b did not run in run 2
    assert "trend" not in "\n".join(b)  # one timed run: no trend
    assert history_lines(runs, match="::b", last=1)[0] == "t.py::b"
    assert history_lines(runs, match="nothing") == ["no test matching 'nothing' in 3 run(s)"]


def test_history_command_reads_what_the_plugin_wrote(project, tmp_path, capsys):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    root = project.pytester.path
    first_commit(root, "first")
    head = git(root, "rev-parse", "HEAD")
    history = tmp_path / "history.jsonl"
    project.run("--tvmperf-update", f"--tvmperf-history={history}").assert_outcomes(passed=2)
    project.set_env("TVMPERF_FAKE_SCALE", "1.02")
    project.run(f"--tvmperf-history={history}").assert_outcomes(passed=2)
    runs = [json.loads(line) for line in history.read_text().splitlines()]
    assert runs[1]["commit"].startswith(head[:12])

    capsys.readouterr()
    assert cli.main(["history", str(history), "-k", "test_a"]) == 0
    out = capsys.readouterr().out
    assert f"tvmperf history: {history}: 2 run(s)" in out
    assert "test_perf.py::test_a[llvm-prim]" in out and "test_b" not in out
    assert out.count(head[:12]) == 2
    assert "recorded" in out and "pass" in out and "trend: " in out


def test_history_command_on_a_missing_file_says_how_to_keep_one(tmp_path, capsys):
    assert cli.main(["history", str(tmp_path / "none.jsonl")]) == 2
    assert "keep one with `pytest --tvmperf-history=" in capsys.readouterr().err
