"""Option names, value parsers and the frozen :class:`Settings` built from them.

Every parser raises :class:`ValueError` with a message that names the bad value and
shows a good one; ``argparse`` turns that into a usage error at start-up.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

EXECUTORS: tuple[str, ...] = ("vm-bytecode", "vm-compiled", "prim")
TARGETS: tuple[str, ...] = ("llvm", "cuda")

#: metrics that can carry a threshold, and what a bare number means for each
TIME_METRIC = "time"
EXACT_METRICS: tuple[str, ...] = ("instructions", "calls", "kernels", "storage_bytes")
METRICS: tuple[str, ...] = (TIME_METRIC, *EXACT_METRICS)

OPT_EXECUTORS = "tvmperf_executors"
OPT_TARGETS = "tvmperf_targets"
OPT_UPDATE = "tvmperf_update"
OPT_BASELINES = "tvmperf_baselines"
OPT_THRESHOLD = "tvmperf_threshold"
OPT_REPEAT = "tvmperf_repeat"
OPT_MIN_REPEAT_MS = "tvmperf_min_repeat_ms"
OPT_EXAMPLES = "tvmperf_hypothesis_examples"
OPT_ALPHA = "tvmperf_alpha"
OPT_INCONCLUSIVE = "tvmperf_inconclusive"
OPT_OTHER_MACHINE = "tvmperf_other_machine"
OPT_CONFIRM = "tvmperf_confirm"
OPT_NOISE = "tvmperf_noise"
OPT_ARTIFACTS = "tvmperf_artifacts"
OPT_JSON = "tvmperf_json"
OPT_HTML = "tvmperf_html"
OPT_HISTORY = "tvmperf_history"
OPT_PRUNE = "tvmperf_prune"
OPT_TUNING_DB = "tvmperf_tuning_db"
OPT_TUNE = "tvmperf_tune"
OPT_PEERS = "tvmperf_peers"

#: peer frameworks a workload can be timed against, and the marker keyword gating each
PEERS: tuple[str, ...] = ("numpy", "torch", "onnxruntime")
PEER_MARKER_KEYS: dict[str, str] = {f"vs_{p}": p for p in PEERS}
DEFAULT_TUNING_DB = "tuning"

#: The smallest slowdown worth failing for. A slowdown fails only when it is also
#: significant (see timestats.py), so the threshold can sit below the noise of one
#: sample: 5% lets a real 10% slowdown be caught (benchmarks/, README).
DEFAULT_TIME_THRESHOLD = "5%"
DEFAULT_ALPHA = 0.05
INCONCLUSIVE_POLICIES = ("fail", "warn", "pass")
OTHER_MACHINE_POLICIES = ("normalized", "skip")
NOISE_MODES = ("ab", "normalized", "raw", "ratio")
#: ``ratio``: TVM over a peer framework, or one build over another (assert_ratio), in one
#: process. The normalized false-alarm benchmark puts the difference of two such in-process
#: ratios of different programs (workload over reference kernel) between processes at
#: ~10%, so one ratio moves by ~10%/sqrt(2) = 7%.
DEFAULT_NOISE = {"ab": 0.02, "normalized": 0.10, "raw": 0.15, "ratio": 0.07}
DEFAULT_REPEAT = 15
DEFAULT_MIN_REPEAT_MS = 20
DEFAULT_EXAMPLES = 8


@dataclass(frozen=True)
class Limit:
    """How much a metric may grow before it counts as a regression.

    ``relative`` is a fraction of the baseline (0.15 for "15%"), ``absolute`` an amount
    in the metric's unit; both ``None`` means no growth is allowed. ``enabled=False``
    switches the gate off for that metric ("off").
    """

    relative: float | None = None
    absolute: float | None = None
    enabled: bool = True

    def allowed_max(self, baseline: float) -> float:
        if not self.enabled:
            return float("inf")
        if self.relative is not None:
            return baseline * (1.0 + self.relative)
        if self.absolute is not None:
            return baseline + self.absolute
        return baseline

    def describe(self) -> str:
        if not self.enabled:
            return "off"
        if self.relative is not None:
            return f"+{self.relative * 100:g}%"
        if self.absolute is not None:
            return f"+{self.absolute:g}"
        return "no increase"


Thresholds = Mapping[str, Limit]


THRESHOLD_HELP = (
    "comma-separated METRIC=LIMIT, e.g. 'time=25%,instructions=0'. Metrics: "
    + ", ".join(METRICS)
    + ". time takes a percentage ('25%') or a ratio ('1.25x'); exact metrics take an "
    "allowed increase ('2') or a percentage ('5%'); 'off' stops gating that metric."
)


def parse_limit(metric: str, text: str) -> Limit:
    """Parse one LIMIT for ``metric``; raise ValueError naming what is wrong."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} in threshold; known metrics: {', '.join(METRICS)}")
    value = str(text).strip().lower()
    if "nan" in value or "inf" in value:
        value = "?"  # not a finite number: rejected below with the usual hint
    if value == "off":
        return Limit(enabled=False)
    try:
        if not math.isfinite(float(value.rstrip("%x") or "nan")):
            raise ValueError  # 1e400 is inf: no limit is written so
        if value.endswith("%"):
            number = float(value[:-1])
            if number < 0:
                raise ValueError
            return Limit(relative=number / 100.0)
        if value.endswith("x"):
            number = float(value[:-1])
            if number < 1:
                raise ValueError
            return Limit(relative=number - 1.0)
        if metric == TIME_METRIC:
            raise ValueError
        number = float(value)
        if number < 0:
            raise ValueError
        return Limit(absolute=number)
    except ValueError:
        hint = "'25%' or '1.25x'" if metric == TIME_METRIC else "'0', '2' or '5%'"
        raise ValueError(
            f"bad threshold {metric}={text!r}: write {metric}={hint.split(' or ')[0]} (or {hint}, or 'off')"
        ) from None


def parse_thresholds(text: str) -> dict[str, Limit]:
    """Parse 'time=25%,instructions=0' into {metric: Limit}."""
    result: dict[str, Limit] = {}
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"bad threshold {part!r}: expected METRIC=LIMIT, e.g. 'time=25%'")
        metric, _, value = part.partition("=")
        result[metric.strip()] = parse_limit(metric.strip(), value)
    return result


DEFAULT_THRESHOLDS: dict[str, Limit] = {
    TIME_METRIC: parse_limit(TIME_METRIC, DEFAULT_TIME_THRESHOLD),
    **{m: Limit() for m in EXACT_METRICS},
}


def thresholds_from_marker(kwargs: Mapping[str, Any]) -> dict[str, Limit]:
    """Threshold keywords of ``@pytest.mark.tvmperf(time="25%", instructions=2)``."""
    return {k: parse_limit(k, v) for k, v in kwargs.items() if k in METRICS}


def _parse_choices(text: str | list[str] | tuple[str, ...], known: tuple[str, ...], what: str) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
    if not names:
        raise ValueError(f"no {what} given; choose from {', '.join(known)}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(map(repr, unknown))}; choose from {', '.join(known)}")
    return names


def parse_peers(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """'numpy,torch', 'all' or 'none'."""
    if isinstance(text, str) and text.strip().lower() in ("none", "off"):
        return ()
    if isinstance(text, str) and text.strip().lower() == "all":
        return PEERS
    return _parse_choices(text, PEERS, "peer")


def parse_peer_limit(key: str, value: Any) -> float:
    """``vs_torch=1.2`` (or '1.2x'): TVM may take at most 1.2 times the peer's time."""
    text = str(value).strip().lower().removesuffix("x")
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if not (number > 0 and number < float("inf")):
        raise ValueError(f"bad {key}={value!r}: write the most TVM may take relative to the peer, e.g. {key}=1.2 (or '1.2x')")
    return number


def peer_limits_from_marker(kwargs: Mapping[str, Any]) -> dict[str, float]:
    """``@pytest.mark.tvmperf(vs_torch=1.2)`` -> {"torch": 1.2}."""
    return {PEER_MARKER_KEYS[k]: parse_peer_limit(k, v) for k, v in kwargs.items() if k in PEER_MARKER_KEYS}


def parse_executors(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return _parse_choices(text, EXECUTORS, "executor")


def parse_targets(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return _parse_choices(text, TARGETS, "target")


def parse_alpha(text: str) -> float:
    try:
        value = float(str(text).strip().rstrip("%")) / (100.0 if str(text).strip().endswith("%") else 1.0)
    except ValueError:
        raise ValueError(f"bad false-alarm rate {text!r}: write a probability such as 0.05 or 5%") from None
    if not 0 < value < 1:
        raise ValueError(f"bad false-alarm rate {text!r}: it must lie strictly between 0 and 1")
    return value


def _parse_one(text: str, known: tuple[str, ...], what: str) -> str:
    names = _parse_choices(str(text), known, what)
    if len(names) != 1:
        raise ValueError(f"one {what} expected, got {', '.join(map(repr, names))}; choose one of {', '.join(known)}")
    return names[0]


def parse_inconclusive(text: str) -> str:
    return _parse_one(text, INCONCLUSIVE_POLICIES, "inconclusive policy")


def parse_other_machine(text: str) -> str:
    return _parse_one(text, OTHER_MACHINE_POLICIES, "other-machine policy")


def parse_noise(text: str) -> dict[str, float]:
    """'normalized=3%,ab=1%' -> {mode: fraction}; modes not named keep their default."""
    result = dict(DEFAULT_NOISE)
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        mode, sep, value = part.partition("=")
        mode = mode.strip()
        if not sep or mode not in NOISE_MODES:
            raise ValueError(f"bad noise {part!r}: write MODE=PERCENT with MODE one of {', '.join(NOISE_MODES)}, e.g. 'normalized=3%'")
        try:
            number = float(value.strip().rstrip("%")) / 100.0
        except ValueError:
            number = -1.0
        if not value.strip().endswith("%") or not 0 <= number < 10:
            raise ValueError(f"bad noise {part!r}: the value is a percentage, e.g. '{mode}=3%'")
        result[mode] = number
    return result


def parse_bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise ValueError(f"expected a positive integer, got {text!r}")
    return value


def _argparse_type(parser):
    """Wrap a ValueError-raising parser so argparse reports a usage error."""

    def convert(text: str):
        try:
            return parser(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parser.__name__
    return convert


def addoption(parser) -> None:
    group = parser.getgroup("tvmperf", "TVM performance gate (pytest-tvmperf)")
    group.addoption("--tvmperf-executors", dest=OPT_EXECUTORS, type=_argparse_type(parse_executors),
                    default=None, help=f"comma-separated executors to run each tvmperf test under ({', '.join(EXECUTORS)}); default: all")
    group.addoption("--tvmperf-targets", dest=OPT_TARGETS, type=_argparse_type(parse_targets),
                    default=None, help=f"comma-separated targets ({', '.join(TARGETS)}); default: llvm (the host CPU)")
    group.addoption("--tvmperf-update", dest=OPT_UPDATE, action="store_true", default=False,
                    help="write or rewrite the baselines of the tests that ran (and only those)")
    group.addoption("--tvmperf-baselines", dest=OPT_BASELINES, default=None, metavar="DIR",
                    help="directory of baseline JSON files, relative to the rootdir (default: baselines)")
    group.addoption("--tvmperf-threshold", dest=OPT_THRESHOLD, type=_argparse_type(parse_thresholds),
                    default=None, metavar="EXPR", help=THRESHOLD_HELP.replace("%", "%%"))
    group.addoption("--tvmperf-repeat", dest=OPT_REPEAT, type=_argparse_type(_positive_int), default=None,
                    help=f"time samples per test (default {DEFAULT_REPEAT})")
    group.addoption("--tvmperf-min-repeat-ms", dest=OPT_MIN_REPEAT_MS, type=_argparse_type(_positive_int),
                    default=None, help=f"minimum duration of one time sample in ms (default {DEFAULT_MIN_REPEAT_MS})")
    group.addoption("--tvmperf-hypothesis-examples", dest=OPT_EXAMPLES, type=_argparse_type(_positive_int),
                    default=None, help=f"Hypothesis examples for workloads with symbolic dims (default {DEFAULT_EXAMPLES})")
    group.addoption("--tvmperf-alpha", dest=OPT_ALPHA, type=_argparse_type(parse_alpha), default=None,
                    help=f"false-alarm rate of the whole run's time verdicts, split over its timed tests (default {DEFAULT_ALPHA})")
    group.addoption("--tvmperf-inconclusive", dest=OPT_INCONCLUSIVE, type=_argparse_type(parse_inconclusive), default=None,
                    help="what an inconclusive time verdict (noise larger than the threshold) does: fail, warn or pass (default warn)")
    group.addoption("--tvmperf-other-machine", dest=OPT_OTHER_MACHINE, type=_argparse_type(parse_other_machine), default=None,
                    help="with no time baseline of this machine: compare another machine's in normalized form, or skip (default skip)")
    group.addoption("--tvmperf-confirm", dest=OPT_CONFIRM, type=_argparse_type(parse_bool), default=None,
                    help="re-measure a suspected regression before failing (default true)")
    group.addoption("--tvmperf-noise", dest=OPT_NOISE, type=_argparse_type(parse_noise), default=None,
                    help="process-to-process noise the samples cannot show, per mode, e.g. 'ab=2%%,normalized=10%%,raw=15%%,ratio=7%%' (the defaults; ratio: peers and assert_ratio)")
    group.addoption("--tvmperf-artifacts", dest=OPT_ARTIFACTS, default=None, metavar="DIR|off",
                    help="where --tvmperf-update saves compiled artifacts for a/b timing, relative to the baseline directory (default artifacts), or off")
    group.addoption("--tvmperf-json", dest=OPT_JSON, default=None, metavar="PATH",
                    help="write every test's metrics, baseline and verdict as JSON")
    group.addoption("--tvmperf-html", dest=OPT_HTML, default=None, metavar="PATH",
                    help="write a self-contained HTML report with plots")
    group.addoption("--tvmperf-history", dest=OPT_HISTORY, default=None, metavar="PATH",
                    help="append this run to a history file (one JSON line per run); the HTML report plots the trend")
    group.addoption("--tvmperf-prune", dest=OPT_PRUNE, action="store_true", default=False,
                    help="with --tvmperf-update in a full run: remove baselines that no test used")
    group.addoption("--tvmperf-tuning-db", dest=OPT_TUNING_DB, default=None, metavar="DIR",
                    help=f"MetaSchedule tuning database for workloads with pipeline='tuned', relative to the baseline directory (default {DEFAULT_TUNING_DB})")
    group.addoption("--tvmperf-tune", dest=OPT_TUNE, type=_argparse_type(_positive_int), default=None, metavar="TRIALS",
                    help="tune the kernels of the tests' pipeline='tuned' workloads with this many MetaSchedule trials per workload, "
                         "adding the records to the tuning database, before measuring them")
    group.addoption("--tvmperf-peers", dest=OPT_PEERS, type=_argparse_type(parse_peers), default=None,
                    help=f"peer frameworks to time side by side with TVM where a workload has them ({', '.join(PEERS)}, all or none; default none; "
                         "a peer gated by a vs_<peer> marker keyword is always timed)")
    parser.addini(OPT_TUNING_DB, "tuning database directory, relative to the baseline directory", default="")
    parser.addini(OPT_PEERS, "peer frameworks to time side by side with TVM (numpy, torch, onnxruntime, all, none)", default="")
    parser.addini(OPT_EXECUTORS, "default executors for tvmperf tests", default="")
    parser.addini(OPT_ALPHA, "false-alarm rate of the whole run's time verdicts", default="")
    parser.addini(OPT_INCONCLUSIVE, "fail, warn or pass on an inconclusive time verdict", default="")
    parser.addini(OPT_OTHER_MACHINE, "normalized or skip: time against another machine's baseline", default="")
    parser.addini(OPT_CONFIRM, "re-measure a suspected regression before failing", default="")
    parser.addini(OPT_NOISE, "process-to-process noise per mode, e.g. 'ab=1%,normalized=3%'", default="")
    parser.addini(OPT_ARTIFACTS, "artifact directory relative to the baseline directory, or off", default="")
    parser.addini(OPT_TARGETS, "default targets for tvmperf tests", default="")
    parser.addini(OPT_BASELINES, "baseline directory, relative to the rootdir", default="baselines")
    parser.addini(OPT_THRESHOLD, THRESHOLD_HELP, default="")
    parser.addini(OPT_REPEAT, "time samples per test", default="")
    parser.addini(OPT_MIN_REPEAT_MS, "minimum duration of one time sample in ms", default="")
    parser.addini(OPT_EXAMPLES, "Hypothesis examples for workloads with symbolic dims", default="")


@dataclass(frozen=True)
class Settings:
    executors: tuple[str, ...] = EXECUTORS
    targets: tuple[str, ...] = ("llvm",)
    update: bool = False
    baseline_dir: Path = Path("baselines")
    cli_thresholds: Mapping[str, Limit] = field(default_factory=dict)
    ini_thresholds: Mapping[str, Limit] = field(default_factory=dict)
    repeat: int = DEFAULT_REPEAT
    min_repeat_ms: int = DEFAULT_MIN_REPEAT_MS
    hypothesis_examples: int = DEFAULT_EXAMPLES
    alpha: float = DEFAULT_ALPHA
    inconclusive: str = "warn"
    other_machine: str = "skip"
    confirm: bool = True
    noise: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_NOISE))
    artifact_dir: Path | None = Path("baselines/artifacts")
    json_path: Path | None = None
    html_path: Path | None = None
    history_path: Path | None = None
    prune: bool = False
    tuning_db: Path = Path("baselines/tuning")
    tune_trials: int | None = None
    peers: tuple[str, ...] = ()

    def thresholds(self, marker: Mapping[str, Limit] | None = None) -> dict[str, Limit]:
        """Effective thresholds: CLI over ini over the test's marker over defaults."""
        merged = dict(DEFAULT_THRESHOLDS)
        merged.update(marker or {})
        merged.update(self.ini_thresholds)
        merged.update(self.cli_thresholds)
        return merged

    @classmethod
    def from_config(cls, config) -> "Settings":
        """Build from CLI and ini; a bad ini value raises ValueError naming the key."""

        def pick(name: str, parse, default):
            cli = config.getoption(name)
            if cli is not None:
                return cli
            raw = config.getini(name)
            if raw in ("", None, []):
                return default
            try:
                return parse(raw)
            except ValueError as exc:
                raise ValueError(f"ini option {name} = {raw!r}: {exc}") from None

        ini_thresholds_raw = config.getini(OPT_THRESHOLD)
        try:
            ini_thresholds = parse_thresholds(ini_thresholds_raw) if ini_thresholds_raw else {}
        except ValueError as exc:
            raise ValueError(f"ini option {OPT_THRESHOLD} = {ini_thresholds_raw!r}: {exc}") from None
        baseline_dir = config.getoption(OPT_BASELINES) or config.getini(OPT_BASELINES) or "baselines"
        artifacts = config.getoption(OPT_ARTIFACTS) or config.getini(OPT_ARTIFACTS) or "artifacts"
        baseline_path = Path(config.rootpath, baseline_dir)
        return cls(
            executors=pick(OPT_EXECUTORS, parse_executors, EXECUTORS),
            targets=pick(OPT_TARGETS, parse_targets, ("llvm",)),
            update=bool(config.getoption(OPT_UPDATE)),
            baseline_dir=baseline_path,
            cli_thresholds=config.getoption(OPT_THRESHOLD) or {},
            ini_thresholds=ini_thresholds,
            repeat=pick(OPT_REPEAT, _positive_int, DEFAULT_REPEAT),
            min_repeat_ms=pick(OPT_MIN_REPEAT_MS, _positive_int, DEFAULT_MIN_REPEAT_MS),
            hypothesis_examples=pick(OPT_EXAMPLES, _positive_int, DEFAULT_EXAMPLES),
            alpha=pick(OPT_ALPHA, parse_alpha, DEFAULT_ALPHA),
            inconclusive=pick(OPT_INCONCLUSIVE, parse_inconclusive, "warn"),
            other_machine=pick(OPT_OTHER_MACHINE, parse_other_machine, "skip"),
            confirm=pick(OPT_CONFIRM, parse_bool, True),
            noise=pick(OPT_NOISE, parse_noise, dict(DEFAULT_NOISE)),
            artifact_dir=None if str(artifacts).strip().lower() == "off" else baseline_path / artifacts,
            json_path=_report_path(config, OPT_JSON),
            html_path=_report_path(config, OPT_HTML),
            history_path=_report_path(config, OPT_HISTORY),
            prune=bool(config.getoption(OPT_PRUNE)),
            tuning_db=baseline_path / (config.getoption(OPT_TUNING_DB) or config.getini(OPT_TUNING_DB) or DEFAULT_TUNING_DB),
            tune_trials=config.getoption(OPT_TUNE),
            peers=pick(OPT_PEERS, parse_peers, ()),
        )


def _report_path(config, name: str) -> Path | None:
    value = config.getoption(name)
    return None if not value else Path(config.invocation_params.dir, value)


#: options an accept command repeats: they decide which tests exist and where baselines go
PASSTHROUGH = ("--tvmperf-baselines", "--tvmperf-artifacts", "--tvmperf-executors", "--tvmperf-targets",
               "--tvmperf-tuning-db")


def passthrough_args(argv: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The PASSTHROUGH options of a command line, each as one ``--option=value``."""
    out: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        name, eq, value = str(arg).partition("=")
        if name in PASSTHROUGH:
            if eq:
                out.append(f"{name}={value}")
            elif i + 1 < len(args):
                out.append(f"{name}={args[i + 1]}")
    return tuple(out)
