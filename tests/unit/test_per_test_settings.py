"""config/per_test.py: one test's settings, merged once from the run's (command line and ini,
merged when the run is configured) and the test's marker. The one precedence rule, option
by option: command line > the test's marker > ini > default; and the configure-time
check that tells a command line's ``--tvmperf-timing=off`` from an ini's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_tvmperf.config import options
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, parse_limit
from pytest_tvmperf.config.markers import MarkerSettings
from pytest_tvmperf.config.options import DEFAULT_TIME_BUDGET_S, OPTIONS
from pytest_tvmperf.config.per_test import TestSettings, settings_for_test
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.startup import _run_problem


class FakeConfig:
    """What Settings.from_config reads: the command line's text parsed as argparse would."""

    def __init__(self, cli: dict | None = None, ini: dict[str, str] | None = None):
        parse = {o.dest: o.parse for o in OPTIONS}
        self.cli = {k: parse[k](v) if parse[k] else v for k, v in (cli or {}).items()}
        self.ini, self.rootpath = ini or {}, Path("/root/project")
        self.invocation_params = SimpleNamespace(dir=Path("/here"))

    def getoption(self, name):
        return self.cli.get(name)

    def getini(self, name):
        return self.ini.get(name, "")


#: per option: its command-line text, its ini text, its marker keyword, the TestSettings field,
#: and the value each layer gives (default, ini, marker, command line), each unlike the one below
LAYERS = [
    (options.OPT_TIMING, "off", "off", {"timing": True}, "timing", (True, False, True, False)),
    (
        options.OPT_TIME_BUDGET,
        "10s",
        "30s",
        {"time_budget": "2m"},
        "time_budget_s",
        (DEFAULT_TIME_BUDGET_S, 30, 120, 10),
    ),
    (options.OPT_SIMULATE, "off", "off", {"simulate": "on"}, "simulate", ("auto", "off", "on", "off")),
    (
        options.OPT_RESOURCES,
        "none",
        "alloc_bytes",
        {"resources": "code"},
        "resources",
        (None, ("alloc_bytes",), ("code_bytes",), ()),
    ),
    (
        options.OPT_BASELINE_WEIGHTS,
        "exact",
        "exact",
        {"baseline_weights": "seeded"},
        "baseline_weights",
        ("seeded", "exact", "seeded", "exact"),
    ),
]


@pytest.mark.parametrize(("dest", "cli", "ini", "marker", "field", "values"), LAYERS, ids=[row[0] for row in LAYERS])
def test_command_line_over_marker_over_ini_over_default(dest, cli, ini, marker, field, values):
    default, from_ini, from_marker, from_cli = values
    mark = MarkerSettings.from_kwargs(marker)

    def merged(config: FakeConfig, mark: MarkerSettings | None = None):
        return getattr(settings_for_test(Settings.from_config(config), mark), field)

    if default is not None:
        assert merged(FakeConfig()) == default
    assert merged(FakeConfig(ini={dest: ini})) == from_ini  # the ini over the default
    assert merged(FakeConfig(ini={dest: ini}), mark) == from_marker  # the marker over the ini
    assert merged(FakeConfig(cli={dest: cli}, ini={dest: ini}), mark) == from_cli  # the command line over the marker
    assert merged(FakeConfig(cli={dest: cli}), mark) == from_cli


#: per option: a command-line text unlike the ini's, the TestSettings field, and the command line's value
OVER_INI = [
    (options.OPT_TIMING, "on", "off", "timing", True),
    (options.OPT_TIME_BUDGET, "10s", "30s", "time_budget_s", 10),
    (options.OPT_SIMULATE, "on", "off", "simulate", "on"),
    (options.OPT_RESOURCES, "none", "alloc_bytes", "resources", ()),
    (options.OPT_BASELINE_WEIGHTS, "seeded", "exact", "baseline_weights", "seeded"),
]


@pytest.mark.parametrize(("dest", "cli", "ini", "field", "value"), OVER_INI, ids=[row[0] for row in OVER_INI])
def test_the_command_line_over_the_ini_when_the_run_is_configured(dest, cli, ini, field, value):
    run = Settings.from_config(FakeConfig(cli={dest: cli}, ini={dest: ini}))
    assert getattr(settings_for_test(run), field) == value
    assert run.pinned == {field.removesuffix("_s")}


def test_thresholds_merge_metric_by_metric():
    """The command line's time limit holds over the marker's; the marker's kernels limit
    (which the command line does not set) over the ini's; the ini's calls over the default."""
    config = FakeConfig(
        cli={options.OPT_THRESHOLD: "time=40%"}, ini={options.OPT_THRESHOLD: "time=20%,kernels=+1,calls=+4"}
    )
    mark = MarkerSettings.from_kwargs({"time": "30%", "kernels": "+2"})
    run = Settings.from_config(config)
    assert run.pinned_thresholds == {"time"}
    merged = settings_for_test(run, mark).thresholds
    assert merged["time"] == parse_limit("time", "40%")
    assert merged["kernels"] == parse_limit("kernels", "+2")
    assert merged["calls"] == parse_limit("calls", "+4")
    assert merged["instructions"] == DEFAULT_THRESHOLDS["instructions"]
    assert list(merged) == list(DEFAULT_THRESHOLDS)
    without_cli = settings_for_test(Settings.from_config(FakeConfig(ini=config.ini)), mark).thresholds
    assert without_cli["time"] == parse_limit("time", "30%")  # the marker over the ini
    assert settings_for_test(Settings.from_config(FakeConfig(ini=config.ini))).thresholds["time"] == parse_limit(
        "time", "20%"
    )


def test_the_marker_alone_and_nothing_at_all():
    assert settings_for_test(Settings()) == TestSettings()
    mark = MarkerSettings.from_kwargs({"vs_torch": 1.5, "timing": False})
    own = settings_for_test(Settings(), mark)
    assert (own.peer_limits, own.timing) == ({"torch": 1.5}, False)


def test_only_the_command_lines_timing_off_stops_an_update():
    """``--tvmperf-update`` with ``--tvmperf-timing=off`` is a usage error; with the ini's
    ``tvmperf_timing = off`` it is not (tests may switch timing off for themselves)."""
    ini_off = Settings.from_config(FakeConfig(cli={options.OPT_UPDATE: True}, ini={options.OPT_TIMING: "off"}))
    cli_off = Settings.from_config(FakeConfig(cli={options.OPT_UPDATE: True, options.OPT_TIMING: "off"}))
    assert (ini_off.update, ini_off.timing, cli_off.update, cli_off.timing) == (True, False, True, False)
    config = SimpleNamespace(workerinput={})
    assert _run_problem(config, ini_off) is None
    assert _run_problem(config, cli_off).startswith(
        "--tvmperf-update records time baselines: drop --tvmperf-timing=off"
    )


def test_a_prune_without_an_update_is_refused():
    config = SimpleNamespace(workerinput={})
    assert _run_problem(config, Settings(prune=True)) == (
        "--tvmperf-prune removes baselines while updating: use it with --tvmperf-update"
    )
    assert _run_problem(config, Settings(prune=True, update=True)) is None
