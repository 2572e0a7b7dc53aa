"""--tvmperf-against-tvm's pure parts: the upgrade wording of a test's verdict, the
suite's summary, the other environment's place and key, the child's arguments and
reading its results back."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_tvmperf.against import env, run
from pytest_tvmperf.config import parsing
from pytest_tvmperf.against.gate import same_setup, upgrade_summary
from pytest_tvmperf.against.reports import benchmark_sides
from pytest_tvmperf.against.upgrade import (
    Change,
    UpgradeRow,
    UpgradeSummary,
    changes,
    classify,
    kernel_moved,
    kernel_time_moved,
    mode,
    time_words,
    upgrade_line,
)


def v(metric, status, current, baseline):
    return SimpleNamespace(metric=metric, status=status, current=current, baseline=baseline)


# --------------------------------------------------------------------------- one test's line


def test_the_issue_example_reads_as_an_upgrade():
    moved = changes(
        [v("time", "regressed", 1.31, 1.0), v("cpu_instructions", "regressed", 1180, 1000)],
        {"cpu_instructions": {"fused_matmul_add": 710, "fused_relu": 470}},
        {"cpu_instructions": {"fused_matmul_add": 500, "fused_relu": 500}},
    )
    assert (
        upgrade_line("0.27.0", "0.26.0", "regressed", 1.31, moved)
        == "TVM 0.27.0 vs 0.26.0: 1.31x slower (a/b), cpu_instructions +18% (fused_matmul_add: +42%)"
    )


def test_the_kernel_whose_time_moved_most_is_named_when_the_time_moved():
    now = {"fused_matmul_add": 1.8e-3, "fused_relu": 0.21e-3, "vm.builtin.alloc_tensor": 2e-6}
    then = {"fused_matmul_add": 1.0e-3, "fused_relu": 0.20e-3, "vm.builtin.alloc_tensor": 3e-6}
    assert kernel_time_moved(now, then) == "fused_matmul_add: 1.80x"
    assert kernel_time_moved({"a": 1.0, "b": 2.0}, {"a": 1.0}) == "b: new"
    assert kernel_time_moved({"a": 1.0}, {"a": 1.0, "b": 2.0}) == "b: gone"
    assert kernel_time_moved({"a": 1.02}, {"a": 1.0}) == ""  # under 5%: not news
    assert kernel_time_moved(now, None) == "" and kernel_time_moved(None, then) == ""
    line = upgrade_line("0.27.0", "0.26.0", "regressed", 1.31, [], ["cpu_instructions"], kernel_time_moved(now, then))
    assert line == (
        "TVM 0.27.0 vs 0.26.0: 1.31x slower (a/b; most in fused_matmul_add: 1.80x), "
        "no metric moved (cpu_instructions the same)"
    )
    assert time_words("pass", 1.02, "fused_relu: 1.05x") == "same time (1.02x, a/b)"  # named only when it moved


@pytest.mark.parametrize(
    "status, ratio, words",
    [
        ("regressed", 1.31, "1.31x slower (a/b)"),
        ("improved", 0.8, "1.25x faster (a/b)"),
        ("pass", 1.02, "same time (1.02x, a/b)"),
        ("inconclusive", 1.07, "1.07x, unclear (a/b: the noise is larger than the threshold)"),
        (None, None, "time not compared"),
        ("n/a", None, "time not compared"),
    ],
)
def test_time_words(status, ratio, words):
    assert time_words(status, ratio) == words


def test_the_kernel_that_moved_most_is_named_new_and_gone_too():
    assert kernel_moved({"a": 100, "b": 300}, {"a": 50, "b": 290}) == "a: +100%"
    assert kernel_moved({"a": 100, "fused_new": 900}, {"a": 100}) == "fused_new: new"
    assert kernel_moved({"a": 100}, {"a": 100, "fused_old": 900}) == "fused_old: gone"
    assert kernel_moved({"a": 1}, {"a": 1}) == ""


def test_what_moved_most_is_named_the_runtimes_own_work_too():
    assert kernel_moved({"[runtime]": 105, "k": 200}, {"[runtime]": 100, "k": 100}) == "k: +100%"
    assert kernel_moved({"[runtime]": 900, "k": 101}, {"[runtime]": 100, "k": 100}) == "[runtime]: +800%"


def test_changes_list_regressions_first_and_leave_out_what_did_not_move():
    got = changes(
        [
            v("time", "regressed", 2, 1),
            v("instructions", "improved", 16, 22),
            v("kernels", "pass", 3, 3),
            v("est_cycles", "pass", 1001, 1000),
            v("cpu_instructions", "regressed", 120, 100),
            v("calls", "n/a", None, 5),
        ],
        {},
        {},
    )
    assert [c.metric for c in got] == ["cpu_instructions", "instructions"]
    assert [c.describe() for c in got] == ["cpu_instructions +20%", "instructions 22 -> 16"]


def test_a_line_says_when_no_metric_moved():
    assert (
        upgrade_line("b", "a", "inconclusive", 1.01, [], ["instructions", "cpu_instructions", "est_cycles"])
        == "TVM b vs a: 1.01x, unclear (a/b: the noise is larger than the threshold), no metric moved "
        "(cpu_instructions, est_cycles the same)"
    )
    assert upgrade_line("b", "a", "pass", 1.0, [], ["instructions"]).endswith(
        "same time (1.00x, a/b), no exact metric moved"
    )
    assert upgrade_line("b", "a", "pass", 1.0, []) == "TVM b vs a: same time (1.00x, a/b)"


def test_a_line_names_at_most_four_changes():
    moved = [Change(f"m{i}", 2.0, 1.0) for i in range(6)]
    assert upgrade_line("b", "a", "pass", 1.0, moved).endswith("m3 +100%, 2 more metric(s) moved")


def test_classes_and_mode():
    assert [classify(s) for s in ("regressed", "improved", "pass", "inconclusive", "n/a", None)] == [
        "slower",
        "faster",
        "same",
        "unclear",
        "not compared",
        "not compared",
    ]
    # the time not slower, a count past its threshold (est_cycles +4%): counts worse
    assert [classify(s, True) for s in ("regressed", "pass", "inconclusive", None)] == [
        "slower",
        "counts worse",
        "counts worse",
        "not compared",
    ]
    assert mode("0.26.0") == "a/b vs TVM 0.26.0"


# --------------------------------------------------------------------------- the suite's summary


def test_the_summary_counts_and_puts_the_largest_changes_first():
    rows = (
        UpgradeRow("t_same", "same", "TVM b vs a: same time (1.01x, a/b)", 1.01, 0.98, 1.04),
        UpgradeRow("t_fast", "faster", "TVM b vs a: 2.00x faster (a/b)", 0.5, 0.45, 0.55),
        UpgradeRow("t_broken", "not compared", "not compared: TVM a could not build it (failed): KeyError"),
        UpgradeRow("t_slow", "slower", "TVM b vs a: 1.31x slower (a/b)", 1.31, 1.2, 1.4, past_threshold=True),
    )
    summary = UpgradeSummary("b", "a", rows)
    assert summary.counts == {
        "slower": 1,
        "counts worse": 0,
        "faster": 1,
        "same": 1,
        "unclear": 0,
        "exact only": 0,
        "not compared": 1,
    }
    assert [r.test for r in summary.ordered()] == ["t_fast", "t_slow", "t_same", "t_broken"]
    lines = summary.lines()
    assert lines[0] == "TVM b vs a, 4 test(s): 1 slower, 1 faster, 1 same, 1 not compared"
    assert lines[1] == "  t_fast [0.45-0.55x]: 2.00x faster (a/b)"
    assert lines[4] == "  t_broken: not compared: TVM a could not build it (failed): KeyError"
    data = summary.to_json()
    assert data["counts"]["slower"] == 1 and data["tests"][1]["past_threshold"] is True
    json.dumps(data)  # builtin types only


def test_the_summary_is_built_from_result_entries():
    from pytest_tvmperf.result.entry import MetricCell, ResultEntry, TimeCell

    entries = [
        ResultEntry(
            nodeid="t.py::a",
            verdict="regressed",
            test_id="a",
            note="TVM b vs a: 1.50x slower (a/b)",
            time=TimeCell(1.5e-3, 1e-3, 1.5, 1.4, 1.6, 0.99, mode("a")),
            metrics=(MetricCell("time", "regressed", 1.5e-3, 1e-3),),
        ),
        ResultEntry(nodeid="t.py::b", verdict="not gated", test_id="b", note="not compared: TVM a could not build it"),
        ResultEntry(
            nodeid="t.py::c",
            verdict="regressed",
            test_id="c",
            note="TVM b vs a: same time (1.01x, a/b)",
            time=TimeCell(1e-3, 1e-3, 1.01, 0.95, 1.07, 0.99, mode("a")),
            metrics=(MetricCell("time", "pass", 1e-3, 1e-3), MetricCell("est_cycles", "regressed", 111, 107)),
        ),
    ]
    summary = upgrade_summary(entries, "b", "a")
    assert [(r.test, r.cls, r.past_threshold) for r in summary.ordered()] == [
        ("a", "slower", True),
        ("c", "counts worse", True),
        ("b", "not compared", False),
    ]


def test_benchmark_json_gets_both_sides_named_by_version():
    from pytest_tvmperf.report.benchmark_json import benchmark_entry
    from pytest_tvmperf.result.entry import ResultEntry, TimeCell

    entry = ResultEntry(
        nodeid="t.py::a[x]",
        verdict="pass",
        test_id="a[x]",
        executor="prim",
        target="llvm",
        time=TimeCell(1e-3, 1e-3, 1.0, 0.9, 1.1, 0.99, mode("0.26.0"), (1e-3, 1.1e-3, 0.9e-3), (1e-3, 1e-3, 1e-3)),
    )
    bench = {"benchmarks": [benchmark_entry(entry)]}
    got = benchmark_sides(bench, [entry], "0.27.0", "0.26.0")["benchmarks"]
    assert [(b["name"], b["group"]) for b in got] == [("a[x] [TVM 0.27.0]", "a[x]"), ("a[x] [TVM 0.26.0]", "a[x]")]
    assert got[1]["stats"]["data"] == [1e-3, 1e-3, 1e-3]


def test_the_upgrade_summary_goes_into_each_report_file_as_it_is_written_once(tmp_path, monkeypatch):
    """The writer (report/outputs.py) takes the upgrade's section before it writes: each
    file once, the section in it (a top-level "upgrade", an HTML section after the header,
    both sides of each compared test in the pytest-benchmark JSON)."""
    from pytest_tvmperf.against.reports import upgrade_section
    from pytest_tvmperf.report import outputs
    from pytest_tvmperf.result.entry import MetricCell, ResultEntry, TimeCell

    entry = ResultEntry(
        nodeid="t.py::a[x]",
        verdict="regressed",
        test_id="a[x]",
        executor="prim",
        target="llvm",
        note="TVM 0.27.0 vs 0.26.0: 1.50x slower (a/b)",
        time=TimeCell(1.5e-3, 1e-3, 1.5, 1.4, 1.6, 0.99, mode("0.26.0"), (1.5e-3,) * 3, (1e-3,) * 3),
        metrics=(MetricCell("time", "regressed", 1.5e-3, 1e-3),),
    )
    summary = upgrade_summary([entry], "0.27.0", "0.26.0")
    assert upgrade_section(upgrade_summary([], "0.27.0", "0.26.0"), []) is None  # nothing compared: no section
    written: list[Path] = []
    atomic_write = outputs.atomic_write
    monkeypatch.setattr(outputs, "atomic_write", lambda path, text: (written.append(path), atomic_write(path, text)))
    paths = {
        "json_path": tmp_path / "r.json",
        "html_path": tmp_path / "r.html",
        "benchmark_json_path": tmp_path / "b.json",
    }
    shown, errors = outputs.write_reports(
        [entry], [], history_path=None, history=[], **paths, sections=[upgrade_section(summary, [entry])]
    )
    assert errors == []
    assert sorted(written) == sorted(paths.values())  # each file once
    assert json.loads(paths["json_path"].read_text())["upgrade"] == summary.to_json()
    page = paths["html_path"].read_text()
    assert page.index("</header>") + len("</header>") == page.index('<section id="upgrade">')
    names = [b["name"] for b in json.loads(paths["benchmark_json_path"].read_text())["benchmarks"]]
    assert names == ["a[x] [TVM 0.27.0]", "a[x] [TVM 0.26.0]"]
    assert any(line.startswith("pytest-benchmark JSON (1 timed tests)") for line in shown)


def test_simulated_counts_of_another_llvm_are_compared_not_held():
    now = {"cpu_instructions": "llvm -mcpu=haswell, LLVM 20; valgrind-3.19.0; caches I1=32768"}
    then = {
        "cpu_instructions": "llvm -mcpu=haswell, LLVM 19; valgrind-3.19.0; caches I1=32768",
        "est_cycles": "llvm -mcpu=haswell, LLVM 19; valgrind-3.18.0",
    }
    assert same_setup(now, then) == {"cpu_instructions": now["cpu_instructions"], "est_cycles": then["est_cycles"]}


# --------------------------------------------------------------------------- the environment


def test_versions_are_checked_before_anything_is_installed():
    assert parsing.parse_version("0.26.0") == "0.26.0"
    assert parsing.parse_version(" apache-tvm==0.25.0 ") == "0.25.0"
    for bad in ("", "latest", "0.26; rm -rf /", "--index-url=x"):
        with pytest.raises(ValueError, match="not a version of apache-tvm"):
            parsing.parse_version(bad)


def test_the_cache_directory_and_the_environments_key(tmp_path):
    assert env.cache_root({"TVMPERF_CACHE_DIR": "/c"}) == Path("/c")
    assert env.cache_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/pytest-tvmperf")
    reqs = env.requirements("0.26.0")
    assert reqs[:2] == ["apache-tvm==0.26.0", "numpy"] and any(r.startswith("pytest==") for r in reqs)
    one = env.env_dir("0.26.0", tmp_path, reqs)
    assert one.parent == tmp_path and one.name.startswith("tvm-0.26.0-")
    assert env.env_dir("0.25.0", tmp_path) != one
    assert env.env_dir("0.26.0", tmp_path, [*reqs, "extra"]) != one


def test_a_complete_environment_is_found_without_pip(tmp_path, monkeypatch):
    reqs = env.requirements("0.26.0")
    place = env.env_dir("0.26.0", tmp_path, reqs)
    (place / "bin").mkdir(parents=True)
    (place / "bin" / "python").write_text("")
    (place / env.MARKER).write_text(json.dumps({"version": "0.26.0", "tvm_version": "0.26.0"}))
    monkeypatch.setattr(env, "_run", lambda *a, **k: pytest.fail("pip ran"))
    assert env.ensure_env("0.26.0", tmp_path) == env.OtherEnv(place, "0.26.0", "0.26.0")


def test_an_install_that_fails_is_one_error_and_leaves_nothing(tmp_path, monkeypatch):
    def fake_run(cmd, what, timeout):
        if "pip" in cmd:
            raise env.EnvError(f"{what} failed (exit status 1); its last lines:\n    ERROR: No matching distribution")
        Path(cmd[-1]).mkdir(parents=True)
        return ""

    monkeypatch.setattr(env, "_run", fake_run)
    with pytest.raises(env.EnvError, match=r"(?s)pip install apache-tvm==0.0.1 failed .*No matching distribution"):
        env.ensure_env("0.0.1", tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith((".lock", ".lock.pid"))] == []


HOLD_ENV_LOCK = """
import sys
from pathlib import Path
from pytest_tvmperf.store.locks import file_lock
with file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_run_waiting_for_another_runs_build_of_the_environment_says_so_and_is_bounded(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setattr(env, "_run", lambda *a, **k: pytest.fail("pip ran"))
    lock = Path(str(env.env_dir("0.0.2", tmp_path, env.requirements("0.0.2"))) + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "hold.py").write_text(HOLD_ENV_LOCK)
    holder = subprocess.Popen(
        [sys.executable, "hold.py", str(lock)], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(
            env.EnvError, match=rf"cannot be made: process {holder.pid} \(python hold.py .*\) holds the lock"
        ):
            env.ensure_env("0.0.2", tmp_path, log=lines.append, lock_timeout_s=0.2)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert len(lines) == 1 and lines[0].startswith(
        "tvmperf: waiting up to 0.2 s (the bound of another run's build of it) "
        "for the lock of the apache-tvm 0.0.2 environment"
    )
    assert f"held by process {holder.pid} (python hold.py " in lines[0]


# --------------------------------------------------------------------------- the child pass


def test_the_child_runs_this_plugin_alone_with_the_options_given():
    args = run.child_args(["t.py::a[llvm-prim]"], Path("/r"), Path("/r/pyproject.toml"), ["--tvmperf-simulate=off"])
    assert args[:2] == ["-o", "addopts="] and "--tvmperf-timing=off" in args and "--rootdir=/r" in args
    assert args[-2:] == ["--tvmperf-simulate=off", "t.py::a[llvm-prim]"]
    assert "--config-file=/r/pyproject.toml" in args
    assert run.PLUGINS[:2] == ("-p", "pytest_tvmperf.plugin") and ("-p", "no:xdist") == run.PLUGINS[4:6]


def test_a_pass_without_results_gives_its_last_lines_to_every_test(tmp_path):
    (tmp_path / "child.log").write_text("collected 0 items\nImportError: cannot import name 'x' from 'tvm'\n")
    builds = run.read_pass(tmp_path)
    got = builds.get("t.py::a")
    assert got.status == "missing" and "ImportError: cannot import name 'x'" in got.error


def test_a_test_file_that_does_not_import_there_explains_its_tests(tmp_path):
    (tmp_path / "results.json").write_text(
        json.dumps(
            {
                "collect:t.py": {"status": "failed", "error": "AttributeError: module 'tvm' has no attribute 's_tir'"},
                "u.py::b": {"status": "built", "record": {}, "library": "x.so"},
            }
        )
    )
    builds = run.read_pass(tmp_path, "0.26.0")
    assert builds.get("t.py::a[llvm-prim]").error.endswith("no attribute 's_tir'")
    assert builds.get("u.py::b").library == tmp_path / "x.so"
    assert builds.get("v.py::c").status == "missing"


def test_the_error_named_is_pytests_last_E_line():
    from pytest_tvmperf.against.gate import error_line

    report = (
        "    def test_new_api(tvmperf):\n>       raise AttributeError('x')\n"
        "E       AttributeError: module 'tvm.relax' has no attribute 'brand_new_op'\n\ntest_perf.py:11: AttributeError"
    )
    assert error_line(report) == "AttributeError: module 'tvm.relax' has no attribute 'brand_new_op'"
    assert error_line("ImportError: no tvm\n") == "ImportError: no tvm"
    assert error_line("") == ""


def test_more_packages_for_the_other_environment():
    assert parsing.parse_packages("onnx, onnxruntime torch==2.4.0") == ("onnx", "onnxruntime", "torch==2.4.0")
    with pytest.raises(ValueError, match="not a package name"):
        parsing.parse_packages("onnx;rm -rf /")
    reqs = env.requirements("0.26.0", ("torch==2.4.0", "no-such-package-here"))
    assert reqs[-2:] == ["torch==2.4.0", "no-such-package-here"]
    assert env.env_dir("0.26.0", Path("/c"), reqs) != env.env_dir("0.26.0", Path("/c"))


def test_a_build_that_cannot_run_here_is_compared_by_its_counts():
    from pytest_tvmperf.result.entry import MetricCell, ResultEntry

    entry = ResultEntry(
        nodeid="t.py::d",
        verdict="pass",
        test_id="d",
        note="TVM b vs a: time not compared (the build of TVM a crashed ... (SIGSEGV)), no metric moved",
        metrics=(MetricCell("time", "n/a"), MetricCell("cpu_instructions", "pass", 10, 10)),
    )
    (row,) = upgrade_summary([entry], "b", "a").rows
    assert row.cls == "exact only" and "SIGSEGV" in row.line


def test_only_the_pass_directories_of_runs_that_are_over_are_removed(tmp_path, monkeypatch):
    """A pass directory is claimed by its run's controller (marker and held lock): a later
    run's sweep keeps it while that run lives and removes it once it is over; a directory
    merely named like one (a user's, however old) is kept."""
    import os
    import tempfile

    from pytest_tvmperf.against.run import run_dir
    from pytest_tvmperf.store.sweep import claim, sweep

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    users = tmp_path / "tvmperf-against-old"
    (users / "x").mkdir(parents=True)
    os.utime(users, (1, 1))
    live, dead = claim("against", "live"), claim("against", "dead")
    assert live.path == run_dir("live")
    dead.release()  # its run was killed
    assert sweep() == [run_dir("dead")]
    assert live.path.is_dir() and users.is_dir()
    live.remove()


def test_a_pass_another_run_holds_is_waited_for_with_a_line_and_a_bound(tmp_path):
    """The lock of the other version's pass had no bound: a run waited on a stopped pass forever,
    silently. Now one line names the holder at once, and past the bound the tests say so."""
    import os

    from pytest_tvmperf.against.env import OtherEnv
    from pytest_tvmperf.against.run import run_pass
    from pytest_tvmperf.store.locks import file_lock

    out = tmp_path / "pass"
    out.mkdir()
    said: list[str] = []
    with file_lock(tmp_path / "pass.lock"):
        builds = run_pass(
            OtherEnv(tmp_path / "env", "0.26.0", "0.26.0"),
            ["t.py::x"],
            tmp_path,
            None,
            [],
            out,
            bound_s=100.0,
            on_wait=said.append,
            wait_s=0.05,
        )
    assert len(said) == 1 and "lock of the apache-tvm 0.26.0 pass" in said[0] and str(os.getpid()) in said[0]
    assert builds.problem and "0.26.0 pass" in builds.problem and not (out / "child.log").exists()


def test_a_pass_past_its_bound_is_stopped_and_its_tests_say_so(tmp_path):
    from pytest_tvmperf.against import run
    from pytest_tvmperf.against.env import OtherEnv

    env = OtherEnv(tmp_path / "env", "0.26.0", "0.26.0")
    (tmp_path / "env" / "bin").mkdir(parents=True)
    python = env.python
    python.write_text("#!/bin/sh\nexec sleep 30\n")  # a pass that never ends
    python.chmod(0o755)
    builds = run.run_pass(env, ["t.py::x"], tmp_path, None, [], tmp_path / "pass", bound_s=0.2)
    assert "pass was stopped after 0 s" in builds.problem and "per test beyond --tvmperf-lock-timeout" in builds.problem
