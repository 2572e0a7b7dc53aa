"""Locks (store/locks.py): bounded, a line when one is busy naming its holder (pid and
command, read as untrusted text), a clear error for a lock another user planted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_tvmperf.store import locks

HOLD = """
import sys
from pathlib import Path
from pytest_tvmperf.store.locks import file_lock
with file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held(tmp_path):
    """A lock held by another process (until the test ends): (the lock, that process)."""
    lock = tmp_path / "x.lock"
    script = tmp_path / "hold.py"
    script.write_text(HOLD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(lock), "--marker-arg"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield lock, proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_a_busy_lock_says_once_who_holds_it_and_how_long_it_waits_then_times_out_naming_it(held, tmp_path):
    lock, proc = held
    lines = []
    with pytest.raises(locks.LockTimeout) as error:
        with locks.file_lock(lock, 0.2, "timing lock of here", lines.append):
            pass
    assert len(lines) == 1
    assert lines[0].startswith(
        f"tvmperf: waiting up to 0.2 s (--tvmperf-lock-timeout) for the timing lock of here ({lock}), "
        f"held by process {proc.pid} (python {tmp_path}/hold.py {lock} --marker-arg)"
    )
    assert "\n" not in lines[0]
    assert error.value.holder.pid == proc.pid
    assert (
        str(error.value) == f"process {proc.pid} (python {tmp_path}/hold.py {lock} --marker-arg) holds the lock {lock}"
    )


def test_a_free_lock_says_nothing():
    lines = []
    lock = locks.lock_dir() / f"free-{os.getpid()}.lock"
    with locks.file_lock(lock, 1.0, "x", lines.append):
        assert locks.lock_holder(lock).pid == os.getpid()
    assert lines == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("123\npytest -x\n", (123, "pytest -x")),
        ("123\npytest x\n::error title=fake::y\n", (123, "pytest x\\n::error title=fake::y")),
        ("123\n\x1b[31mred\n", (123, "\\x1b[31mred")),
        ("123\n" + "a" * 5000, (123, "a" * locks.COMMAND_SHOWN_MAX + "...")),
    ],
)
def test_a_holder_file_is_read_as_untrusted_text(text, expected):
    holder = locks.parse_holder(text)
    assert (holder.pid, holder.command) == expected


@pytest.mark.parametrize("text", ["", "x\n", "-1\n", "0\n", "99999999999999\n", "١٢\n"])
def test_a_holder_file_without_a_process_id_names_no_holder(text):
    assert locks.parse_holder(text) is None


def test_a_holder_file_that_is_a_fifo_is_not_read(tmp_path):
    lock = tmp_path / "x.lock"
    os.mkfifo(locks.holder_path(lock))
    assert locks.lock_holder(lock) is None  # no hang on the FIFO


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a file of another uid needs root")
def test_a_lock_file_of_another_user_is_a_clear_error(tmp_path):
    lock = tmp_path / "x.lock"
    lock.write_text("")
    os.chown(lock, 54321, 54321)
    os.chmod(lock, 0o644)
    os.chmod(tmp_path, 0o1777)  # a shared temporary directory: sticky and open to all
    with pytest.raises(locks.LockError) as error:
        with locks.file_lock(lock, 1.0, "timing lock of here"):
            pass
    assert not isinstance(error.value, locks.LockTimeout)
    assert str(error.value).startswith(f"the timing lock of here {lock} cannot be used (")
    assert "owned by user id 54321): remove it (as its owner or root), or set TMPDIR to a directory of your own" in str(
        error.value
    )


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a file of another uid needs root")
def test_a_lock_directory_of_another_user_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(locks.tempfile, "gettempdir", lambda: str(tmp_path))
    planted = tmp_path / f"tvmperf-locks-{os.getuid()}"
    planted.mkdir(mode=0o777)
    os.chown(planted, 54321, 54321)
    with pytest.raises(
        locks.LockError,
        match=rf"the lock directory {planted} is not this user's own \(user id 54321\); "
        r"another local user may have made it: remove it",
    ):
        locks.lock_dir()


def test_the_lock_directory_is_this_users_own(tmp_path, monkeypatch):
    monkeypatch.setattr(locks.tempfile, "gettempdir", lambda: str(tmp_path))
    made = locks.lock_dir()
    assert made.parent == tmp_path and made.stat().st_uid == os.getuid()
    assert made.stat().st_mode & 0o777 == 0o700
