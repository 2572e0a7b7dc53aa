"""Locks across processes, each bounded and never silent: a busy lock says who holds it
and how long this process will wait; one still held past the bound is a
:class:`LockTimeout` naming the holder.

Lock files live in a directory private to this user (``<tmp>/tvmperf-locks-<uid>``, 0700):
another local user can neither hold nor plant a file there. A lock that cannot be used is
a :class:`LockError` naming the path and the fix, never a traceback from ``filelock``.
The holder writes its pid and command beside the lock (``<lock>.pid``); a waiter reads it
as untrusted text (bounded, a regular file only, printed through ``values.printable.safe``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pytest_tvmperf.values.printable import safe

#: the most of a holder file read, and of its command shown
HOLDER_FILE_MAX = 4096
COMMAND_SHOWN_MAX = 200


class LockError(Exception):
    """A lock that cannot be used at all (not one that is busy), with the path and the fix."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock, as its holder file says (untrusted: ``command`` is escaped)."""

    pid: int
    command: str = ""

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except OSError as exc:  # another user's process (PermissionError) is alive
            return not isinstance(exc, ProcessLookupError)
        return True

    def described(self) -> str:
        """``process 123 (pytest --tvmperf-update)``, ``(no longer running)`` when it is gone."""
        who = f"process {self.pid}" + (f" ({self.command})" if self.command else "")
        return who if self.alive() else f"{who} (no longer running)"


class LockTimeout(LockError):
    """The lock was not free in time; ``holder`` holds it (None when it cannot be told)."""

    def __init__(self, lock: Path, timeout_s: float, holder: LockHolder | None) -> None:
        self.timeout_s = timeout_s
        self.holder = holder
        who = holder.described() if holder is not None else "another process"
        super().__init__(f"{who} holds the lock {lock}")


def lock_dir() -> Path:
    """This user's lock directory (made 0700 when missing); LockError when it is not a
    directory of this user's own (planted by someone else, or a symbolic link)."""
    base = Path(tempfile.gettempdir())
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = base / f"tvmperf-locks-{uid}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        found = os.lstat(path)
    except OSError as exc:
        raise LockError(
            f"the lock directory {path} cannot be made ({exc.strerror or exc}); set TMPDIR to a directory of your own"
        ) from None
    if not stat.S_ISDIR(found.st_mode) or (hasattr(os, "getuid") and found.st_uid != uid):
        owner = f"user id {found.st_uid}" if stat.S_ISDIR(found.st_mode) else "not a directory"
        raise LockError(
            f"the lock directory {path} is not this user's own ({owner}); another local user may have "
            f"made it: remove it (as its owner or root), or set TMPDIR to a directory of your own"
        )
    if hasattr(os, "getuid") and stat.S_IMODE(found.st_mode) & 0o022:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
    return path


def holder_path(lock: Path) -> Path:
    return lock.with_name(lock.name + ".pid")


def _read_small(path: Path) -> str:
    """At most HOLDER_FILE_MAX bytes of the regular file at ``path`` ("" for anything else)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, HOLDER_FILE_MAX).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def parse_holder(text: str) -> LockHolder | None:
    """A holder file's text (``PID\\nCOMMAND``) as a LockHolder; None when it is not one."""
    pid_text, _, command = text.partition("\n")
    pid_text = pid_text.strip()
    if not pid_text.isascii() or not pid_text.isdigit() or len(pid_text) > 10 or int(pid_text) <= 0:
        return None
    command = safe(command.rstrip("\n"))
    if len(command) > COMMAND_SHOWN_MAX:
        command = command[:COMMAND_SHOWN_MAX] + "..."
    return LockHolder(int(pid_text), command)


def lock_holder(lock: Path) -> LockHolder | None:
    return parse_holder(_read_small(holder_path(lock)))


def _write_holder(lock: Path) -> None:
    args = list(getattr(sys, "orig_argv", None) or sys.argv) or ["python"]
    args[0] = Path(args[0]).name
    command = " ".join(" ".join(args).split())[: COMMAND_SHOWN_MAX * 2]  # this process's, one line
    with contextlib.suppress(OSError):
        fd, temp = tempfile.mkstemp(prefix=f".{lock.name}.{os.getpid()}.", suffix=".tmp", dir=lock.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(f"{os.getpid()}\n{command}\n")
            os.replace(temp, holder_path(lock))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


def _unusable(lock: Path, what: str, exc: OSError) -> LockError:
    reason = exc.strerror or str(exc)
    try:
        owner = os.lstat(lock).st_uid
    except OSError:
        owner = None
    mine = owner is None or not hasattr(os, "getuid") or owner == os.getuid()
    whose = "" if mine else f", owned by user id {owner}"
    return LockError(
        f"the {what} {lock} cannot be used ({reason}{whose}): remove it (as its owner or root), "
        f"or set TMPDIR to a directory of your own"
    )


@contextlib.contextmanager
def file_lock(
    lock: Path,
    timeout_s: float | None = None,
    what: str = "lock",
    on_wait: Callable[[str], None] | None = None,
    option: str = "--tvmperf-lock-timeout",
) -> Iterator[None]:
    """Hold an exclusive lock on the file ``lock`` (created if missing, left in place)
    across processes (``filelock``); not re-entrant. A busy lock gives ``on_wait`` one line,
    once, when the wait begins; :class:`LockTimeout` past ``timeout_s`` (None: no bound)."""
    from filelock import FileLock, Timeout

    held = FileLock(lock)
    try:
        try:
            held.acquire(blocking=False)
        except Timeout:
            if on_wait is not None:
                holder = lock_holder(lock)
                who = holder.described() if holder is not None else "another process"
                bound = f"up to {timeout_s:g} s ({option})" if timeout_s is not None else "until it is free"
                on_wait(f"tvmperf: waiting {bound} for the {what} ({lock}), held by {who}")
            try:
                held.acquire(timeout=-1 if timeout_s is None else timeout_s)
            except Timeout:
                raise LockTimeout(lock, timeout_s or 0.0, lock_holder(lock)) from None
    except OSError as exc:
        raise _unusable(lock, what, exc) from None
    try:
        _write_holder(lock)
        yield
    finally:
        held.release()
