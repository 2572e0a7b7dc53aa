"""Talking to a TVM RPC tracker (``python -m tvm.exec.rpc_tracker``) with bounded waits.

TVM's own ``rpc.connect_tracker`` retries a refused connection for 60 s and waits for a
device without limit; here the tracker's protocol (``tvm.rpc.base``: its magic number,
``TrackerCode`` and JSON framing, as ``TrackerSession`` speaks it) is spoken over a socket
with a timeout, so a tracker that is not running is an error at once and a device that
never frees up is an error after ``wait_s``.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any, Mapping

from pytest_tvmperf.values.remote_names import format_address

#: seconds to connect to the tracker and get its answer to a summary
CONNECT_TIMEOUT_S = 10.0


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


def offers(summary: Mapping[str, Any]) -> list[DeviceOffer]:
    """The tracker's ``summary()`` (``queue_info``, ``server_info``) as one offer per key."""
    addresses: dict[str, list[str]] = {}
    for server in summary.get("server_info", []):
        key = str(server.get("key", "")).split(":", 1)[-1]  # 'server:my-board' -> 'my-board'
        addresses.setdefault(key, []).append(":".join(map(str, server.get("addr", []))))
    queue = summary.get("queue_info", {})
    keys = sorted(set(queue) | set(addresses))
    return [DeviceOffer(k, len(addresses.get(k, [])), int(queue.get(k, {}).get("free", 0)),
                        int(queue.get(k, {}).get("pending", 0)), tuple(sorted(addresses.get(k, [])))) for k in keys]


def offer_lines(found: list[DeviceOffer]) -> list[str]:
    """A table of the offers, for ``tvmperf devices`` and error messages."""
    if not found:
        return ["(no device registered)"]
    width = max(len("key"), *(len(o.key) for o in found))
    lines = [f"{'key':<{width}}  servers  free  pending  addresses"]
    lines += [f"{o.key:<{width}}  {o.servers:<7d}  {o.free:<4d}  {o.pending:<7d}  {', '.join(o.addresses) or '-'}"
              for o in found]
    return lines


def unknown_key_message(key: str, tracker: tuple[str, int], found: list[DeviceOffer]) -> str:
    have = ", ".join(o.key for o in found if o.servers) or "none"
    return (f"the RPC tracker at {format_address(tracker)} has no device with key {key!r} (its keys: {have}); "
            f"start one with: python -m tvm.exec.rpc_server --tracker {format_address(tracker)} --key {key}, "
            f"or target a key it has (--tvmperf-targets=llvm@rpc:KEY)\n" + "\n".join(offer_lines(found)))


def _connect(tracker: tuple[str, int], timeout: float) -> socket.socket:
    from tvm.rpc import base

    where = format_address(tracker)
    try:
        sock = socket.create_connection(tracker, timeout=timeout)
    except OSError as exc:
        raise TrackerError(f"no RPC tracker answers at {where} ({exc.strerror or exc}): start one with "
                           f"python -m tvm.exec.rpc_tracker --host {tracker[0]} --port {tracker[1]} --port-end {tracker[1] + 1}, or fix "
                           f"--tvmperf-rpc (ini tvmperf_rpc)") from None
    try:
        sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
        magic = struct.unpack("<i", base.recvall(sock, 4))[0]
    except (OSError, AssertionError, struct.error) as exc:
        sock.close()
        raise TrackerError(f"{where} did not answer as an RPC tracker ({exc})") from None
    if magic != base.RPC_TRACKER_MAGIC:
        sock.close()
        raise TrackerError(f"{where} is not an RPC tracker (it answered with another protocol)")
    return sock


def _exchange(tracker: tuple[str, int], message: list, what: str, timeout: float = CONNECT_TIMEOUT_S,
              waiting: str = "") -> Any:
    """Send one message to the tracker and return the value of its SUCCESS answer
    (TrackerError otherwise). ``waiting``: the error when ``timeout`` passes first."""
    from tvm.rpc import base

    where = format_address(tracker)
    sock = _connect(tracker, CONNECT_TIMEOUT_S)
    try:
        sock.settimeout(timeout)
        base.sendjson(sock, message)
        value = base.recvjson(sock)
    except socket.timeout:
        raise TrackerError(waiting or f"the RPC tracker at {where} did not answer {what} within {timeout:.0f} s") from None
    except (OSError, ValueError) as exc:
        raise TrackerError(f"the RPC tracker at {where} failed {what} ({exc})") from None
    finally:
        sock.close()
    if value[0] != base.TrackerCode.SUCCESS:
        raise TrackerError(f"the RPC tracker at {where} answered {value!r} to {what}")
    return value[1]


def summary(tracker: tuple[str, int], timeout: float = CONNECT_TIMEOUT_S) -> dict:
    """The tracker's summary: its keys' queues and registered servers."""
    from tvm.rpc import base

    return _exchange(tracker, [base.TrackerCode.SUMMARY], "a summary request", timeout)


def request(tracker: tuple[str, int], key: str, wait_s: float) -> tuple[Any, tuple[str, int]]:
    """A session with one device of ``key`` (exclusively ours until closed) and its
    server's address; waits at most ``wait_s`` for one to be free (the tracker's queue
    decides who gets which device)."""
    from tvm import rpc
    from tvm.rpc import base

    found = offers(summary(tracker))
    if not any(o.key == key and o.servers for o in found):
        raise TrackerError(unknown_key_message(key, tracker, found))
    url, port, matchkey = _exchange(
        tracker, [base.TrackerCode.REQUEST, key, "", 1], f"a request for {key!r}", wait_s,
        waiting=(f"no device with key {key!r} became free at the RPC tracker {format_address(tracker)} "
                 f"within {wait_s:.0f} s (all busy)\n" + "\n".join(offer_lines(found))))
    try:
        session = rpc.connect(url, port, matchkey, session_timeout=0)
    except Exception as exc:  # TVM raises its own error types
        raise TrackerError(f"the device {key!r} the tracker gave ({url}:{port}) refused the session ({exc})") from None
    return session, (str(url), int(port))
