"""pytest-xdist on any CPU: the worker's hand-over holds builtin types only, and a
worker whose results are lost fails the run (never a silent exit 0)."""

from __future__ import annotations

import json

import pytest

from pytest_tvmperf.report.workers import hand_over, received
from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.builtin_types import PayloadError, plain
from test_gate import TWO_TESTS

# On Intel Xeons LLVM names the host CPU with a name that TVM hands back as a
# tvm_ffi.core.String (short names such as AMD's "znver4" come back as plain str).
# "x86-64-v2" is one such name that every x86-64 CPU of the last 15 years can run.
INTEL_LIKE_CPU = """
import tvm
tvm.target.codegen.llvm_get_system_cpu = lambda: "x86-64-v2"
"""


def test_xdist_with_a_cpu_name_that_tvm_returns_as_an_ffi_string(project):
    pytest.importorskip("xdist")
    project.pytester.makeconftest(project.pytester.path.joinpath("conftest.py").read_text() + INTEL_LIKE_CPU)
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    json_path = project.pytester.path / "results.json"
    result = project.run("-n", "2", "--tvmperf-update", f"--tvmperf-json={json_path}")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*tvmperf summary*", "*test_a[[]llvm-prim[]]*recorded*"])
    assert "can't serialize" not in result.stdout.str()
    tests = json.loads(json_path.read_text())["tests"]
    assert sorted(t["test_id"] for t in tests) == ["test_a[llvm-prim]", "test_b[llvm-prim]"]
    assert all("x86-64-v2" in json.dumps(t) for t in tests), tests[0]


LOSE_THE_PAYLOAD = """

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out.pop("tvmperf", None)  # as if the worker went down before handing it over
"""


def test_a_worker_whose_results_are_lost_fails_the_run(project):
    pytest.importorskip("xdist")
    project.pytester.makeconftest(project.pytester.path.joinpath("conftest.py").read_text() + LOSE_THE_PAYLOAD)
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    result = project.run("-n", "2", "--tvmperf-update")
    result.assert_outcomes(passed=2)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*tvmperf: xdist worker gw? went down before handing over its tvmperf results*"])


def test_plain_rebuilds_ffi_strings_and_names_what_cannot_be_sent():
    from tvm_ffi.core import String

    got = plain({"target": {"mcpu": String("sapphirerapids"), "keys": (String("cpu"),)}, "n": True})
    assert type(got["target"]["mcpu"]) is str and type(got["target"]["keys"][0]) is str
    assert got["n"] is True
    from pytest_tvmperf.result.entry import ResultEntry

    report = RunReport(worker_entries=[ResultEntry("t.py::a", "pass", note=object())])
    with pytest.raises(PayloadError, match=r"payload\.results\[0\]\.note holds a builtins\.object"):
        report.to_payload()
    assert hand_over(report) == {"error": f"its results could not be sent ({report_error(report)})"}


def report_error(report: RunReport) -> str:
    try:
        report.to_payload()
    except PayloadError as exc:
        return str(exc)
    raise AssertionError("no error")


def test_received_reports_a_payload_that_names_its_error():
    class Node:
        gateway = type("G", (), {"id": "gw1"})()
        workeroutput = {"tvmperf": {"error": "its results could not be sent (boom)"}}

    payload, lost = received(Node(), None)
    assert payload is None and "gw1" in lost and "boom" in lost
    Node.workeroutput = {"tvmperf": {"results": [], "not_measured": []}}
    assert received(Node(), None) == ({"results": [], "not_measured": []}, None)
