"""Talking to a TVM RPC tracker (``python -m tvm.exec.rpc_tracker``) with bounded waits.

TVM's ``rpc.connect_tracker`` retries a refused connection for 60 s and waits for a
device without limit; here the tracker's protocol (``tvm.rpc.base``'s magic number,
``TrackerCode`` and JSON framing) is spoken over a socket with a timeout: a tracker not
running is an error at once, a device that never frees up one after ``wait_s``.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable

from pytest_tvmperf.farm.connection import DeviceHung, deadline
from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.values.remote_names import format_address

#: seconds to connect to the tracker and get its answer to a summary (each a deadline)
CONNECT_TIMEOUT_S = 10.0
#: the largest answer frame read from a tracker (a summary of many servers is kilobytes)
MAX_FRAME_BYTES = 16 << 20
#: the clock every deadline here is on (a test gives its own)
clock: Callable[[], float] = time.monotonic


class TrackerError(Exception):
    """The tracker cannot be reached, or cannot give the device asked for."""


@dataclass(frozen=True)
class DeviceOffer:
    """What the tracker has under one key: servers registered, free ones, requests queued."""

    key: str
    servers: int
    free: int
    pending: int
    addresses: tuple[str, ...] = ()


def offers(summary: Any, tracker: tuple[str, int] | None = None) -> list[DeviceOffer]:
    """The tracker's ``summary()`` as one offer per key; untrusted: a field of the wrong type
    is a TrackerError naming the tracker and the field."""
    where = f"the RPC tracker at {format_address(tracker)}" if tracker is not None else "the RPC tracker"

    def bad(field: str, value: Any, expected: str) -> TrackerError:
        shown = json.dumps(value, default=repr)[:80] if not isinstance(value, str) else repr(value[:80])
        return TrackerError(
            f"{where} sent a summary that is not one (field {field}: expected {expected}, got "
            f"{shown}); is it a TVM RPC tracker (python -m tvm.exec.rpc_tracker) of a "
            f"compatible version? Fix --tvmperf-rpc (ini tvmperf_rpc) or restart the tracker"
        )

    if not isinstance(summary, dict):
        raise bad("(the summary)", summary, "an object")
    servers, queue = summary.get("server_info", []), summary.get("queue_info", {})
    if not isinstance(servers, list):
        raise bad("server_info", servers, "a list")
    if not isinstance(queue, dict):
        raise bad("queue_info", queue, "an object")
    addresses: dict[str, list[str]] = {}
    for number, server in enumerate(servers):
        if not isinstance(server, dict):
            raise bad(f"server_info[{number}]", server, "an object")
        key, addr = server.get("key", ""), server.get("addr", [])
        if not isinstance(key, str):
            raise bad(f"server_info[{number}].key", key, "a string")
        if not isinstance(addr, list) or not all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in addr):
            raise bad(f"server_info[{number}].addr", addr, "a list of host and port")
        addresses.setdefault(key.split(":", 1)[-1], []).append(":".join(map(str, addr)))  # 'server:my-board'
    counts: dict[str, tuple[int, int]] = {}
    for key, info in queue.items():
        if not isinstance(info, dict):
            raise bad(f"queue_info.{key}", info, "an object")
        for name in ("free", "pending"):
            value = info.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 31:
                raise bad(f"queue_info.{key}.{name}", value, "a count")
        counts[key] = (info.get("free", 0), info.get("pending", 0))
    return [
        DeviceOffer(k, len(addresses.get(k, [])), *counts.get(k, (0, 0)), tuple(sorted(addresses.get(k, []))))
        for k in sorted(set(counts) | set(addresses))
    ]


def offer_lines(found: list[DeviceOffer]) -> list[str]:
    """A table of the offers, for ``tvmperf devices`` and error messages."""
    if not found:
        return ["(no device registered)"]
    width = max(len("key"), *(len(o.key) for o in found))
    lines = [f"{'key':<{width}}  servers  free  pending  addresses"]
    lines += [
        f"{o.key:<{width}}  {o.servers:<7d}  {o.free:<4d}  {o.pending:<7d}  {', '.join(o.addresses) or '-'}"
        for o in found
    ]
    return [safe(line) for line in lines]  # keys and addresses are the tracker's


def unknown_key_message(key: str, tracker: tuple[str, int], found: list[DeviceOffer]) -> str:
    have = safe(", ".join(o.key for o in found if o.servers) or "none")
    return (
        f"the RPC tracker at {format_address(tracker)} has no device with key {key!r} (its keys: {have}); "
        f"start one with: python -m tvm.exec.rpc_server --tracker {format_address(tracker)} --key {key}, "
        f"or target a key it has (--tvmperf-targets=llvm@rpc:KEY)\n" + "\n".join(offer_lines(found))
    )


def _recv_exact(sock: socket.socket, size: int, until: float) -> bytes:
    """``size`` bytes from ``sock`` by the deadline ``until`` (on :data:`clock`; a byte now
    and then cannot stretch it): socket.timeout past it, ConnectionError if the peer closes."""
    data = bytearray()
    while len(data) < size:
        left = until - clock()
        if left <= 0:
            raise socket.timeout("deadline passed")
        sock.settimeout(left if left < 1e6 else None)
        chunk = sock.recv(min(size - len(data), 1 << 16))
        if not chunk:
            raise ConnectionError(f"the connection closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def _connect(tracker: tuple[str, int], timeout: float) -> socket.socket:
    from tvm.rpc import base

    where = format_address(tracker)
    until = clock() + timeout
    try:
        sock = socket.create_connection(tracker, timeout=timeout)
    except OSError as exc:
        raise TrackerError(
            f"no RPC tracker answers at {where} ({exc.strerror or exc}): start one with "
            f"python -m tvm.exec.rpc_tracker --host {tracker[0]} --port {tracker[1]} --port-end {tracker[1] + 1}, or fix "
            f"--tvmperf-rpc (ini tvmperf_rpc)"
        ) from None
    try:
        sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
        magic = struct.unpack("<i", _recv_exact(sock, 4, until))[0]
    except socket.timeout:
        sock.close()
        raise TrackerError(f"{where} did not answer as an RPC tracker within {timeout:g} s") from None
    except (OSError, struct.error) as exc:
        sock.close()
        raise TrackerError(f"{where} did not answer as an RPC tracker ({exc})") from None
    if magic != base.RPC_TRACKER_MAGIC:
        sock.close()
        raise TrackerError(f"{where} is not an RPC tracker (it answered with another protocol)")
    return sock


def _answer(sock: socket.socket, until: float, where: str, what: str) -> Any:
    """The answer frame (``<i`` length, JSON ``[code, value]``) by the deadline, else TrackerError."""
    size = struct.unpack("<i", _recv_exact(sock, 4, until))[0]
    if not 0 < size <= MAX_FRAME_BYTES:
        raise TrackerError(
            f"the RPC tracker at {where} answered {what} with a frame of {size} bytes "
            f"(at most {MAX_FRAME_BYTES}); is it a TVM RPC tracker?"
        )
    text = _recv_exact(sock, size, until)
    try:
        value = json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        problem = "nested too deeply" if isinstance(exc, RecursionError) else f"not JSON: {exc}"
        raise TrackerError(
            f"the RPC tracker at {where} answered {what} with a frame that is {problem}; is it a TVM RPC tracker?"
        ) from None
    if not (isinstance(value, list) and len(value) == 2 and type(value[0]) is int):  # (JSON: int or bool)
        big = isinstance(value, (list, dict)) and len(value) >= 20
        shown = type(value).__name__ if big else json.dumps(value)[:80]
        raise TrackerError(
            f"the RPC tracker at {where} answered {what} with {shown}, not [code, value]; "
            f"is it a TVM RPC tracker (python -m tvm.exec.rpc_tracker) of a compatible version?"
        )
    return value


def _exchange(tracker: tuple[str, int], message: list, what: str, timeout=CONNECT_TIMEOUT_S, waiting="") -> Any:
    """Send one message to the tracker; the value of its SUCCESS answer (else TrackerError).
    ``timeout`` bounds the whole answer; ``waiting``: the error when it passes first."""
    from tvm.rpc import base

    where = format_address(tracker)
    sock = _connect(tracker, CONNECT_TIMEOUT_S)
    try:
        until = clock() + timeout
        sock.settimeout(min(max(until - clock(), 1e-3), 1e6))
        base.sendjson(sock, message)
        value = _answer(sock, until, where, what)
    except socket.timeout:
        raise TrackerError(
            waiting or f"the RPC tracker at {where} did not answer {what} within {timeout:.0f} s"
        ) from None
    except (OSError, ValueError, struct.error) as exc:
        raise TrackerError(f"the RPC tracker at {where} failed {what} ({exc})") from None
    finally:
        sock.close()
    if value[0] != base.TrackerCode.SUCCESS:
        raise TrackerError(f"the RPC tracker at {where} answered {json.dumps(value)[:200]} to {what}")
    return value[1]


def summary(tracker: tuple[str, int], timeout: float = CONNECT_TIMEOUT_S) -> dict:
    """The tracker's summary: its keys' queues and registered servers."""
    from tvm.rpc import base

    return _exchange(tracker, [base.TrackerCode.SUMMARY], "a summary request", timeout)


def request(tracker: tuple[str, int], key: str, wait_s: float) -> tuple[Any, tuple[str, int]]:
    """A session with one device of ``key`` (ours alone until closed) and its server's
    address; waits at most ``wait_s`` for one to be free (the tracker's queue decides)."""
    from tvm import rpc
    from tvm.rpc import base

    found = offers(summary(tracker), tracker)
    if not any(o.key == key and o.servers for o in found):
        raise TrackerError(unknown_key_message(key, tracker, found))
    waiting = (
        f"no device with key {key!r} became free at the RPC tracker {format_address(tracker)} "
        f"within {wait_s:.0f} s (all busy)\n" + "\n".join(offer_lines(found))
    )
    given = _exchange(tracker, [base.TrackerCode.REQUEST, key, "", 1], f"a request for {key!r}", wait_s, waiting)
    strings = isinstance(given, list) and len(given) == 3 and isinstance(given[0], str) and isinstance(given[2], str)
    if not (strings and isinstance(given[1], int) and not isinstance(given[1], bool) and 0 < given[1] < 65536):
        raise TrackerError(
            f"the RPC tracker at {format_address(tracker)} answered a request for {key!r} with "
            f"{safe(json.dumps(given)[:200])}, not [host, port, key]; is it a TVM RPC tracker?"
        )
    url, port, matchkey = given
    try:
        with deadline(CONNECT_TIMEOUT_S, f"opening a session with the device {key!r}"):
            session = rpc.connect(url, port, matchkey, session_timeout=0)
    except DeviceHung:
        raise TrackerError(
            f"the device {key!r} the tracker gave ({safe(url)}:{port}) did not open a session within "
            f"{CONNECT_TIMEOUT_S:g} s"
        ) from None
    except Exception as exc:  # TVM raises its own error types
        raise TrackerError(
            f"the device {key!r} the tracker gave ({safe(url)}:{port}) refused the session ({safe(exc)})"
        ) from None
    return session, (url, port)
