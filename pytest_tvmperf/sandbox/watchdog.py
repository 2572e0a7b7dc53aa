"""A bound on a call into code that came with the data: the baseline's program, rebuilt
from its stored IR, runs once in the child (sandbox/child.py), then is timed here. An IR
that loops forever on its *second* call would hang the session in native code, beyond a
Python exception or Ctrl-C. TVM releases the GIL while a kernel runs, so a timer thread
still runs: past the bound it writes why, naming the test, and ends the process (the only
way out of a native loop) rather than let the run hang until CI's job timeout."""

from __future__ import annotations

import os
import threading
from typing import Callable

#: the exit status of a run ended by the watchdog (pytest's "tests failed")
EXIT_STATUS = 1


class GuardedSampler:
    """``sampler`` (of baseline code), each call bounded by ``timeout_s``: past it, ``last_words(message)``
    (by default to stderr) and the process ends."""

    def __init__(
        self,
        sampler: Callable[[], float],
        timeout_s: float,
        message: str,
        last_words: Callable[[str], None] | None = None,
    ) -> None:
        self._sampler = sampler
        self.timeout_s = timeout_s
        self.message = message
        self._last_words = last_words or _to_stderr

    def __call__(self) -> float:
        if self.timeout_s <= 0:
            return self._sampler()
        timer = threading.Timer(self.timeout_s, self._expire)
        timer.daemon = True
        timer.start()
        try:
            return self._sampler()
        finally:
            timer.cancel()

    def reloaded(self) -> "GuardedSampler":
        reload = getattr(self._sampler, "reloaded", None)
        return GuardedSampler(reload() if reload else self._sampler, self.timeout_s, self.message, self._last_words)

    def _expire(self) -> None:
        try:
            self._last_words(self.message)
        finally:
            os._exit(EXIT_STATUS)


def _to_stderr(message: str) -> None:
    os.write(2, ("\n" + message + "\n").encode("utf-8", "replace"))
