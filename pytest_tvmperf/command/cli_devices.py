"""``tvmperf devices --rpc HOST:PORT``: what a TVM RPC tracker offers, one row per key
(the devices a ``--tvmperf-targets=llvm@rpc:KEY`` run can time on)."""

from __future__ import annotations

import argparse

from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.values.remote_names import format_address, parse_rpc_address
from pytest_tvmperf.command.cli_match import CliError


def cmd_devices(args: argparse.Namespace) -> int:
    from pytest_tvmperf.farm import tracker

    try:
        address = parse_rpc_address(args.rpc)
        found = tracker.offers(tracker.summary(address), address)
    except (ValueError, tracker.TrackerError) as exc:
        raise CliError(str(exc)) from None
    print(f"RPC tracker {format_address(address)}")
    for line in tracker.offer_lines(found):
        print(line)
    if found:
        rpc, key = format_address(address), found[0].key
        print(safe(f"time on a key with: pytest --tvmperf-rpc={rpc} --tvmperf-targets=llvm@rpc:{key}"))
    return 0


def add_devices_command(sub) -> None:
    devices = sub.add_parser(
        "devices",
        help="list the devices a TVM RPC tracker offers, by key",
        description="List the keys a TVM RPC tracker has, with their servers, free devices and "
        "queued requests (what python -m tvm.exec.query_rpc_tracker shows).",
    )
    devices.add_argument("--rpc", required=True, metavar="HOST:PORT", help="the tracker's address")
    devices.set_defaults(func=cmd_devices)
