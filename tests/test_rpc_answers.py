"""A run against a tracker that answers what no TVM RPC tracker sends, or given an address
it cannot use, stops at its start with a usage error naming the tracker (or the setting)
and what to do: never an INTERNALERROR."""

from __future__ import annotations

import pytest
from fake_tracker import fake_tracker, frame, sends  # noqa: F401  (fake_tracker: a fixture)

REMOTE_TEST = """
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] * 2.0, name="B")
    tvmperf.check(Workload(name="x2", program=te.create_prim_func([a, b]),
                           make_inputs=lambda rng, dims: [np.ones(8, "float32")], reference=lambda x: x * 2))
"""


def _no_crash(result: pytest.RunResult) -> str:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize(
    "answer, said",
    [
        (frame({"queue_info": {}}), 'answered a summary request with {"queue_info": {}}, not [code, value]'),
        (frame(b"[" * 200_000 + b"]" * 200_000), "answered a summary request with a frame that is nested too deeply"),
        (
            frame([0, {"queue_info": {"k": {"free": "x"}}, "server_info": []}]),
            "sent a summary that is not one (field queue_info.k.free: expected a count, got 'x')",
        ),
        (
            frame([0, {"queue_info": {}, "server_info": 5}]),
            "sent a summary that is not one (field server_info: expected a list",
        ),
    ],
)
def test_a_tracker_answering_what_no_tracker_sends_is_a_usage_error_naming_it(pytester, fake_tracker, answer, said):
    host, port = fake_tracker(sends(answer))
    pytester.makepyfile(test_perf=REMOTE_TEST)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--tvmperf-rpc={host}:{port}", "--tvmperf-targets=llvm@rpc:k"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"the RPC tracker at {host}:{port} {said}" in _no_crash(result)


@pytest.mark.parametrize("address", ["[::1]:9190", "::1:9190", "[fe80::1%eth0]:9190"])
def test_an_ipv6_tracker_address_is_a_usage_error_with_advice_that_works(pytester, address):
    pytester.makepyfile(test_perf=REMOTE_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--tvmperf-rpc={address}", "--tvmperf-targets=llvm@rpc:k")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = _no_crash(result)
    assert f"bad RPC tracker address {address!r}: an IPv6 address is not supported" in text
    assert (
        "give the tracker's host name or an IPv4 address, e.g. --tvmperf-rpc=127.0.0.1:9190 with the tracker "
        "started as python -m tvm.exec.rpc_tracker --host 127.0.0.1 --port 9190"
    ) in text


@pytest.mark.parametrize("variable", ["TVMPERF_MAX_IR_MB", "TVMPERF_CACHE_MAX_MB"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-inf", "0", "lots"])
def test_a_size_variable_that_is_not_a_positive_number_is_a_usage_error_naming_it(project, variable, value):
    project.pytester.makepyfile(test_perf=REMOTE_TEST)
    project.set_env(variable, value)
    result = project.run("--tvmperf-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"pytest-tvmperf: environment variable {variable}={value!r}: expected a positive number of MB up to {2**30}"
    ) in _no_crash(result)


def test_a_large_size_variable_is_accepted(project):
    project.pytester.makepyfile(test_perf=REMOTE_TEST)
    project.set_env("TVMPERF_MAX_IR_MB", "1e6")
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.run().assert_outcomes(passed=1)  # the stored IR is read under the cap
