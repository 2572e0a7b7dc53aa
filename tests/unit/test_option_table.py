"""The one table of options (options.OPTIONS): it generates the flags, the ini keys and
Settings; the docs' reference is generated from every row; markers parse into MarkerSettings."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_tvmperf.config import markers
from pytest_tvmperf.config import options
from pytest_tvmperf.config import parsing
from pytest_tvmperf.config.time_policy import TimePolicy
from pytest_tvmperf.config.markers import MarkerSettings
from pytest_tvmperf.config.options import OPTIONS
from pytest_tvmperf.config.limits import Limit
from pytest_tvmperf.config.per_test import settings_for_test
from pytest_tvmperf.config.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: one value per option that takes one, different from its default
SAMPLES = {
    options.OPT_EXECUTORS: "prim",
    options.OPT_TARGETS: "cuda",
    options.OPT_BASELINES: "perf/base",
    options.OPT_THRESHOLD: "time=30%,kernels=off",
    options.OPT_REPEAT: "4",
    options.OPT_MIN_REPEAT_MS: "9",
    options.OPT_EXAMPLES: "2",
    options.OPT_ALPHA: "1%",
    options.OPT_INCONCLUSIVE: "fail",
    options.OPT_OTHER_MACHINE: "normalized",
    options.OPT_CONFIRM: "no",
    options.OPT_NOISE: "raw=20%",
    options.OPT_ARTIFACTS: "saved",
    options.OPT_JSON: "out/results.json",
    options.OPT_HTML: "out/report.html",
    options.OPT_HISTORY: "out/history.jsonl",
    options.OPT_TUNING_DB: "db",
    options.OPT_TUNE: "3",
    options.OPT_TUNE_BUDGET: "30m",
    options.OPT_TUNED: "exact",
    options.OPT_PEERS: "numpy,torch",
    options.OPT_SIMULATE: "off",
    options.OPT_RPC: "127.0.0.1:9190",
    options.OPT_RPC_TIMEOUT: "45",
    options.OPT_BASELINE_PROGRAM: "so",
    options.OPT_BASELINE_WEIGHTS: "exact",
    options.OPT_TIMING: "off",
    options.OPT_TIME_BUDGET: "2m",
    options.OPT_BENCHMARK_JSON: "out/benchmark.json",
    options.OPT_LLVM_TARGET: "x86-64-v3",
    options.OPT_CHILD_TIMEOUT: "30",
    options.OPT_LOCK_TIMEOUT: "30",
    options.OPT_AGAINST_TVM: "0.26.0",
    options.OPT_AGAINST_TVM_PACKAGES: "onnx,torch==2.4.0",
    options.OPT_TRUST_ARTIFACTS: "on",
    options.OPT_BASELINES_REF: "origin/main",
    options.OPT_LAYERS: "on",
    options.OPT_SAME_PROGRAM: "time",
    options.OPT_RESOURCES: "code",
    options.OPT_APPROVED_CHANGE: "on",
    options.OPT_CHANGES_MD: "out/changes.md",
    options.OPT_DECIDE_BUDGET: "30s,200",
}
#: a command-line value other than the ini's sample, for options whose default is None
OTHER_CLI = {
    options.OPT_AGAINST_TVM: "0.25.0",
    options.OPT_RPC: ("10.0.0.1", 1),
    options.OPT_BASELINES_REF: "HEAD~1",
    options.OPT_LLVM_TARGET: {"kind": "llvm", "mcpu": "haswell"},
}


class FakeConfig:
    """What Settings.from_config reads of a pytest.Config."""

    def __init__(self, cli=None, ini=None, rootpath=Path("/root/project")):
        self.cli, self.ini, self.rootpath = cli or {}, ini or {}, rootpath
        self.invocation_params = SimpleNamespace(dir=Path("/here"))

    def getoption(self, name):
        return self.cli.get(name)

    def getini(self, name):
        assert any(o.dest == name and o.ini for o in OPTIONS), f"{name} is not an ini key"
        return self.ini.get(name, "")


def _parsed_cli(*args: str) -> dict:
    """The command line ``args`` through the argparse options that addoption registers."""
    parser = argparse.ArgumentParser()
    inis: list[str] = []
    group = SimpleNamespace(addoption=parser.add_argument)
    options.addoption(SimpleNamespace(getgroup=lambda *_: group, addini=lambda name, *_, **__: inis.append(name)))
    assert inis == [o.dest for o in OPTIONS if o.ini]
    return vars(parser.parse_args(list(args)))


def test_every_option_has_a_flag_an_ini_key_or_not_a_field_and_a_default():
    dests = [o.dest for o in OPTIONS]
    assert len(set(dests)) == len(dests)
    fields = {f.name for f in dataclasses.fields(Settings)}
    filled = set()
    for opt in OPTIONS:
        assert opt.dest.startswith("tvmperf_") and opt.flag == "--" + opt.dest.replace("_", "-")
        assert opt.help and "%%" not in opt.help  # addoption escapes % for argparse
        if opt.switch:
            assert opt.default is False and not opt.ini and opt.parse is None
        filled.add(opt.field)
        assert bool(opt.marker_keys) == bool(opt.marker_role)
    # every Settings field comes from exactly one row, but the names of those the command line set
    assert filled == fields - {"pinned", "pinned_thresholds"}
    assert set(SAMPLES) == {o.dest for o in OPTIONS if not o.switch}


def test_defaults_of_the_table_are_those_of_settings():
    assert Settings.from_config(FakeConfig(rootpath=Path("."))) == Settings()
    assert Settings.from_config(FakeConfig(cli=_parsed_cli(), rootpath=Path("."))) == Settings()


@pytest.mark.parametrize("opt", [o for o in OPTIONS if not o.switch], ids=lambda o: o.dest)
def test_settings_round_trip_command_line_and_ini(opt):
    """A value means the same on the command line and in the ini, and reaches Settings."""
    default = Settings.from_config(FakeConfig())
    from_cli = Settings.from_config(FakeConfig(cli=_parsed_cli(f"{opt.flag}={SAMPLES[opt.dest]}")))
    assert from_cli != default
    if not opt.ini:
        return
    from_ini = Settings.from_config(FakeConfig(ini={opt.dest: SAMPLES[opt.dest]}))
    assert settings_for_test(from_ini) == dataclasses.replace(settings_for_test(from_cli), pinned=frozenset())
    layers = dict(pinned=frozenset(), pinned_thresholds=frozenset())
    assert dataclasses.replace(from_ini, **layers) == dataclasses.replace(from_cli, **layers)


@pytest.mark.parametrize("opt", [o for o in OPTIONS if o.switch], ids=lambda o: o.dest)
def test_switches_are_command_line_only(opt):
    assert getattr(Settings.from_config(FakeConfig(cli=_parsed_cli(opt.flag))), opt.field) is True
    assert getattr(Settings.from_config(FakeConfig(cli=_parsed_cli())), opt.field) is False


def test_paths_are_anchored_and_artifacts_may_be_off():
    s = Settings.from_config(
        FakeConfig(
            cli=_parsed_cli("--tvmperf-baselines=b", "--tvmperf-json=r.json", "--tvmperf-tuning-db=t"),
            ini={options.OPT_ARTIFACTS: "a"},
        )
    )
    assert (s.baseline_dir, s.artifact_dir, s.tuning_db) == (
        Path("/root/project/b"),
        Path("/root/project/b/a"),
        Path("/root/project/b/t"),
    )
    assert s.json_path == Path("/here/r.json") and s.html_path is None
    assert Settings.from_config(FakeConfig(cli=_parsed_cli("--tvmperf-artifacts=off"))).artifact_dir is None


def test_command_line_beats_ini_beats_default_for_every_option_with_an_ini_key():
    for opt in (o for o in OPTIONS if o.ini and o.marker_role != "sets"):
        ini = Settings.from_config(FakeConfig(ini={opt.dest: SAMPLES[opt.dest]}))
        both = Settings.from_config(
            FakeConfig(
                cli={opt.dest: OTHER_CLI.get(opt.dest, getattr(Settings(), opt.field) if opt.parse else "x")},
                ini={opt.dest: SAMPLES[opt.dest]},
            )
        )
        assert getattr(both, opt.field) != getattr(ini, opt.field), opt.dest


def test_passthrough_options_come_from_the_table():
    assert set(options.PASSTHROUGH) == {
        "--tvmperf-baselines",
        "--tvmperf-artifacts",
        "--tvmperf-executors",
        "--tvmperf-targets",
        "--tvmperf-tuning-db",
        "--tvmperf-rpc",
        "--tvmperf-llvm-target",
        "--tvmperf-tuned",
    }


def test_an_option_with_an_environment_variable_takes_it_between_command_line_and_ini(monkeypatch):
    monkeypatch.setenv(options.ENV_LLVM_TARGET, '{"mcpu": "haswell"}')
    ini = {options.OPT_LLVM_TARGET: "x86-64-v2"}
    assert Settings.from_config(FakeConfig(ini=ini)).llvm_target == {"kind": "llvm", "mcpu": "haswell"}
    cli = _parsed_cli("--tvmperf-llvm-target=x86-64-v3")
    assert Settings.from_config(FakeConfig(cli=cli, ini=ini)).llvm_target == {"kind": "llvm", "mcpu": "x86-64-v3"}
    monkeypatch.setenv(options.ENV_LLVM_TARGET, "")
    assert Settings.from_config(FakeConfig(ini=ini)).llvm_target == {"kind": "llvm", "mcpu": "x86-64-v2"}


# --------------------------------------------------------------------------- time policy


def test_noise_and_alpha_defaults_live_in_one_place():
    assert TimePolicy().alpha == parsing.DEFAULT_ALPHA == Settings().alpha
    assert (TimePolicy().noise_ab, TimePolicy().noise_normalized, TimePolicy().noise_raw, TimePolicy().noise_ratio) == (
        parsing.DEFAULT_NOISE["ab"],
        parsing.DEFAULT_NOISE["normalized"],
        parsing.DEFAULT_NOISE["raw"],
        parsing.DEFAULT_NOISE["ratio"],
    )


def test_settings_time_policy_carries_every_field():
    settings = Settings(
        alpha=0.2, noise={"ab": 0.01, "normalized": 0.03, "raw": 0.2, "ratio": 0.05}, other_machine="normalized"
    )
    assert settings.time_policy(4) == TimePolicy(
        alpha=0.05, noise_ab=0.01, noise_normalized=0.03, noise_raw=0.2, noise_ratio=0.05, other_machine="normalized"
    )
    assert Settings().time_policy(0).alpha == 0.05  # no timed test: the whole rate
    assert Settings().time_policy().other_machine == "skip"


# --------------------------------------------------------------------------- markers


def test_marker_keys_come_from_the_table():
    assert markers.MARKER_KEYS == (
        "executors",
        "targets",
        *parsing.METRICS,
        "code",
        "memory",
        "compile",  # compile=25% is compile_s=25% (issue 48)
        *parsing.PEER_MARKER_KEYS,
        "simulate",
        "baseline_weights",
        "timing",
        "time_budget",
        "decide_budget",
        "resources",
    )


def test_marker_settings_from_kwargs():
    parsed = MarkerSettings.from_kwargs({"executors": ["prim"], "time": "25%", "instructions": 2, "vs_torch": "1.5x"})
    assert parsed == MarkerSettings(
        executors=("prim",),
        targets=None,
        thresholds={"time": Limit(relative=0.25), "instructions": Limit(absolute=2.0)},
        peer_limits={"torch": 1.5},
    )
    assert MarkerSettings.from_kwargs({}) == MarkerSettings()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"time": "soon"}, "bad threshold time='soon'"),
        ({"targets": "rocm"}, "unknown target 'rocm'"),
        ({"executors": []}, "no executor given"),
        ({"vs_numpy": 0}, "bad vs_numpy=0"),
        ({"decide_budget": "0"}, "decide_budget='0': '0': a duration must be more than 0"),
        ({"decide_budget": "60s,0"}, "decide_budget='60s,0': '60s,0': the rounds must be a whole number"),
    ],
)
def test_marker_settings_reject_bad_values_naming_the_keyword(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        MarkerSettings.from_kwargs(kwargs)


# --------------------------------------------------------------------------- the docs' reference


def _reference_hook():
    """docs/hooks/reference.py, the MkDocs hook that generates the Reference page's tables."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tvmperf_docs_reference", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_reference_documents_every_option():
    """The options table of docs/reference.md is generated from OPTIONS (it was a hand-kept
    README table, checked here against OPTIONS): every row, with its ini key, environment
    variable and marker keywords."""
    hook = _reference_hook()
    page = hook.on_page_markdown(
        (DOCS / "reference.md").read_text(encoding="utf-8"),
        SimpleNamespace(file=SimpleNamespace(src_path="reference.md")),
        None,
        None,
    )
    assert page == (DOCS / "reference.md").read_text(encoding="utf-8")  # the file holds the generated tables
    # each option: "- `--tvmperf-x=V`: its help (ini `tvmperf_x` · environment `X` · marker `a`, `b`)"
    entries = re.findall(r"^- `(--tvmperf-[a-z-]+)[^`]*`: (.*) \(([^()]*)\)$", page, re.MULTILINE)
    documented = {}
    for flag, help_text, where in entries:
        parts = dict(part.split(" ", 1) for part in where.split(" · ") if part != "command line only")
        documented[flag] = (
            parts.get("ini", "").strip("`"),
            parts.get("environment", "").strip("`"),
            set(re.findall(r"`([a-z_]+)`", parts.get("marker", ""))),
            bool(help_text),
        )
    assert documented == {o.flag: (o.dest if o.ini else "", o.env or "", set(o.marker_keys), True) for o in OPTIONS}
    for key in markers.MARKER_KEYS:
        assert f"| `{key}` |" in page, key


def test_docs_state_the_precedence():
    for page in ("reference.md", "gate.md"):
        assert "command line > marker > ini > default" in (DOCS / page).read_text(encoding="utf-8"), page
