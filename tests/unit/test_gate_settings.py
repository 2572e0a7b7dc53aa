"""config/gate_settings.py: the tvmperf settings of a change that differ from the ref's."""

from __future__ import annotations

from pytest_tvmperf.config.gate_settings import Difference, differences, ini_values
from pytest_tvmperf.config.options import OPTIONS

KEYS = [(o.dest, o.parse) for o in OPTIONS if o.ini]


def test_each_form_of_pytest_configuration_is_read():
    assert ini_values("pytest.ini", "[pytest]\ntvmperf_artifacts = off\n") == {"tvmperf_artifacts": "off"}
    assert ini_values("pytest.ini", "") == {}  # a pytest.ini is pytest's configuration even when empty
    assert ini_values("tox.ini", "[tox]\n") is None
    assert ini_values("setup.cfg", "[tool:pytest]\ntvmperf_timing = off\n") == {"tvmperf_timing": "off"}
    assert ini_values(
        "pyproject.toml", '[tool.pytest.ini_options]\ntvmperf_threshold = "time=50%"\naddopts = ["-p", "x"]\n'
    ) == {"tvmperf_threshold": "time=50%", "addopts": "-p x"}
    assert ini_values("pyproject.toml", "[project]\nname = 'x'\n") is None


def test_every_setting_that_differs_is_named_and_only_those_that_can_loosen():
    here = {
        "tvmperf_artifacts": "off",
        "tvmperf_threshold": "time = 5%",
        "tvmperf_layers": "on",
        "tvmperf_lock_timeout": "5",
        "addopts": "--tvmperf-timing=off",
    }
    there = {"tvmperf_threshold": "time=5%"}
    assert differences(here, there, KEYS) == [
        Difference("tvmperf_artifacts", "off", ""),
        Difference("addopts", "--tvmperf-timing=off", ""),
    ]
    # issue 66: whatever addopts holds (a --deselect hides a regressed test), and the keys that decide
    # which tests run at all
    assert differences({"addopts": "--deselect test_perf.py::test_b"}, {}, KEYS) == [
        Difference("addopts", "--deselect test_perf.py::test_b", "")
    ]
    assert differences({"python_functions": "check_*", "testpaths": "tests"}, {"testpaths": "tests"}, KEYS) == [
        Difference("python_functions", "check_*", "")
    ]
    assert differences({"addopts": "-q"}, {"addopts": "-q"}, KEYS) == []
    line = Difference("tvmperf_inconclusive", "pass", "fail").line("pytest.ini", "origin/main", "pytest.ini")
    assert line == (
        "pytest.ini sets tvmperf_inconclusive = 'pass', pytest.ini at origin/main sets "
        "tvmperf_inconclusive = 'fail': a setting of this change that can loosen the gate; configuration "
        "is code, review it as such"
    )
