"""A fake TVM RPC tracker for the tests: it answers the tracker's handshake like TVM's,
then each request with what the test gives. It listens on 127.0.0.1 (a free port), every
socket with a bounded lifetime, and is stopped by its own handle."""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Callable

import pytest

LIFETIME_S = 60.0  # the longest the fake tracker waits on any socket


def frame(value) -> bytes:
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return struct.pack("<i", len(body)) + body


class FakeTracker:
    """Answers the tracker's handshake like TVM's, then each request with ``answer(conn)``."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        from tvm.rpc import base

        self.magic = base.RPC_TRACKER_MAGIC
        self.answer = answer
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(LIFETIME_S)
        self.address = ("127.0.0.1", self.server.getsockname()[1])
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:  # closed by close(), or its lifetime passed
                return
            with conn:
                conn.settimeout(LIFETIME_S)
                try:
                    conn.recv(4)
                    conn.sendall(struct.pack("<i", self.magic))
                    size = struct.unpack("<i", conn.recv(4))[0]
                    conn.recv(size)
                    self.answer(conn)
                except OSError:
                    pass

    def close(self) -> None:
        try:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept (Linux), else its lifetime ends it
        except OSError:
            pass
        self.server.close()
        self.thread.join(timeout=LIFETIME_S)


@pytest.fixture
def fake_tracker():
    """``fake_tracker(answer)`` starts one and gives its address; each is closed at the end."""
    started: list[FakeTracker] = []

    def start(answer: Callable[[socket.socket], None]) -> tuple[str, int]:
        started.append(FakeTracker(answer))
        return started[-1].address

    yield start
    for fake in started:
        fake.close()


def sends(data: bytes) -> Callable[[socket.socket], None]:
    return lambda conn: conn.sendall(data)
