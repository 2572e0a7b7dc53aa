"""Options and markers as a user meets them: closest wins (command line > marker > ini >
default), and a test's marker is parsed once, at collection."""

from __future__ import annotations

import pytest

from pytest_tvmperf.config.markers import MarkerSettings

MARKED = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"], time="50%")
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


def test_marker_beats_ini_and_command_line_beats_marker(project):
    """The ini's loose limit no longer hides a test's tight one (before, the ini won)."""
    project.pytester.makeini("[pytest]\ntvmperf_threshold = time=400%\n")
    project.pytester.makepyfile(test_perf=MARKED)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "3")
    result = project.run()
    result.assert_outcomes(failed=1)  # the marker's +50%, not the ini's +400%
    result.stdout.fnmatch_lines(["*time 1.01 ms -> 3.03 ms*limit +50%*"])
    project.run("--tvmperf-threshold=time=off").assert_outcomes(passed=1)  # the command line beats the marker


def test_ini_fills_in_what_the_marker_leaves_unset(project):
    """Per metric: a marker that sets only instructions keeps the ini's time limit."""
    project.pytester.makeini("[pytest]\ntvmperf_threshold = time=400%\n")
    project.pytester.makepyfile(test_perf=MARKED.replace('time="50%"', "instructions=0"))
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "3")
    project.run().assert_outcomes(passed=1)


PARAM_MARKER = """
import pytest

@pytest.mark.tvmperf(executors=["prim"])
@pytest.mark.parametrize("size", [pytest.param(8, marks=pytest.mark.tvmperf(vs_torch="fast")), 16])
def test_x(tvmperf, size):
    raise AssertionError("never runs: the marker is checked at collection")
"""


def test_bad_marker_of_a_parameter_is_an_error_at_collection(project):
    project.pytester.makepyfile(test_perf=PARAM_MARKER)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    combined = "\n".join(result.stdout.lines + result.stderr.lines)
    assert "test_perf.py::test_x[llvm-prim-8]: @pytest.mark.tvmperf: bad vs_torch='fast'" in combined, combined
    assert "never runs" not in combined


def test_bad_marker_argument_is_a_usage_error_with_no_traceback(project):
    """issue 26: ``time="5"`` was a collection error (exit 2) under ~20 lines of pluggy traceback."""
    project.pytester.makepyfile(test_perf=MARKED.replace('time="50%"', 'time="5"'), test_other=PARAM_MARKER)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    combined = "\n".join(result.stdout.lines + result.stderr.lines)
    assert "test_perf.py::test_a: @pytest.mark.tvmperf: bad threshold time='5': write a percentage" in combined, (
        combined
    )
    assert "test_other.py::test_x[llvm-prim-8]: @pytest.mark.tvmperf: bad vs_torch='fast'" in combined, combined
    for noise in ("Traceback", "pluggy/", "_pytest/", "ERROR collecting", "never runs"):
        assert noise not in combined, combined


def test_bad_marker_argument_under_xdist_is_its_message_alone(project):
    project.pytester.makepyfile(test_perf=MARKED.replace('time="50%"', 'time="5"'))
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert result.ret != pytest.ExitCode.OK
    combined = "\n".join(result.stdout.lines + result.stderr.lines)
    assert "test_perf.py::test_a: @pytest.mark.tvmperf: bad threshold time='5'" in combined, combined
    assert "Traceback" not in combined and "INTERNALERROR" not in combined, combined


UNCOMPILED = """
import pytest

pytestmark = pytest.mark.tvmperf(time="30%")

@pytest.mark.tvmperf(executors=["prim", "vm-bytecode"], vs_numpy=2)
def test_a(tvmperf):
    pass
"""


def test_marker_is_parsed_once_per_node(project, monkeypatch):
    """Once for the definition (to parametrize it) and once per test item (at collection);
    the fixture and the run-wide counting reuse the item's."""
    parsed: list[dict] = []
    original = MarkerSettings.from_kwargs.__func__

    def counting(cls, kwargs):
        parsed.append(dict(kwargs))
        return original(cls, kwargs)

    monkeypatch.setattr(MarkerSettings, "from_kwargs", classmethod(counting))
    project.pytester.makepyfile(test_perf=UNCOMPILED)
    project.run().assert_outcomes(passed=2)
    assert len(parsed) == 3  # test_a, test_a[llvm-vm-bytecode], test_a[llvm-prim]
    assert all(kwargs["time"] == "30%" and kwargs["vs_numpy"] == 2 for kwargs in parsed)
