"""Competing CPU-bound jobs for the load benchmarks: N processes that spin until a
deadline, or until the benchmark that started them is gone, and then stop by themselves;
also stopped by their own pid on exit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Iterator

#: spins until the deadline, or until the benchmark that started it is gone (killed without
#: its cleanup: its parent pid changes), checked every few million steps
SPIN = (
    "import os, time\nparent = os.getppid()\nend = time.monotonic() + {seconds}\nx = 0\n"
    "while time.monotonic() < end and (x % 4000000 or os.getppid() == parent):\n    x += 1\n"
)


@contextlib.contextmanager
def cpu_load(jobs: int, seconds: float) -> Iterator[list[int]]:
    """``jobs`` spinning processes for at most ``seconds`` (0 jobs: no load)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SPIN.format(seconds=float(seconds))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(jobs)
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
