"""A TVM RPC tracker and servers on 127.0.0.1 for the tests (and benchmarks/rpc_suite.py):
free ports, each process in its own process group, stopped by its own pid (the group it
leads: an RPC server serves from a child process), and a bounded lifetime: every wait
polls with a deadline, and a process still running at the end is killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: the longest a tracker or server may take to come up (importing TVM on a loaded machine)
START_TIMEOUT_S = 120.0
POLL_S = 0.1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until(check, what: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process ended with status {proc.returncode}")
        time.sleep(POLL_S)  # a poll interval with a deadline, not a timing assumption
    raise RuntimeError(f"{what}: not ready within {timeout:.0f} s")


@dataclass
class RpcFarm:
    """A tracker and its servers, started with :meth:`start` and :meth:`add_server`."""

    python: str = sys.executable
    log_dir: Path | None = None
    #: the longest any of its processes lives, whatever happens to the process that started it
    lifetime_s: float = 900.0
    port: int = 0
    tracker: subprocess.Popen | None = None
    servers: dict[str, list[subprocess.Popen]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _spawn(self, args: list[str], name: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        out = open(self.log_dir / f"{name}.log", "wb") if self.log_dir else subprocess.DEVNULL
        try:
            # `timeout` leads the new process group and kills all of it when the lifetime ends
            return subprocess.Popen(
                ["timeout", "-s", "KILL", str(int(self.lifetime_s)), self.python, "-m", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=None if env is None else {**os.environ, **env},
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            if self.log_dir:
                out.close()

    def start(self) -> "RpcFarm":
        self.port = free_port()
        self.tracker = self._spawn(
            [
                "tvm.exec.rpc_tracker",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--port-end",
                str(self.port + 1),
                "--silent",
            ],
            "tracker",
        )

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        _wait_until(listening, f"RPC tracker on port {self.port}", START_TIMEOUT_S, self.tracker)
        return self

    def free(self, key: str) -> int:
        from pytest_tvmperf.farm import tracker

        summary = tracker.summary(("127.0.0.1", self.port))
        return sum(o.free for o in tracker.offers(summary) if o.key == key)

    def wait_free(self, key: str, count: int, timeout: float = START_TIMEOUT_S) -> int:
        """How many devices the tracker offers under ``key``, once it is ``count`` or ``timeout`` passed:
        a server registers again with the tracker a moment after its session closes."""
        try:
            _wait_until(lambda: self.free(key) == count, f"{count} free device(s) under {key!r}", timeout)
        except RuntimeError:
            pass
        return self.free(key)

    def add_server(self, key: str, cpu: str | None = None, hide: str = "") -> subprocess.Popen:
        """Start one more server under ``key`` and wait until the tracker offers it. With
        ``cpu``, the server's CPU looks like that model with the features whose names start
        with ``hide`` (comma-separated) not enabled (tests/fake_device/sitecustomize.py)."""
        before = self.free(key)
        port = free_port()
        env = None
        if cpu is not None:
            env = {
                "TVMPERF_FAKE_DEVICE_CPU": cpu,
                "TVMPERF_FAKE_DEVICE_HIDE": hide,
                "PYTHONPATH": os.pathsep.join(
                    [str(Path(__file__).parent / "fake_device"), os.environ.get("PYTHONPATH", "")]
                ),
            }
        proc = self._spawn(
            [
                "tvm.exec.rpc_server",
                "--tracker",
                self.address,
                "--key",
                key,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--port-end",
                str(port + 1),
                "--silent",
            ],
            f"server-{key}-{len(self.servers.get(key, []))}",
            env,
        )
        self.servers.setdefault(key, []).append(proc)
        _wait_until(lambda: self.free(key) > before, f"RPC server {key!r} on port {port}", START_TIMEOUT_S, proc)
        return proc

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        """Stop a process started here, with the children it started (its own group)."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        for procs in self.servers.values():
            for proc in procs:
                self.kill(proc)
        self.servers.clear()
        if self.tracker is not None:
            self.kill(self.tracker)
            self.tracker = None
