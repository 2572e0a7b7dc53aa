"""Competing CPU-bound jobs for the load benchmarks: N processes that spin until a
deadline and then stop by themselves; also stopped by their own pid on exit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Iterator

SPIN = "import time\nend = time.monotonic() + {seconds}\nx = 0\nwhile time.monotonic() < end:\n    x += 1\n"


@contextlib.contextmanager
def cpu_load(jobs: int, seconds: float) -> Iterator[list[int]]:
    """``jobs`` spinning processes for at most ``seconds`` (0 jobs: no load)."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=float(seconds))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(jobs)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
