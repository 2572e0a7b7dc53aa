"""Threshold parsing, Limit arithmetic, choice parsing and threshold precedence."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tvmperf.config import options, parsing
from pytest_tvmperf.config.parsing import (
    EXACT_METRICS,
    EXECUTORS,
    METRICS,
    TARGETS,
    parse_alpha,
    parse_switch,
    parse_executors,
    parse_inconclusive,
    parse_noise,
    parse_other_machine,
    parse_targets,
)
from pytest_tvmperf.config.limits import (
    DEFAULT_THRESHOLDS,
    Limit,
    parse_limit,
    parse_thresholds,
    thresholds_from_marker,
)
from pytest_tvmperf.config.markers import MarkerSettings
from pytest_tvmperf.config.per_test import settings_for_test
from pytest_tvmperf.config.settings import Settings

# --------------------------------------------------------------------------- parse_limit


@pytest.mark.parametrize(
    ("metric", "text", "expected"),
    [
        ("time", "25%", Limit(relative=0.25)),
        ("time", "0%", Limit(relative=0.0)),
        ("time", " 25 % ", Limit(relative=0.25)),
        ("time", "1x", Limit(relative=0.0)),
        ("time", "2X", Limit(relative=1.0)),
        ("time", "off", Limit(enabled=False)),
        ("time", " OFF ", Limit(enabled=False)),
        ("instructions", "0", Limit(absolute=0.0)),
        ("instructions", "2", Limit(absolute=2.0)),
        ("calls", "5%", Limit(relative=0.05)),
        ("kernels", "1.5x", Limit(relative=0.5)),
        ("storage_bytes", "off", Limit(enabled=False)),
        ("storage_bytes", 4096, Limit(absolute=4096.0)),
    ],
)
def test_parse_limit_accepts(metric, text, expected):
    assert parse_limit(metric, text) == expected


def test_parse_limit_ratio_is_relative_growth():
    assert parse_limit("time", "1.25x").relative == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("metric", "text"),
    [
        ("time", "25"),  # time needs a % or x
        ("time", "-5%"),
        ("time", "0.5x"),  # a ratio below 1 would demand a speed-up
        ("time", "fast"),
        ("time", ""),
        ("instructions", "-1"),
        ("instructions", "two"),
        ("instructions", "%"),
        ("kernels", "x"),
    ],
)
def test_parse_limit_rejects_with_a_message_naming_value_and_example(metric, text):
    with pytest.raises(ValueError) as info:
        parse_limit(metric, text)
    message = str(info.value)
    if metric == "time":
        hint = "write a percentage or a ratio, e.g. time=25% or time=1.25x"
    else:  # issue 23: read "write instructions='0', '2' (or '0', '2' or '5%', or 'off')"
        hint = f"write an allowed increase or a percentage, e.g. {metric}=0 (no increase), {metric}=2 or {metric}=5%"
    assert message == f"bad threshold {metric}={text!r}: {hint}; or {metric}=off to stop gating it"
    # every example it gives is a limit the parser takes
    for example in ("0", "2", "5%", "off") if metric != "time" else ("25%", "1.25x", "off"):
        parse_limit(metric, example)


def test_parse_limit_unknown_metric_lists_known_ones():
    with pytest.raises(ValueError, match="unknown metric 'latency'") as info:
        parse_limit("latency", "25%")
    for metric in METRICS:
        assert metric in str(info.value)


@pytest.mark.parametrize(("metric", "text"), [("time", "nan%"), ("time", "nanx"), ("instructions", "nan")])
def test_parse_limit_rejects_nan(metric, text):
    with pytest.raises(ValueError):
        parse_limit(metric, text)


# --------------------------------------------------------------------------- Limit


@pytest.mark.parametrize(
    ("limit", "baseline", "expected"),
    [
        (Limit(), 10.0, 10.0),
        (Limit(relative=0.25), 8.0, 10.0),
        (Limit(absolute=2.0), 8.0, 10.0),
        (Limit(relative=0.5, absolute=100.0), 10.0, 15.0),  # relative wins over absolute
        (Limit(enabled=False), 10.0, math.inf),
        (Limit(relative=0.1, enabled=False), 10.0, math.inf),
    ],
)
def test_allowed_max(limit, baseline, expected):
    assert limit.allowed_max(baseline) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("limit", "text"),
    [
        (Limit(), "no increase"),
        (Limit(relative=0.25), "+25%"),
        (Limit(relative=0.0), "+0%"),
        (Limit(absolute=2.0), "+2"),
        (Limit(absolute=0.0), "+0"),
        (Limit(relative=0.25, enabled=False), "off"),
    ],
)
def test_limit_describe(limit, text):
    assert limit.describe() == text


_numbers = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
_limit_texts = st.one_of(
    st.just("off"),
    _numbers.map(lambda n: f"{n!r}%"),
    st.floats(min_value=1, max_value=1e3).map(lambda r: f"{r!r}x"),
    _numbers.map(repr),
)


@given(
    text=_limit_texts,
    baseline=st.floats(min_value=0, max_value=1e12, allow_nan=False),
)
def test_allowed_max_never_below_baseline(text, baseline):
    metric = "time" if not text[-1].isdigit() else "instructions"
    limit = parse_limit(metric, text)
    assert limit.allowed_max(baseline) >= baseline


# --------------------------------------------------------------------------- parse_thresholds


def test_parse_thresholds_several_metrics():
    assert parse_thresholds(" time = 25% , instructions=0,kernels=off ") == {
        "time": Limit(relative=0.25),
        "instructions": Limit(absolute=0.0),
        "kernels": Limit(enabled=False),
    }


@pytest.mark.parametrize("text", ["", " ", ",", " , ,"])
def test_parse_thresholds_empty(text):
    assert parse_thresholds(text) == {}


def test_parse_thresholds_later_duplicate_wins():
    assert parse_thresholds("time=10%,time=off") == {"time": Limit(enabled=False)}


def test_parse_thresholds_part_without_equals():
    with pytest.raises(ValueError, match=r"bad threshold 'time': expected METRIC=LIMIT"):
        parse_thresholds("instructions=0,time")


def test_parse_thresholds_unknown_metric():
    with pytest.raises(ValueError, match="unknown metric 'speed'"):
        parse_thresholds("time=25%,speed=2")


def test_parse_thresholds_bad_value_names_metric():
    with pytest.raises(ValueError, match=r"bad threshold calls='-3'"):
        parse_thresholds("calls=-3")


_spec = st.one_of(
    st.tuples(st.just("off"), st.just(0.0)),
    st.tuples(st.just("%"), _numbers),
    st.tuples(st.just("x"), st.floats(min_value=1, max_value=1e3)),
)
_exact_spec = st.one_of(_spec, st.tuples(st.just("abs"), _numbers))


def _fmt(kind: str, number: float) -> str:
    return {"off": "off", "%": f"{number!r}%", "x": f"{number!r}x", "abs": repr(number)}[kind]


def _expected(kind: str, number: float) -> Limit:
    return {
        "off": lambda: Limit(enabled=False),
        "%": lambda: Limit(relative=number / 100.0),
        "x": lambda: Limit(relative=number - 1.0),
        "abs": lambda: Limit(absolute=number),
    }[kind]()


@given(
    time=st.none() | _spec,
    exact=st.dictionaries(st.sampled_from(EXACT_METRICS), _exact_spec),
)
def test_parse_thresholds_round_trip(time, exact):
    specs = dict(exact)
    if time is not None:
        specs["time"] = time
    text = ",".join(f"{metric}={_fmt(*spec)}" for metric, spec in specs.items())
    assert parse_thresholds(text) == {metric: _expected(*spec) for metric, spec in specs.items()}


# --------------------------------------------------------------------------- defaults and marker


def test_default_thresholds_cover_all_metrics():
    assert set(DEFAULT_THRESHOLDS) == set(METRICS)
    assert parsing.DEFAULT_TIME_THRESHOLD == "5%"
    assert DEFAULT_THRESHOLDS["time"] == Limit(relative=0.05)
    for metric in EXACT_METRICS:
        assert DEFAULT_THRESHOLDS[metric] == Limit()


def test_thresholds_from_marker_keeps_only_metrics():
    assert thresholds_from_marker({"executors": ["prim"], "time": "25%", "instructions": 2}) == {
        "time": Limit(relative=0.25),
        "instructions": Limit(absolute=2.0),
    }


def test_thresholds_from_marker_bad_value():
    with pytest.raises(ValueError, match="bad threshold time="):
        thresholds_from_marker({"time": 25})


# --------------------------------------------------------------------------- executors / targets


def test_parse_executors():
    assert parse_executors("prim, vm-bytecode") == ("prim", "vm-bytecode")
    assert parse_executors(["vm-compiled", "prim", "vm-compiled"]) == ("vm-compiled", "prim")
    assert parse_executors(",".join(EXECUTORS)) == EXECUTORS


def test_parse_targets():
    assert parse_targets("cuda,,llvm,cuda") == ("cuda", "llvm")
    assert parse_targets(("llvm",)) == ("llvm",)
    assert set(parse_targets(",".join(TARGETS))) == set(TARGETS)


@pytest.mark.parametrize("text", ["", " , ", []])
def test_parse_executors_none_given(text):
    with pytest.raises(ValueError, match="no executor given; choose from vm-bytecode"):
        parse_executors(text)


def test_parse_choices_unknown_names_them():
    with pytest.raises(ValueError, match=r"unknown executor 'graph', 'aot'; choose from") as info:
        parse_executors("prim,graph,aot")
    assert "vm-compiled" in str(info.value)
    with pytest.raises(ValueError, match=r"unknown target 'rocm'"):
        parse_targets("llvm,rocm")


@given(st.lists(st.sampled_from(EXECUTORS), min_size=1))
def test_parse_executors_dedups_in_order(names):
    parsed = parse_executors(",".join(names))
    assert parsed == tuple(dict.fromkeys(names))


# --------------------------------------------------------------------------- small parsers


@pytest.mark.parametrize("text", ["0", "-2", "x", "1.5", "", "2147483648", "9" * 5000])
def test_positive_int_rejects(text):
    with pytest.raises(ValueError, match="expected a positive integer from 1 to 2147483647, got"):
        parsing.positive_int(text)


@pytest.mark.parametrize(
    "parse, low, high, text",
    [
        (parsing.parse_min_repeat_ms, 1, 60000, "3000000000"),  # issue 23: accepted, and TVM ignored it
        (parsing.parse_min_repeat_ms, 1, 60000, "0"),
        (parsing.parse_rpc_timeout, 1, 86400, "99999999999"),  # issue 23: an OverflowError in the wait
        (parsing.parse_rpc_timeout, 1, 86400, "-5"),
    ],
)
def test_bounded_options_say_their_range(parse, low, high, text):
    with pytest.raises(ValueError, match=rf"^expected \w[\w ]* from {low} to {high}, got '{text}'$"):
        parse(text)
    assert parse(str(low)) == low and parse(str(high)) == high


def test_no_count_option_overflows_a_wait_or_a_32_bit_int():
    import threading

    assert parsing.positive_int("2147483647") == 2**31 - 1 < threading.TIMEOUT_MAX
    assert parsing.MAX_RPC_TIMEOUT_S < threading.TIMEOUT_MAX


def test_a_long_bad_value_is_shortened_in_the_message():
    with pytest.raises(ValueError) as info:
        parsing.positive_int("9" * 5000)
    assert len(str(info.value)) < 150 and "(5000 characters)" in str(info.value)


def test_positive_int_accepts():
    assert parsing.positive_int("7") == 7


def test_argparse_type_turns_value_error_into_usage_error():
    convert = parsing.argparse_type(parse_thresholds)
    assert convert.__name__ == "parse_thresholds"
    assert convert("time=5%") == {"time": Limit(relative=0.05)}
    with pytest.raises(argparse.ArgumentTypeError, match="unknown metric"):
        convert("nope=1")


def _cli_parser() -> argparse.ArgumentParser:
    """An argparse parser holding the options that ``options.addoption`` registers."""
    parser = argparse.ArgumentParser()

    class Group:
        def addoption(self, *names, **kwargs):
            parser.add_argument(*names, **kwargs)

    class Parser:
        def getgroup(self, *_):
            return Group()

        def addini(self, *_, **__):
            pass

    options.addoption(Parser())
    return parser


def test_addoption_parses_cli_values():
    """The options registered through addoption parse with the same parsers."""
    parser = _cli_parser()
    ns = parser.parse_args(["--tvmperf-threshold", "time=25%", "--tvmperf-executors", "prim", "--tvmperf-repeat", "3"])
    assert getattr(ns, options.OPT_THRESHOLD) == {"time": Limit(relative=0.25)}
    assert getattr(ns, options.OPT_EXECUTORS) == ("prim",)
    assert getattr(ns, options.OPT_REPEAT) == 3
    assert getattr(ns, options.OPT_UPDATE) is False
    for name in (
        options.OPT_ALPHA,
        options.OPT_INCONCLUSIVE,
        options.OPT_OTHER_MACHINE,
        options.OPT_CONFIRM,
        options.OPT_NOISE,
        options.OPT_ARTIFACTS,
    ):
        assert getattr(ns, name) is None  # unset: Settings falls back to ini, then the default
    ns = parser.parse_args(
        [
            "--tvmperf-alpha",
            "1%",
            "--tvmperf-inconclusive",
            "fail",
            "--tvmperf-other-machine",
            "skip",
            "--tvmperf-confirm",
            "off",
            "--tvmperf-noise",
            "ab=2%",
            "--tvmperf-artifacts",
            "off",
        ]
    )
    assert getattr(ns, options.OPT_ALPHA) == pytest.approx(0.01)
    assert getattr(ns, options.OPT_INCONCLUSIVE) == "fail"
    assert getattr(ns, options.OPT_OTHER_MACHINE) == "skip"
    assert getattr(ns, options.OPT_CONFIRM) is False
    assert getattr(ns, options.OPT_NOISE) == {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}
    assert getattr(ns, options.OPT_ARTIFACTS) == "off"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tvmperf-alpha", "0"], "bad false-alarm rate '0': it must lie strictly between 0 and 1"),
        (["--tvmperf-inconclusive", "maybe"], "unknown inconclusive policy 'maybe'; choose from fail, warn, pass"),
        (["--tvmperf-other-machine", "any"], "unknown other-machine policy 'any'; choose from normalized, skip"),
        (["--tvmperf-confirm", "perhaps"], "expected on or off (also true/false, yes/no, 1/0), got 'perhaps'"),
        (["--tvmperf-noise", "ab=1"], "bad noise 'ab=1': the value is a percentage, e.g. 'ab=3%'"),
    ],
)
def test_addoption_rejects_bad_time_verdict_options(args, message, capsys):
    parser = _cli_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(args)
    assert message in capsys.readouterr().err


# --------------------------------------------------------------------------- time verdict parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.05", 0.05), ("5%", 0.05), (" 1% ", 0.01), ("0.001", 0.001), ("99%", 0.99), (0.2, 0.2), ("1e-3", 0.001)],
)
def test_parse_alpha_accepts(text, expected):
    assert parse_alpha(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["0", "1", "0%", "100%", "-0.05", "1.5", "150%", "nan", "inf", "-inf"])
def test_parse_alpha_rejects_outside_open_unit_interval(text):
    with pytest.raises(ValueError) as info:
        parse_alpha(text)
    assert str(info.value) == f"bad false-alarm rate {text!r}: it must lie strictly between 0 and 1"


@pytest.mark.parametrize("text", ["", "%", "five", "0.05x", "5 %%x"])
def test_parse_alpha_rejects_non_numbers(text):
    with pytest.raises(ValueError) as info:
        parse_alpha(text)
    assert str(info.value) == f"bad false-alarm rate {text!r}: write a probability such as 0.05 or 5%"


@pytest.mark.parametrize("policy", parsing.INCONCLUSIVE_POLICIES)
def test_parse_inconclusive_accepts(policy):
    assert parse_inconclusive(policy) == policy
    assert parse_inconclusive(f" {policy} ") == policy


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no inconclusive policy given; choose from fail, warn, pass"),
        (" , ", "no inconclusive policy given; choose from fail, warn, pass"),
        ("ignore", "unknown inconclusive policy 'ignore'; choose from fail, warn, pass"),
        ("Fail", "unknown inconclusive policy 'Fail'; choose from fail, warn, pass"),
        ("warn,error", "unknown inconclusive policy 'error'; choose from fail, warn, pass"),
    ],
)
def test_parse_inconclusive_rejects(text, message):
    with pytest.raises(ValueError) as info:
        parse_inconclusive(text)
    assert str(info.value) == message


@pytest.mark.parametrize("policy", parsing.OTHER_MACHINE_POLICIES)
def test_parse_other_machine_accepts(policy):
    assert parse_other_machine(policy) == policy
    assert parse_other_machine(f"{policy} ") == policy


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no other-machine policy given; choose from normalized, skip"),
        ("raw", "unknown other-machine policy 'raw'; choose from normalized, skip"),
        ("normalised", "unknown other-machine policy 'normalised'; choose from normalized, skip"),
    ],
)
def test_parse_other_machine_rejects(text, message):
    with pytest.raises(ValueError) as info:
        parse_other_machine(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("parse", "text"), [(parse_inconclusive, "fail,pass"), (parse_other_machine, "skip,normalized")]
)
def test_single_choice_parsers_reject_a_list(parse, text):
    with pytest.raises(ValueError):
        parse(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}),
        (" , ", {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}),
        ("normalized=3%,ab=1%", {"ab": 0.01, "normalized": 0.03, "raw": 0.15, "ratio": 0.07}),
        ("ab=2%", {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}),
        (" raw = 25% , normalized=0% ", {"ab": 0.02, "normalized": 0.0, "raw": 0.25, "ratio": 0.07}),
        ("ab=1%,ab=4%", {"ab": 0.04, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}),
        ("raw=999%", {"ab": 0.02, "normalized": 0.1, "raw": 9.99, "ratio": 0.07}),
    ],
)
def test_parse_noise_accepts(text, expected):
    assert parse_noise(text) == pytest.approx(expected)
    assert parsing.DEFAULT_NOISE == {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}  # never mutated


@pytest.mark.parametrize(
    ("text", "part"),
    [("speed=1%", "speed=1%"), ("ab", "ab"), ("ab=1%,=2%", "=2%"), ("AB=1%", "AB=1%"), ("a/b=1%", "a/b=1%")],
)
def test_parse_noise_rejects_unknown_mode(text, part):
    with pytest.raises(ValueError) as info:
        parse_noise(text)
    assert str(info.value) == (
        f"bad noise {part!r}: write MODE=PERCENT with MODE one of ab, normalized, raw, ratio, e.g. 'normalized=3%'"
    )


@pytest.mark.parametrize(
    ("text", "part", "mode"),
    [
        ("ab=1", "ab=1", "ab"),  # a bare number is not a percentage
        ("raw=0.15", "raw=0.15", "raw"),
        ("normalized=-1%", "normalized=-1%", "normalized"),
        ("raw=1000%", "raw=1000%", "raw"),
        ("ab=x%", "ab=x%", "ab"),
        ("ab=%", "ab=%", "ab"),
        ("ab=nan%", "ab=nan%", "ab"),
        ("raw=inf%", "raw=inf%", "raw"),
        ("ab=1%,raw=", "raw=", "raw"),
    ],
)
def test_parse_noise_rejects_bad_value(text, part, mode):
    with pytest.raises(ValueError) as info:
        parse_noise(text)
    assert str(info.value) == f"bad noise {part!r}: the value is a percentage, e.g. '{mode}=3%'"


@pytest.mark.parametrize("text", ["1", "true", "True", " YES ", "on"])
def test_parse_bool_true(text):
    assert parse_switch(text) is True


@pytest.mark.parametrize("text", ["0", "false", "FALSE", "no", " off "])
def test_parse_bool_false(text):
    assert parse_switch(text) is False


@pytest.mark.parametrize("text", ["", "maybe", "2", "y", "enabled", "of"])
def test_parse_bool_rejects(text):
    with pytest.raises(ValueError) as info:
        parse_switch(text)
    assert str(info.value) == f"expected on or off (also true/false, yes/no, 1/0), got {text!r}"


ON_WORDS = ["on", "ON", "true", "True", "yes", " Yes ", "1", True]
OFF_WORDS = ["off", "Off", "false", "FALSE", "no", "0", False]
#: the on/off options: each takes the same words on the command line and in the ini
SWITCH_OPTIONS = [opt for opt in options.OPTIONS if opt.parse in (parse_switch, parsing.parse_simulate)]


def test_every_on_off_option_is_known():
    assert sorted(opt.dest for opt in SWITCH_OPTIONS) == [
        "tvmperf_approved_change",
        "tvmperf_confirm",
        "tvmperf_layers",
        "tvmperf_simulate",
        "tvmperf_timing",
        "tvmperf_trust_artifacts",
    ]


@pytest.mark.parametrize("opt", SWITCH_OPTIONS, ids=lambda o: o.dest)
def test_every_on_off_option_takes_one_vocabulary(opt):
    """issue 26: --tvmperf-timing=of answered "expected true or false" while the help says
    on|off, and --tvmperf-simulate took yes; now every switch takes the same words."""
    for word in ON_WORDS:
        assert opt.parse(word) in (True, "on"), word
    for word in OFF_WORDS:
        assert opt.parse(word) in (False, "off"), word
    with pytest.raises(ValueError) as info:
        opt.parse("of")
    assert str(info.value) == "expected on or off (also true/false, yes/no, 1/0), got 'of'"


@pytest.mark.parametrize("key", ["timing", "simulate"])
def test_every_on_off_marker_keyword_takes_the_same_vocabulary(key):
    from pytest_tvmperf.config.markers import MarkerSettings

    for word in ON_WORDS:
        assert getattr(MarkerSettings.from_kwargs({key: word}), key) in (True, "on"), word
    for word in OFF_WORDS:
        assert getattr(MarkerSettings.from_kwargs({key: word}), key) in (False, "off"), word
    with pytest.raises(ValueError) as info:
        MarkerSettings.from_kwargs({key: "of"})
    assert str(info.value) == f"{key}='of': expected on or off (also true/false, yes/no, 1/0), got 'of'"


# --------------------------------------------------------------------------- Settings


def test_settings_thresholds_defaults():
    assert Settings().thresholds == DEFAULT_THRESHOLDS
    assert settings_for_test(Settings()).thresholds == DEFAULT_THRESHOLDS
    assert settings_for_test(Settings(), None).thresholds == DEFAULT_THRESHOLDS


def test_settings_thresholds_precedence_cli_over_marker_over_ini():
    """Closest wins: command line > the test's marker > ini > default, per metric."""
    settings = Settings.from_config(
        FakeConfig(
            cli={options.OPT_THRESHOLD: {"time": Limit(relative=0.01)}},
            ini={options.OPT_THRESHOLD: "time=2%,instructions=+2,calls=+4"},
        )
    )
    marker = {"time": Limit(relative=0.03), "instructions": Limit(absolute=3.0), "kernels": Limit(enabled=False)}
    merged = settings_for_test(settings, MarkerSettings(thresholds=marker)).thresholds
    assert merged["time"] == Limit(relative=0.01)  # CLI
    assert merged["instructions"] == Limit(absolute=3.0)  # the marker beats the ini
    assert merged["calls"] == Limit(absolute=4.0)  # ini
    assert merged["kernels"] == Limit(enabled=False)  # marker
    assert merged["storage_bytes"] == Limit()  # default
    assert set(merged) == set(METRICS)


def test_settings_thresholds_does_not_mutate_defaults():
    settings = Settings.from_config(FakeConfig(cli={options.OPT_THRESHOLD: {"time": Limit(enabled=False)}}))
    settings_for_test(settings, MarkerSettings(thresholds={"kernels": Limit(absolute=1.0)}))
    assert DEFAULT_THRESHOLDS["time"] == Limit(relative=0.05)
    assert DEFAULT_THRESHOLDS["kernels"] == Limit()


class FakeConfig:
    def __init__(self, cli=None, ini=None, rootpath=Path("/root/project")):
        self.cli = cli or {}
        self.ini = ini or {}
        self.rootpath = rootpath

    def getoption(self, name):
        return self.cli.get(name, False if name == options.OPT_UPDATE else None)

    def getini(self, name):
        return self.ini.get(name, "baselines" if name == options.OPT_BASELINES else "")


def test_settings_from_config_defaults():
    settings = Settings.from_config(FakeConfig())
    assert settings == Settings(
        baseline_dir=Path("/root/project/baselines"),
        artifact_dir=Path("/root/project/baselines/artifacts"),
        tuning_db=Path("/root/project/baselines/tuning"),
    )
    assert (settings.tune_trials, settings.peers) == (None, ())
    assert (settings.alpha, settings.inconclusive, settings.other_machine, settings.confirm) == (
        0.05,
        "warn",
        "skip",
        True,
    )
    assert settings.noise == {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}


def test_settings_defaults_of_the_time_verdict():
    settings = Settings()
    assert settings.alpha == 0.05
    assert settings.inconclusive == "warn"
    assert settings.other_machine == "skip"
    assert settings.confirm is True
    assert settings.noise == {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}
    assert settings.artifact_dir == Path("baselines/artifacts")


def test_settings_noise_default_is_a_copy():
    settings = Settings()
    settings.noise["ab"] = 0.5
    assert Settings().noise["ab"] == 0.02
    assert parsing.DEFAULT_NOISE == {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}


def test_settings_from_config_reads_time_verdict_ini():
    settings = Settings.from_config(
        FakeConfig(
            ini={
                options.OPT_ALPHA: "1%",
                options.OPT_INCONCLUSIVE: "fail",
                options.OPT_OTHER_MACHINE: "skip",
                options.OPT_CONFIRM: "no",
                options.OPT_NOISE: "raw=20%",
                options.OPT_ARTIFACTS: "saved",
            }
        )
    )
    assert settings.alpha == pytest.approx(0.01)
    assert (settings.inconclusive, settings.other_machine, settings.confirm) == ("fail", "skip", False)
    assert settings.noise == {"ab": 0.02, "normalized": 0.1, "raw": pytest.approx(0.2), "ratio": 0.07}
    assert settings.artifact_dir == Path("/root/project/baselines/saved")


def test_settings_from_config_cli_beats_ini_for_time_verdict():
    settings = Settings.from_config(
        FakeConfig(
            cli={
                options.OPT_ALPHA: 0.2,
                options.OPT_INCONCLUSIVE: "pass",
                options.OPT_OTHER_MACHINE: "normalized",
                options.OPT_CONFIRM: False,
                options.OPT_NOISE: {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07},
                options.OPT_ARTIFACTS: "cli_art",
                options.OPT_BASELINES: "b",
            },
            ini={
                options.OPT_ALPHA: "0.01",
                options.OPT_INCONCLUSIVE: "fail",
                options.OPT_OTHER_MACHINE: "skip",
                options.OPT_CONFIRM: "true",
                options.OPT_NOISE: "ab=5%",
                options.OPT_ARTIFACTS: "ini_art",
            },
        )
    )
    assert (settings.alpha, settings.inconclusive, settings.other_machine) == (0.2, "pass", "normalized")
    assert settings.confirm is False  # a CLI False is a value, not "unset"
    assert settings.noise == {"ab": 0.02, "normalized": 0.1, "raw": 0.15, "ratio": 0.07}
    assert settings.artifact_dir == Path("/root/project/b/cli_art")


@pytest.mark.parametrize("value", ["off", "OFF", " Off "])
def test_settings_from_config_artifacts_off(value):
    assert Settings.from_config(FakeConfig(ini={options.OPT_ARTIFACTS: value})).artifact_dir is None
    assert Settings.from_config(FakeConfig(cli={options.OPT_ARTIFACTS: value})).artifact_dir is None


def test_settings_from_config_reads_ini():
    settings = Settings.from_config(
        FakeConfig(
            ini={
                options.OPT_EXECUTORS: "prim",
                options.OPT_TARGETS: "cuda,llvm",
                options.OPT_BASELINES: "perf/base",
                options.OPT_THRESHOLD: "time=30%",
                options.OPT_REPEAT: "4",
                options.OPT_MIN_REPEAT_MS: "9",
                options.OPT_EXAMPLES: "2",
            }
        )
    )
    assert settings.executors == ("prim",)
    assert settings.targets == ("cuda", "llvm")
    assert settings.baseline_dir == Path("/root/project/perf/base")
    assert settings.thresholds == {**DEFAULT_THRESHOLDS, "time": Limit(relative=0.3)}
    assert settings.pinned_thresholds == frozenset()
    assert (settings.repeat, settings.min_repeat_ms, settings.hypothesis_examples) == (4, 9, 2)


def test_settings_from_config_cli_beats_ini():
    settings = Settings.from_config(
        FakeConfig(
            cli={
                options.OPT_EXECUTORS: ("vm-compiled",),
                options.OPT_REPEAT: 2,
                options.OPT_UPDATE: True,
                options.OPT_BASELINES: "cli_dir",
                options.OPT_THRESHOLD: {"time": Limit(enabled=False)},
            },
            ini={
                options.OPT_EXECUTORS: "prim",
                options.OPT_REPEAT: "4",
                options.OPT_BASELINES: "ini_dir",
                options.OPT_THRESHOLD: "time=30%",
            },
        )
    )
    assert settings.executors == ("vm-compiled",)
    assert settings.repeat == 2
    assert settings.update is True
    assert settings.baseline_dir == Path("/root/project/cli_dir")
    assert settings.thresholds["time"] == Limit(enabled=False)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (options.OPT_REPEAT, "0"),
        (options.OPT_EXECUTORS, "graph"),
        (options.OPT_THRESHOLD, "time=fast"),
        (options.OPT_MIN_REPEAT_MS, "abc"),
        (options.OPT_ALPHA, "2"),
        (options.OPT_INCONCLUSIVE, "ignore"),
        (options.OPT_OTHER_MACHINE, "any"),
        (options.OPT_CONFIRM, "maybe"),
        (options.OPT_NOISE, "ab=1"),
    ],
)
def test_settings_from_config_bad_ini_names_key(key, value):
    with pytest.raises(ValueError) as info:
        Settings.from_config(FakeConfig(ini={key: value}))
    assert str(info.value).startswith(f"ini option {key} = {value!r}: ")


def test_the_tuned_and_same_program_modes_read_any_case_and_name_each_choice():
    assert parsing.parse_tuned(" Exact ") == "exact" and parsing.parse_same_program("TIME") == "time"
    with pytest.raises(ValueError) as tuned:
        parsing.parse_tuned("all")
    assert str(tuned.value) == (
        "'all' is not a tuned mode; expected any (records of other CPUs or GPUs of the same kind apply where "
        "they can) or exact (this target's own records only)"
    )
    with pytest.raises(ValueError) as same:
        parsing.parse_same_program("never")
    assert str(same.value) == (
        "'never' is not a same-program mode; expected skip (an unchanged program is not timed against its "
        "baseline) or time (it is timed side by side all the same)"
    )
