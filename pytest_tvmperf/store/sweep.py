"""The run's temporary directories, and the one sweep that removes those of runs that
are gone.

A run removes only what it can prove a run of this plugin made, once that run is over:
never by a name pattern, an age or a process id (one of another PID namespace, as in a
containerised CI job sharing ``/tmp``, looks dead from here). Each directory a run makes
(:func:`make_owned`) carries a marker file (:data:`MARKER`) with a fixed text, and a lock
file (:data:`LOCK`) the run holds an exclusive ``flock`` on while it uses the directory
(the kernel releases it when the process ends, however it ends, across PID namespaces).

:func:`sweep` removes a directory only when it is this user's own (not a link, not
writable by group or others), carries the marker, and its lock can be taken at once.
Where ``flock`` is not available, nothing is swept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

#: every directory of a run starts with this (and is found by it; the marker decides)
PREFIX = "tvmperf-run-"
MARKER = ".tvmperf-run"
MARKER_TEXT = "a temporary directory of a pytest-tvmperf run; removed when that run is over\n"
LOCK = ".tvmperf-run.lock"


def _flock():
    try:
        import fcntl

        return fcntl
    except ImportError:  # no flock (Windows): a run's directories are never swept
        return None


class OwnedDir:
    """A temporary directory of this run, its lock held until :meth:`remove` or
    :meth:`release`."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    def release(self) -> None:
        """Keep the files (a message names one of them) but let a later run sweep them."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """Remove the directory (at the end of its use), then drop the lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.release()


def make_owned(kind: str, parent: Path | None = None) -> OwnedDir:
    """A new private (0700) directory ``tvmperf-run-<kind>-<random>`` in the system's
    temporary directory (or ``parent``), with the marker and the held lock in it."""
    return _own(Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=parent)))


def claim(kind: str, key: str) -> OwnedDir:
    """A new private directory ``tvmperf-run-<kind>-<key>`` of the system's temporary
    directory, named for others to find (xdist workers); FileExistsError when it exists."""
    path = Path(tempfile.gettempdir()) / f"{PREFIX}{kind}-{key}"
    os.mkdir(path, 0o700)
    os.chmod(path, 0o700)  # whatever the umask
    return _own(path)


def _own(path: Path) -> OwnedDir:
    """Put the marker and the held lock into the new directory ``path``."""
    fd = None
    fcntl = _flock()
    try:
        if fcntl is not None:
            fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new directory: nobody else has it
        with open(path / MARKER, "x", encoding="utf-8") as f:
            f.write(MARKER_TEXT)
    except BaseException:
        if fd is not None:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        raise
    return OwnedDir(path, fd)


def _ours(path: Path) -> bool:
    """This user's own directory (no link, not writable by others) with our marker in it."""
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return False
        marker = os.lstat(path / MARKER)
        if not stat.S_ISREG(marker.st_mode) or marker.st_size > len(MARKER_TEXT) * 2:
            return False
        return (path / MARKER).read_text(encoding="utf-8") == MARKER_TEXT
    except (OSError, UnicodeDecodeError):
        return False


def sweep(where: Path | None = None) -> list[Path]:
    """Remove the directories of runs that are over (see the module); returns them."""
    root = Path(where) if where is not None else Path(tempfile.gettempdir())
    fcntl = _flock()
    removed: list[Path] = []
    try:
        candidates = sorted(root.glob(PREFIX + "*")) if fcntl is not None else []
    except OSError:
        return removed
    for path in candidates:
        if not _ours(path):
            continue
        try:
            fd = os.open(path / LOCK, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its run is alive
                continue
            with contextlib.suppress(OSError):  # removed while held: no run can take it over meanwhile
                for child in sorted(path.iterdir()):
                    if child.name != LOCK:
                        shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
                (path / LOCK).unlink()
                path.rmdir()
                removed.append(path)
        finally:
            os.close(fd)
    return removed
