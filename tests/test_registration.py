"""The plugin's session machinery is registered only for a tvmperf run (issue 34), as
pytest's junitxml and stepwise register only when asked for: a run with no tvmperf test
and no tvmperf option leaves it out; a tvmperf test (its fixture or its marker) or a
tvmperf option brings it in."""

from __future__ import annotations

import pytest

from pytest_tvmperf.plugin import PLUGIN_NAME

#: a conftest that says, when the run ends, whether the session's plugin object was registered
REPORTS_REGISTRATION = f"""
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    config = session.config
    registered = config.pluginmanager.get_plugin({PLUGIN_NAME!r}) is not None
    from pytest_tvmperf.plugin import SESSION_KEY
    print("registered:", registered, "session:", config.stash.get(SESSION_KEY, None) is not None)
"""

PLAIN = "def test_plain():\n    assert 1 + 1 == 2\n"
WITH_FIXTURE = """
def test_uses_tvmperf(tvmperf):
    pass
"""
WITH_MARKER = """
import pytest

@pytest.mark.tvmperf(time="25%")
def test_marked():
    pass
"""


@pytest.fixture(autouse=True)
def no_tvmperf_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No option set through the environment (tests/conftest.py sets one for every test)."""
    from pytest_tvmperf.config.options import OPTIONS

    for opt in OPTIONS:
        if opt.env:
            monkeypatch.delenv(opt.env, raising=False)


def _registered(pytester: pytest.Pytester, *args: str) -> str:
    pytester.makeconftest(REPORTS_REGISTRATION)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", *args)
    lines = [line[line.index("registered:") :] for line in result.outlines if "registered:" in line]
    assert len(lines) == 1, result.outlines
    return lines[0]


def test_a_run_without_tvmperf_tests_or_options_registers_nothing(pytester: pytest.Pytester):
    pytester.makepyfile(test_plain=PLAIN)
    assert _registered(pytester) == "registered: False session: False"


def test_a_tvmperf_test_registers_the_plugin_when_it_is_collected(pytester: pytest.Pytester):
    pytester.makepyfile(test_plain=PLAIN, test_perf=WITH_FIXTURE)
    assert _registered(pytester, "--collect-only") == "registered: True session: True"


def test_a_test_with_only_the_marker_registers_it_too(pytester: pytest.Pytester):
    pytester.makepyfile(test_marked=WITH_MARKER)
    assert _registered(pytester) == "registered: True session: True"


def test_a_tvmperf_option_registers_it_at_configure(pytester: pytest.Pytester):
    pytester.makepyfile(test_plain=PLAIN)
    assert _registered(pytester, "--tvmperf-timing=off") == "registered: True session: True"


def test_a_tvmperf_ini_setting_registers_it_at_configure(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\ntvmperf_threshold = time=10%\n")
    pytester.makepyfile(test_plain=PLAIN)
    assert _registered(pytester) == "registered: True session: True"


def test_an_option_set_in_the_environment_registers_it_at_configure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TVMPERF_SAME_PROGRAM", "time")
    pytester.makepyfile(test_plain=PLAIN)
    assert _registered(pytester) == "registered: True session: True"


def test_a_bad_option_is_still_a_usage_error_in_a_run_without_tvmperf_tests(pytester: pytest.Pytester):
    pytester.makepyfile(test_plain=PLAIN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--tvmperf-repeat=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


TWO_TESTS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))

def test_plain():
    assert True
"""


def test_a_run_registered_at_its_first_tvmperf_test_records_and_gates_as_before(project):
    """No option, no ini, no environment: the session is made while collecting, and the
    run says what a run registered at configure says (no baseline; recorded; passed)."""
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    first = project.run()
    first.assert_outcomes(failed=1, passed=1)
    first.stdout.fnmatch_lines(["*no baseline for test_a[[]llvm-prim[]]*", "*tvmperf summary*"])
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    gated = project.run()
    gated.assert_outcomes(passed=2)
    gated.stdout.fnmatch_lines(["*tvmperf summary*"])
