"""What a run removes at its start (store/sweep.py): only the temporary directories a run
of this plugin provably made (its marker inside, its lock free: that run is over), never
a file or a directory by its name, its age or a process id in its name."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

PLAIN_TEST = "def test_nothing():\n    pass\n"
#: a process id that no process of this PID namespace has (above the kernel's maximum)
DEAD_PID = 4194999


@pytest.fixture
def tmpdir_of_runs(tmp_path, monkeypatch) -> Path:
    """The system's temporary directory of the runs: a directory of this test's own."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    return root


def test_a_users_directory_named_like_a_runs_is_kept(project, tmpdir_of_runs, tmp_path):
    """``$TMPDIR/tvmperf-20241126-nightly/`` is the user's: its digits are no process id."""
    nightly = tmpdir_of_runs / "tvmperf-20241126-nightly"
    nightly.mkdir()
    (nightly / "results.json").write_text("{}")
    project.pytester.makepyfile(test_plain=PLAIN_TEST)
    project.run(f"--tvmperf-json={tmp_path / 'out' / 'r.json'}").assert_outcomes(passed=1)
    assert (nightly / "results.json").read_text() == "{}"


def test_other_tools_temporary_files_beside_a_report_are_kept(project, tmp_path):
    """Hidden ``*.tmp`` files beside --tvmperf-json, old or named with a process id that is
    not running here, are other tools' (or another PID namespace's live writer's)."""
    out = tmp_path / "out"
    out.mkdir()
    old = out / ".editor-swap.tmp"
    old.write_text("a user's")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    pid_named = out / f".other.json.{DEAD_PID}.abc123.tmp"
    pid_named.write_text("another tool's")
    project.pytester.makepyfile(test_plain=PLAIN_TEST)
    project.run(f"--tvmperf-json={out / 'r.json'}").assert_outcomes(passed=1)
    assert old.read_text() == "a user's" and pid_named.read_text() == "another tool's"


def test_a_live_run_of_another_pid_namespace_keeps_its_ref_copy(project, tmpdir_of_runs, tmp_path):
    """Two CI jobs sharing /tmp from two containers: the other job's process id means
    nothing here, so its live copy of the ref's baselines must survive this run's start."""
    theirs = tmpdir_of_runs / f"tvmperf-{DEAD_PID}-ref-x1y2"
    (theirs / "tests").mkdir(parents=True)
    (theirs / "tests" / "test_k.json").write_text("{}")
    project.pytester.makepyfile(test_plain=PLAIN_TEST)
    project.run(f"--tvmperf-json={tmp_path / 'r.json'}").assert_outcomes(passed=1)
    assert (theirs / "tests" / "test_k.json").exists()


HOLDER = """
import sys, time
from pathlib import Path
from pytest_tvmperf.store.sweep import make_owned
owned = make_owned("ref", Path(sys.argv[1]))
print(owned.path, flush=True)
sys.stdin.read()  # held until the test closes the pipe
"""


def test_a_runs_directory_is_removed_only_once_its_run_is_over(project, tmpdir_of_runs, tmp_path):
    """The marker and the held lock prove a directory a run's; it goes once the lock is free."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmpdir_of_runs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        live = Path(holder.stdout.readline().strip())
        (live / "scratch.so").write_text("in use")
        project.pytester.makepyfile(test_plain=PLAIN_TEST)
        project.run(f"--tvmperf-json={tmp_path / 'r.json'}").assert_outcomes(passed=1)
        assert (live / "scratch.so").read_text() == "in use"  # its run is alive
    finally:
        holder.stdin.close()
        holder.wait()
    project.run(f"--tvmperf-json={tmp_path / 'r.json'}").assert_outcomes(passed=1)
    assert not live.exists()  # its run is over: proven ours, removed
