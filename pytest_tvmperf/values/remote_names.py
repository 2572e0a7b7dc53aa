"""Names of remote targets and tracker addresses (pure). A remote device is a target named
``BASE@rpc:KEY`` (``llvm@rpc:my-board``): compiled on the host for the device's CPU, timed
on a device the TVM RPC tracker (``--tvmperf-rpc=HOST:PORT``) hands out under ``KEY``; its
test ids read ``rpc:KEY-BASE-EXECUTOR`` (``test_mlp[rpc:my-board-llvm-vm-bytecode]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: base targets a remote device can be: the device's CPU through LLVM
REMOTE_BASES: tuple[str, ...] = ("llvm",)
SEPARATOR = "@rpc:"
_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class RemoteName:
    """``llvm@rpc:my-board`` -> base ``llvm``, key ``my-board``."""

    base: str
    key: str

    @property
    def shown(self) -> str:
        """How a test id shows it: ``rpc:my-board-llvm``."""
        return f"rpc:{self.key}-{self.base}"


def split_remote(name: str) -> RemoteName | None:
    """The base and key of a remote target name, None for a local one; a malformed remote
    name raises ValueError saying how to write it."""
    if SEPARATOR not in name:
        return None
    base, _, key = name.partition(SEPARATOR)
    if base not in REMOTE_BASES:
        raise ValueError(
            f"remote target {name!r}: only {', '.join(REMOTE_BASES)} can run on an RPC device "
            f"(write e.g. llvm{SEPARATOR}my-board)"
        )
    if not _KEY.match(key):
        raise ValueError(
            f"remote target {name!r}: the device key must be letters, digits, '.', '_' or '-' "
            f"(the --key of the RPC servers), e.g. llvm{SEPARATOR}my-board"
        )
    return RemoteName(base, key)


def is_remote(name: str) -> bool:
    """Whether a target name is a remote device's (``BASE@rpc:KEY``), without checking it."""
    return SEPARATOR in name


def base_of(name: str) -> str:
    """The base of a target name: ``llvm`` for ``llvm@rpc:my-board``, the name itself for a local one."""
    return name.partition(SEPARATOR)[0]


def shown_target(name: str) -> str:
    """A target's part of a test id: the name itself, ``rpc:KEY-BASE`` for a remote one."""
    return remote.shown if (remote := split_remote(name)) else name


def parse_rpc_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` of an RPC tracker."""
    host, sep, port = str(text).strip().rpartition(":")
    if ":" in host or "[" in host or "]" in host:
        port_shown = port if port.isascii() and port.isdigit() else "9190"
        raise ValueError(
            f"bad RPC tracker address {text!r}: an IPv6 address is not supported (TVM's tracker hands "
            f"out its servers as HOST:PORT); give the tracker's host name or an IPv4 address, e.g. "
            f"--tvmperf-rpc=127.0.0.1:{port_shown} with the tracker started as python -m "
            f"tvm.exec.rpc_tracker --host 127.0.0.1 --port {port_shown}"
        )
    if not sep or not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"bad RPC tracker address {text!r}: write HOST:PORT, e.g. 127.0.0.1:9190 "
            "(where python -m tvm.exec.rpc_tracker listens)"
        )
    return host, int(port)


def format_address(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"


def local_test_id(test_id: str) -> str:
    """The test id with a remote device's part made local (``test_mlp[rpc:k1-llvm-prim]`` ->
    ``test_mlp[llvm-prim]``): a test that can record locally can record on any device key,
    so its remote entries are in use too (``--tvmperf-prune`` keeps them)."""
    bases = "|".join(re.escape(b) for b in REMOTE_BASES)
    return re.sub(rf"\[rpc:[A-Za-z0-9._-]+-({bases})-", r"[\1-", test_id, count=1)
