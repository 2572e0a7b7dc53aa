"""An RPC device's connection, bounded: a call past its deadline raises :class:`DeviceHung`,
and a hung device's connections are shut before its session says goodbye."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Iterator


class DeviceHung(Exception):
    """A call to the RPC device did not return within its deadline (stopped, swapping, wedged)."""


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise :class:`DeviceHung` in the main thread when the block takes longer than
    ``seconds``: TVM's RPC socket reads check Python's signals when interrupted, so a
    SIGALRM handler's exception ends a read that would wait forever (other threads get no
    signals: unbounded there). An alarm already set (pytest-timeout's) is kept: it bounds
    the block when it comes first, and is set again for what is left of it afterwards."""
    pending, interval = signal.getitimer(signal.ITIMER_REAL)
    # (0 < pending <= seconds: an earlier alarm bounds the block already)
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or 0 < pending <= seconds:
        yield
        return

    def expired(signum, frame):
        raise DeviceHung(f"no answer within {seconds:g} s (--tvmperf-rpc-timeout)")

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending:
            signal.setitimer(signal.ITIMER_REAL, max(pending - (time.monotonic() - started), 1e-3), interval)


def shut_connections_to(peer: tuple[str, int], fd_dir: Path = Path("/proc/self/fd")) -> int:
    """Shut down (both ways) this process's TCP connections to ``peer`` (among its open
    file descriptors); returns how many. An RPC session's destructor waits for its server's
    answer to goodbye: a hung device would hang it too unless its connection is shut first.
    Linux only (elsewhere: 0)."""
    shut = 0
    try:
        fds = [int(name) for name in os.listdir(fd_dir)]
    except OSError:
        return 0
    for fd in fds:
        try:
            if not os.readlink(fd_dir / str(fd)).startswith("socket:"):
                continue
            conn = socket.socket(fileno=os.dup(fd))  # a duplicate: the session keeps its own descriptor
        except OSError:
            continue
        with conn, contextlib.suppress(OSError):
            if conn.family in (socket.AF_INET, socket.AF_INET6) and conn.getpeername()[:2] == tuple(peer):
                conn.shutdown(socket.SHUT_RDWR)
                shut += 1
    return shut
