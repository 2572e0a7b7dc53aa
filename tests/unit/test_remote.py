"""Remote targets' pure parts: names, test ids, tracker addresses, the tracker's offers,
and the device fingerprint that decides which boards share time baselines."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tvmperf.farm.remote import RemoteDevice, check_farm
from pytest_tvmperf.values.remote_names import RemoteName, parse_rpc_address, shown_target, split_remote
from pytest_tvmperf.farm.tracker import offer_lines, offers, unknown_key_message
from pytest_tvmperf.combos import Combo
from pytest_tvmperf.config.parsing import parse_targets


def test_remote_target_names_and_test_ids():
    assert split_remote("llvm@rpc:my-board") == RemoteName("llvm", "my-board")
    assert split_remote("llvm") is None
    assert shown_target("llvm@rpc:my-board") == "rpc:my-board-llvm"
    assert Combo("llvm@rpc:my-board", "vm-bytecode").id == "rpc:my-board-llvm-vm-bytecode"
    assert Combo("llvm", "prim").id == "llvm-prim"
    with pytest.raises(ValueError, match="only llvm can run on an RPC device"):
        split_remote("cuda@rpc:gpu")
    with pytest.raises(ValueError, match="device key must be"):
        split_remote("llvm@rpc:bad key")


def test_parse_targets_keeps_remote_names_in_order():
    assert parse_targets("llvm@rpc:a,llvm,llvm@rpc:b") == ("llvm@rpc:a", "llvm", "llvm@rpc:b")
    assert parse_targets(["llvm@rpc:a"]) == ("llvm@rpc:a",)
    with pytest.raises(ValueError, match="unknown target 'arm'"):
        parse_targets("arm,llvm@rpc:a")


@pytest.mark.parametrize("text", ["nohost", ":9190", "host:", "host:99999", "host:port"])
def test_bad_tracker_address_says_how_to_write_it(text):
    with pytest.raises(ValueError, match="write HOST:PORT"):
        parse_rpc_address(text)


def test_tracker_address():
    assert parse_rpc_address(" 10.0.0.2:9190 ") == ("10.0.0.2", 9190)


SUMMARY = {
    "queue_info": {"board": {"free": 1, "pending": 2}, "gone": {"free": 0, "pending": 0}},
    "server_info": [
        {"key": "server:board", "addr": ["127.0.0.1", 9001]},
        {"key": "server:board", "addr": ["127.0.0.1", 9000]},
    ],
}


def test_offers_from_a_tracker_summary():
    found = offers(SUMMARY)
    assert [(o.key, o.servers, o.free, o.pending) for o in found] == [("board", 2, 1, 2), ("gone", 0, 0, 0)]
    assert found[0].addresses == ("127.0.0.1:9000", "127.0.0.1:9001")
    lines = offer_lines(found)
    assert lines[0].split() == ["key", "servers", "free", "pending", "addresses"]
    assert lines[1].split()[:4] == ["board", "2", "1", "2"]
    assert offer_lines([]) == ["(no device registered)"]


def test_unknown_key_message_lists_only_keys_with_servers():
    message = unknown_key_message("nope", ("127.0.0.1", 9190), offers(SUMMARY))
    assert "has no device with key 'nope' (its keys: board)" in message
    assert "python -m tvm.exec.rpc_server --tracker 127.0.0.1:9190 --key nope" in message


def test_remote_target_without_tracker_address():
    assert "--tvmperf-rpc=HOST:PORT" in check_farm(None, ["board"])


def _device(key: str, cpu: str = "cortex-a72", server: int = 9000) -> RemoteDevice:
    return RemoteDevice(
        RemoteName("llvm", key),
        ("127.0.0.1", 9190),
        ("10.0.0.1", server),
        session=None,
        cpu=cpu,
        triple="aarch64-linux-gnu",
        threads=4,
        llvm="17",
        scratch=Path("/nonexistent"),
    )


def test_identical_boards_share_a_fingerprint_and_other_boards_do_not():
    target = {"kind": "llvm", "mcpu": "cortex-a72", "mtriple": "aarch64-linux-gnu", "num-cores": 4}
    one, twin = _device("rpi4", server=9000).machine(target), _device("rpi4", server=9001).machine(target)
    assert one.fingerprint == twin.fingerprint  # another server of the same key and board
    assert "via rpc:rpi4" in one.cpu_model
    assert _device("rpi4-b").machine(target).fingerprint != one.fingerprint  # another key
    assert _device("rpi4", cpu="cortex-a53").machine(target).fingerprint != one.fingerprint  # another CPU


def test_device_target_is_built_for_its_cpu_and_triple():
    config = _device("rpi4").target_config()
    assert config == {"kind": "llvm", "mcpu": "cortex-a72", "num-cores": 4, "mtriple": "aarch64-linux-gnu"}
    assert not _device("rpi4").runs_host_code  # another triple: executed calls are not counted on the host


# --- a device that hangs: the call deadline and the connection shut --------------------


def test_a_blocked_read_ends_at_the_deadline_with_device_hung():
    import socket

    from pytest_tvmperf.farm.connection import DeviceHung, deadline

    ours, silent = socket.socketpair()  # nothing is ever written to ``ours``
    with ours, silent, pytest.raises(DeviceHung, match=r"no answer within 0.2 s \(--tvmperf-rpc-timeout\)"):
        with deadline(0.2, "reading"):
            ours.recv(1)


def test_an_alarm_already_set_is_kept_and_its_handler_restored():
    import signal

    from pytest_tvmperf.farm.connection import deadline

    def theirs(signum, frame):  # e.g. pytest-timeout's
        raise AssertionError("the earlier alarm fired")

    previous = signal.signal(signal.SIGALRM, theirs)
    signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        with deadline(5.0, "a quick call"):
            pass
        pending, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 90.0 < pending <= 100.0 and signal.getsignal(signal.SIGALRM) is theirs
        with deadline(500.0, "a call the earlier alarm bounds"):  # later than theirs: left to theirs
            assert signal.getsignal(signal.SIGALRM) is theirs
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_connections_to_a_hung_peer_are_shut_and_others_left_alone():
    import socket

    from pytest_tvmperf.farm.connection import shut_connections_to

    with socket.create_server(("127.0.0.1", 0)) as server, socket.create_server(("127.0.0.1", 0)) as other:
        hung = socket.create_connection(server.getsockname())
        fine = socket.create_connection(other.getsockname())
        accepted, _ = server.accept()
        with hung, fine, accepted:
            assert shut_connections_to(server.getsockname()) == 1
            assert hung.recv(1) == b""  # a read on it ends at once instead of waiting
            fine.sendall(b"x")  # still open
            assert shut_connections_to(("127.0.0.1", 1)) == 0


def test_a_remote_test_id_made_local_for_prune():
    from pytest_tvmperf.values.remote_names import local_test_id

    assert local_test_id("test_mlp[rpc:my-board-llvm-vm-bytecode-bound]") == "test_mlp[llvm-vm-bytecode-bound]"
    assert local_test_id("test_mlp[llvm-prim]") == "test_mlp[llvm-prim]"
    assert local_test_id("test_rpc_thing[llvm-prim]") == "test_rpc_thing[llvm-prim]"
