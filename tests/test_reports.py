"""Outputs for CI and for people: the diagnosis in the message, results JSON, the
GitHub step summary and annotations, JUnit properties, history, unused baselines."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from test_gate import MLP_TEST, TWO_TESTS


def test_message_explains_a_bytecode_change(project):
    project.pytester.makepyfile(test_perf=MLP_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    entry = project.baselines()["tests"]["test_mlp[llvm-vm-bytecode]"]
    # stored keyed by kernel identity, the numbers left out (issue 47: values/kernel_keys.py)
    keys = {name for name, ident in entry["kernels"].items() if ident["op"] == "matmul_add"}
    assert len(keys) == 3 and all(re.fullmatch(r"matmul_add@[0-9a-f]{10}", k) for k in keys), keys
    assert any(
        re.fullmatch(r"call matmul_add@[0-9a-f]{10} in: %_, c\[_\], c\[_\], %_ dst: %void", line)
        for line in entry["bytecode"]["forward"]
    ), entry["bytecode"]
    assert set(entry["kernel_time_s"]) >= keys

    project.set_env("MLP_BIND", "0")
    result = project.run()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # the most telling lines first, the long diff after
    assert out.index("instructions 17 -> 28") < out.index("VM bytecode, baseline -> now:")
    result.stdout.fnmatch_lines(
        [
            "*by callee: +4 vm.builtin.null_value, +3 vm.builtin.alloc_tensor, +1 transpose, +1 transpose1, +1 transpose2*",
            "*executed calls by callee: +4 vm.builtin.null_value*",
            "*kernels that take longer than in the baseline: *transpose* (new)*",
            "*VM bytecode, baseline -> now:*",
            "*--- baseline @forward*",
            "*+++ now @forward*",
            "*+call transpose in: %1, %8 dst: %void*",
        ]
    )


def test_results_json_junit_and_github_outputs(project, tmp_path):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.set_env("TVMPERF_FAKE_SCALE", "1.10")
    summary = tmp_path / "step-summary.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    project.set_env("GITHUB_ACTIONS", "true")
    results_path = tmp_path / "out" / "results.json"
    result = project.run(f"--tvmperf-json={results_path}", f"--junitxml={tmp_path / 'junit.xml'}")
    result.assert_outcomes(failed=2)

    data = json.loads(results_path.read_text())
    assert (data["schema_version"], data["kind"]) == (1, "pytest-tvmperf-results")
    (a, b) = data["tests"]
    assert a["nodeid"] == "test_perf.py::test_a[llvm-prim]" and a["verdict"] == "regressed"
    assert a["time"]["mode"] == "a/b, baseline rebuilt here" and a["time"]["ratio"] == pytest.approx(1.10)
    assert a["time"]["low"] < 1.10 < a["time"]["high"]
    assert a["record"]["exact"]["kernels"] == 1 and a["baseline"]["exact"]["kernels"] == 1
    assert a["message"].startswith("tvmperf: time regressed") and a["location"] == ["test_perf.py", 4]

    md = summary.read_text()
    assert md.startswith("### pytest-tvmperf: 2 regressed")
    assert "| `test_a[llvm-prim]` | prim | llvm | 1.11 ms | 1.01 ms | 1.10x [" in md

    result.stdout.fnmatch_lines(
        ["::error file=test_perf.py,line=4,title=tvmperf regressed::tvmperf: time regressed*%0A*"]
    )

    cases = {c.get("name"): c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["test_a[llvm-prim]"].iter("property")}
    assert props["tvmperf_verdict"] == "regressed"
    assert float(props["tvmperf_ratio"]) == pytest.approx(1.10)
    assert props["tvmperf_kernels"] == "1"


def test_history_appends_one_line_per_run(project, tmp_path):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    history = tmp_path / "history.jsonl"
    project.run("--tvmperf-update", f"--tvmperf-history={history}").assert_outcomes(passed=2)
    project.run(f"--tvmperf-history={history}").assert_outcomes(passed=2)
    runs = [json.loads(line) for line in history.read_text().splitlines()]
    assert [r["kind"] for r in runs] == ["pytest-tvmperf-history"] * 2
    assert runs[1]["tests"]["test_perf.py::test_a[llvm-prim]"]["verdict"] == "pass"


@pytest.mark.parametrize(
    "content, message",
    [
        (
            '{"kind": "pytest-tvmperf-history", "schema_version": 1, "created": "x", "tes',
            "*--tvmperf-history=*h.jsonl: that file is not a pytest-tvmperf history file*left as it is*",
        ),
        (
            '{"kind": "pytest-tvmperf-history", "schema_version": 7, "created": "x", "tests": {}}',
            "*line 1, has schema version 7*",
        ),
        ('{"something": "else"}', "*--tvmperf-history=*h.jsonl: that file is not a pytest-tvmperf history file*"),
    ],
)
def test_bad_history_file_is_a_usage_error(project, tmp_path, content, message):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    history = tmp_path / "h.jsonl"
    history.write_text(content + "\n")
    result = project.run(f"--tvmperf-history={history}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


HISTORY_LINE = '{"kind": "pytest-tvmperf-history", "schema_version": 1, "created": "x", "tests": {}}'


def test_a_torn_history_line_is_kept_and_skipped_with_a_warning(project, tmp_path):
    """A line appended on a full disk is cut short: the next run warns, skips it and appends its
    own line after it, instead of refusing to start until it is edited; nothing is deleted (issue 66:
    appends are appends)."""
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    history = tmp_path / "h.jsonl"
    before = HISTORY_LINE + "\n" + HISTORY_LINE[:40]  # no line end: the write stopped there
    history.write_text(before)
    result = project.run("--tvmperf-update", f"--tvmperf-history={history}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"*history file {history}: line(s) 2 cannot be read as JSON*skipped*kept*"])
    text = history.read_text()
    assert text.startswith(before + "\n") and text.endswith("\n") and len(text.splitlines()) == 3
    project.run(f"--tvmperf-history={history}").assert_outcomes(passed=2)  # and the next run reads it
    assert len(history.read_text().splitlines()) == 4


def test_two_runs_appending_to_one_history_at_once_both_land(tmp_path, monkeypatch):
    """issue 66: two runs appending at once lost a line (read, add, replace, without a lock). A
    deterministic overlap: the second appends while the first is between making its line and
    writing it."""
    from pytest_tvmperf.report import outputs

    history = tmp_path / "h.jsonl"
    history.write_text(HISTORY_LINE + "\n")
    real, overlapped = outputs.json.dumps, []

    def dumps(*args, **kwargs):
        if not overlapped:
            overlapped.append(True)
            outputs.append_history(history, {**json.loads(HISTORY_LINE), "created": "second"})
        return real(*args, **kwargs)

    monkeypatch.setattr(outputs.json, "dumps", dumps)
    outputs.append_history(history, {**json.loads(HISTORY_LINE), "created": "first"})
    assert [json.loads(line)["created"] for line in history.read_text().splitlines()] == ["x", "second", "first"]


def test_the_history_is_appended_whole_or_not_at_all(project, tmp_path, monkeypatch):
    """A full disk while appending leaves the history as it was, and the run names the file."""
    import errno

    from pytest_tvmperf.store import files

    project.pytester.makepyfile(test_perf=TWO_TESTS)
    history = tmp_path / "h.jsonl"
    history.write_text(HISTORY_LINE + "\n")
    real = files.os.fsync

    def full(fd):
        if os.readlink(f"/proc/self/fd/{fd}") == str(history):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(files.os, "fsync", full)
    result = project.run(f"--tvmperf-history={history}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*history {history} not written: No space left on device*"])
    assert history.read_text() == HISTORY_LINE + "\n"


def test_a_baseline_file_given_as_the_history_is_refused_and_kept(project):
    """--tvmperf-history pointed at a committed baseline file: a usage error naming the
    option and the file, with no advice to delete it, and the file unchanged."""
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    before = project.baseline_file().read_text()
    result = project.run(f"--tvmperf-history={project.baseline_file()}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*--tvmperf-history={project.baseline_file()}: that file is a pytest-tvmperf "
            f"baseline file; it was left as it is: point --tvmperf-history at a file of its own*"
        ]
    )
    assert "remove" not in result.stderr.str() and "delete" not in result.stderr.str()
    assert project.baseline_file().read_text() == before


def test_a_report_that_cannot_be_written_is_named_and_the_others_are_written(project, tmp_path, monkeypatch):
    """The results JSON on a full disk: the HTML report and the step summary are written
    all the same, and the run fails naming the file that was not."""
    import errno

    from pytest_tvmperf.report import outputs

    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    real = outputs.atomic_write

    def full(path, text):
        if path.name == "r.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, text)

    monkeypatch.setattr(outputs, "atomic_write", full)
    summary = tmp_path / "summary.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run(f"--tvmperf-json={tmp_path / 'r.json'}", f"--tvmperf-html={tmp_path / 'r.html'}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*results JSON {tmp_path / 'r.json'} not written: No space left on device*"])
    assert (tmp_path / "r.html").is_file() and "pytest-tvmperf" in summary.read_text()
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("option", ["--tvmperf-json", "--tvmperf-html", "--tvmperf-history"])
def test_unwritable_report_path_fails_at_start_up(project, tmp_path, option):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = project.run(f"{option}={blocker / 'report.out'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option}=*report.out: cannot write there*"])
    assert "collected" not in result.stdout.str()


def test_unused_baselines_are_listed_and_pruned(project):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)
    project.pytester.makepyfile(test_other=TWO_TESTS)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=4)
    # test_b is deleted from test_perf.py, and test_other.py is deleted altogether
    project.pytester.makepyfile(test_perf=TWO_TESTS.split('@pytest.mark.tvmperf(executors=["prim"])\ndef test_b')[0])
    (project.pytester.path / "test_other.py").unlink()

    partial = project.run("-k", "test_a")
    partial.assert_outcomes(passed=1)
    assert "no test used" not in partial.stdout.str()  # a partial run reports nothing

    full = project.run()
    full.assert_outcomes(passed=1)
    full.stdout.fnmatch_lines(
        [
            "*3 baseline(s) no test used (remove them with pytest --tvmperf-update --tvmperf-prune):*",
            "*baselines/test_other.json: test_a[[]llvm-prim[]], test_b[[]llvm-prim[]]*",
            "*baselines/test_perf.json: test_b[[]llvm-prim[]]*",
        ]
    )
    artifacts = project.pytester.path / "baselines" / "artifacts"
    assert len(list(artifacts.rglob("*.so"))) == 4

    assert project.run("--tvmperf-prune").ret == pytest.ExitCode.USAGE_ERROR  # only while updating
    pruned = project.run("--tvmperf-update", "--tvmperf-prune", "--tvmperf-baseline-program=so")
    pruned.assert_outcomes(passed=1)
    pruned.stdout.fnmatch_lines(["*pruned 3 unused baseline(s)*"])
    assert list(project.baselines()["tests"]) == ["test_a[llvm-prim]"]
    assert not project.baseline_file("test_other").exists()
    assert len(list(artifacts.rglob("*.so"))) == 1
    assert "no test used" not in project.run().stdout.str()


def test_html_report_is_written(project, tmp_path):
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    report = tmp_path / "report.html"
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.set_env("TVMPERF_FAKE_SCALE", "1.10")
    result = project.run(f"--tvmperf-html={report}", f"--tvmperf-history={tmp_path / 'h.jsonl'}")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"*tvmperf HTML report: {report}*"])
    page = report.read_text()
    assert 'id="tvmperf-table"' in page and page.count('data-kind="ratio"') == 1
    assert "test_a[llvm-prim]" in page and "<script" not in page


NOISY_LOGS_TEST = """
import logging
import dataclasses
import numpy as np
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_wrong(tvmperf):
    trace = logging.getLogger("torch.__trace")  # torch sets this one to DEBUG itself
    trace.setLevel(logging.DEBUG)
    for i in range(300):
        trace.debug("exported graph node %d", i)
    logging.getLogger("tvm.relax.frontend").setLevel(logging.INFO)
    logging.getLogger("tvm.relax.frontend").info("converting op")
    logging.getLogger("torch.export").warning("a torch warning stays")
    mine = logging.getLogger("myproject")
    mine.setLevel(logging.DEBUG)
    mine.debug("the user's own debug line stays")
    w = workloads.multiply(m=8, n=8)
    tvmperf.check(dataclasses.replace(w, reference=lambda a, b: np.zeros((8, 8), "float32")))
"""


def test_third_party_debug_logging_stays_out_of_the_failure_unless_asked_for(project):
    """Issue 37: hundreds of ``DEBUG torch.__trace`` lines flooded a failure. The plugin's
    failure keeps torch's and TVM's records below WARNING out; pytest's --log-level brings them back."""
    project.pytester.makepyfile(test_perf=NOISY_LOGS_TEST)
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "does not match its NumPy reference" in out
    assert "exported graph node" not in out and "converting op" not in out
    assert "a torch warning stays" in out and "the user's own debug line stays" in out
    asked = project.run("--tvmperf-update", "--log-level=DEBUG")
    asked.assert_outcomes(failed=1)
    assert asked.stdout.str().count("exported graph node") == 300 and "converting op" in asked.stdout.str()
    # pytest's logging plugin switched off (benchmarks/dla34.py does): no log level exists
    # to ask for, and the quieting must not break the run (it raised "unknown configuration
    # value: 'log_level'" for every test)
    off = project.run("--tvmperf-update", "-p", "no:logging")
    off.assert_outcomes(failed=1)
    assert "unknown configuration value" not in off.stdout.str()
    assert "does not match its NumPy reference" in off.stdout.str()
