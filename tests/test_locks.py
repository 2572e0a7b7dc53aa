"""Every lock a run takes is bounded and never silent: a line as soon as a wait begins
(the holder's process id and command, and how long the run will wait), a clear failure
naming the holder when the bound passes, and a clear failure (no traceback) for a lock
file another local user planted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scale_workload import SCALE_WORKLOAD

PRIM_TEST = (
    SCALE_WORKLOAD
    + """@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(scale(2.0))

@pytest.mark.tvmperf(executors=["prim"])
def test_b(tvmperf):
    tvmperf.check(scale(3.0))
"""
)

HOLD_TIMING_LOCK = """
import sys
from pathlib import Path
from pytest_tvmperf.session import timing_lock_path
from pytest_tvmperf.store.locks import file_lock
with file_lock(timing_lock_path(str(Path.cwd().resolve()))):
    print("held", flush=True)
    sys.stdin.read()  # held until the test closes stdin (a run stopped with Ctrl-Z holds it so)
"""

HOLD_BASELINES_LOCK = """
import sys
from pathlib import Path
from pytest_tvmperf.store.files import baselines_lock
with baselines_lock(Path("baselines").resolve()):
    print("held", flush=True)
    sys.stdin.read()  # held until the test closes stdin (a stopped update holds it so)
"""


class Holder:
    """Another process holding a lock, started in the project (its command is short:
    ``python hold_lock.py``), until closed."""

    def __init__(self, where: Path, code: str) -> None:
        (where / "hold_lock.py").write_text(code)
        self.command = "python hold_lock.py"
        self.proc = subprocess.Popen(
            [sys.executable, "hold_lock.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=where
        )
        assert self.proc.stdout.readline().strip() == "held"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def holders(project):
    started: list[Holder] = []

    def start(code: str) -> Holder:
        started.append(Holder(project.pytester.path, code))
        return started[-1]

    yield start
    for holder in started:
        holder.close()


def test_a_test_waiting_for_the_timing_lock_says_so_at_once_naming_the_holder_and_the_bound(project, holders):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    holder = holders(HOLD_TIMING_LOCK)
    result = project.run("--tvmperf-update", "--tvmperf-lock-timeout=1", "-k", "test_a")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"tvmperf: waiting up to 1 s (--tvmperf-lock-timeout) for the timing lock of *, held by process {holder.pid} "
            f"({holder.command})",
            f"*waited 1 s (--tvmperf-lock-timeout) for the timing lock of *: process {holder.pid} ({holder.command}) "
            f"holds the lock *end it (kill {holder.pid}) if it is stopped or hung*",
        ]
    )


def test_the_default_lock_bound_fits_a_ci_job():
    from pytest_tvmperf.config.options import DEFAULT_LOCK_TIMEOUT_S

    assert DEFAULT_LOCK_TIMEOUT_S <= 15 * 60


def test_an_update_waiting_for_the_baselines_lock_says_so_and_at_the_bound_fails_writing_nothing(project, holders):
    """A stopped update holds the baselines lock: the next update says at once who holds
    it, and past --tvmperf-lock-timeout fails the run naming the holder; no file is written
    and no test's result is lost (the tests themselves ran)."""
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    holder = holders(HOLD_BASELINES_LOCK)
    result = project.run("--tvmperf-update", "--tvmperf-lock-timeout=1")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            f"tvmperf: waiting up to 1 s (--tvmperf-lock-timeout) for the baselines lock of *baselines (*), "
            f"held by process {holder.pid} ({holder.command})"
        ]
    )
    assert (
        f"baselines not written to {project.baseline_file()} (2 test(s)): waited 1 s (--tvmperf-lock-timeout) for "
        f"the baselines lock: process {holder.pid} ({holder.command}) holds the lock "
    ) in text
    assert f"end it (kill {holder.pid}) if it is stopped or hung" in text
    assert not project.baseline_file().exists()
    holder.close()
    project.run("--tvmperf-update").assert_outcomes(passed=2)  # once it is free, the update writes
    assert set(project.baselines()["tests"]) == {"test_a[llvm-prim]", "test_b[llvm-prim]"}


def _planted(path: Path, directory: bool = False) -> Path:
    """``path`` made by another local user (uid 54321)."""
    if directory:
        path.mkdir(mode=0o755)
    else:
        path.write_text("")
        os.chmod(path, 0o644)
    os.chown(path, 54321, 54321)
    return path


@pytest.fixture
def shared_tmp(project, tmp_path):
    """A temporary directory shared with other users (sticky, open to all) as the run's."""
    import tempfile

    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    project.monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a file of another uid needs root")
def test_lock_files_planted_by_another_user_at_the_predictable_names_change_nothing(project, shared_tmp):
    """The lock names in the shared temporary directory are predictable (a hash of the
    project's path): another user's files there are not this user's locks."""
    import hashlib

    project.pytester.makepyfile(test_perf=PRIM_TEST)
    root = str(project.pytester.path.resolve())
    baselines = str((project.pytester.path / "baselines").resolve())
    _planted(shared_tmp / f"tvmperf-timing-{hashlib.sha256(root.encode()).hexdigest()[:12]}.lock")
    _planted(shared_tmp / f"tvmperf-baselines-{hashlib.sha256(baselines.encode()).hexdigest()[:16]}.lock")
    result = project.run("--tvmperf-update")
    result.assert_outcomes(passed=2)
    assert "PermissionError" not in result.stdout.str() + result.stderr.str()
    assert set(project.baselines()["tests"]) == {"test_a[llvm-prim]", "test_b[llvm-prim]"}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a file of another uid needs root")
def test_a_lock_directory_planted_by_another_user_fails_each_timed_test_clearly(project, shared_tmp):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    planted = _planted(shared_tmp / f"tvmperf-locks-{os.getuid()}", directory=True)
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=2)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text and "PermissionError" not in text
    result.stdout.fnmatch_lines(
        [
            f"tvmperf: the timing lock of * cannot be used: the lock directory {planted} is not "
            f"this user's own (user id 54321); another local user may have made it: remove it (as "
            f"its owner or root), or set TMPDIR to a directory of your own"
        ]
        * 2
    )
    assert not project.baseline_file().exists()
