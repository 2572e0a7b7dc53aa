"""Pure value parsers of the plugin's options and marker keywords, and the value domains
they check against (executors, targets, metrics, peers, time-verdict policies).

Every parser raises :class:`ValueError` naming the bad value and showing a good one;
the caller words it as a usage error naming the flag, ini key or test.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable, Mapping

from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS
from pytest_tvmperf.values.resources import RESOURCE_ALIASES, SELECTABLE_NAMES
from pytest_tvmperf.values.executor_rows import EXECUTOR_NAMES

EXECUTORS: tuple[str, ...] = EXECUTOR_NAMES
#: what a run selects unless told: vm-cudagraph (cuda only) is asked for by name
DEFAULT_EXECUTORS: tuple[str, ...] = ("vm-bytecode", "vm-compiled", "prim")
TARGETS: tuple[str, ...] = ("llvm", "cuda")

#: metrics that can carry a threshold, and what a bare number means for each
TIME_METRIC = "time"
EXACT_METRICS: tuple[str, ...] = ("instructions", "calls", "kernels", "storage_bytes")
#: per-kernel metrics of the registered metric sources (values/kernel_metrics.py)
KERNEL_METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in KERNEL_METRICS)
#: resources a deployment pays (values/resources.py): alloc_bytes, code_bytes, peak_bytes, device_peak_bytes, compile_s
RESOURCE_METRICS: tuple[str, ...] = SELECTABLE_NAMES
METRICS: tuple[str, ...] = (TIME_METRIC, *EXACT_METRICS, *KERNEL_METRIC_NAMES, *RESOURCE_METRICS)


def canonical_metric(name: str) -> str:
    """A threshold's metric under its own name (``code`` is ``code_bytes``)."""
    return RESOURCE_ALIASES.get(name, name)


def parse_resources(text: str | bool | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``--tvmperf-resources`` / ``resources=``: the resource metrics measured, e.g.
    ``alloc_bytes`` (``code`` for ``code_bytes``), ``all`` or ``none`` (also on/off)."""
    word = text.strip().lower() if isinstance(text, str) else text
    if word is True or word in ("all", *SWITCH_ON):
        return RESOURCE_METRICS
    if word is False or word in ("none", *SWITCH_OFF):
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    return _parse_choices([canonical_metric(str(i).strip()) for i in items], RESOURCE_METRICS, "resource metric")


#: peer frameworks a workload can be timed against, and the marker keyword gating each
PEERS: tuple[str, ...] = ("numpy", "torch", "onnxruntime")
PEER_MARKER_KEYS: dict[str, str] = {f"vs_{p}": p for p in PEERS}

#: The smallest slowdown worth failing for. A slowdown fails only when it is also
#: significant (see timestats.py), so the threshold can sit below the noise of one
#: sample: 5% lets a real 10% slowdown be caught (benchmarks/, README).
DEFAULT_TIME_THRESHOLD = "5%"
#: the run's false-alarm rate (also the default of ``config.time_policy.TimePolicy``)
DEFAULT_ALPHA = 0.05
INCONCLUSIVE_POLICIES = ("fail", "warn", "pass")
OTHER_MACHINE_POLICIES = ("normalized", "skip")
NOISE_MODES = ("ab", "normalized", "raw", "ratio")
#: The one place of the noise defaults (``config.time_policy.TimePolicy`` and ``--tvmperf-noise``).
#: ``ratio``: TVM over a peer framework, or one build over another (assert_ratio), in one
#: process. The normalized false-alarm benchmark puts the difference of two such in-process
#: ratios of different programs (workload over reference kernel) between processes at
#: ~10%, so one ratio moves by ~10%/sqrt(2) = 7%.
DEFAULT_NOISE: Mapping[str, float] = {"ab": 0.02, "normalized": 0.10, "raw": 0.15, "ratio": 0.07}


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
    word = text.strip().lower() if isinstance(text, str) else None
    return () if word in ("none", "off") else PEERS if word == "all" else _parse_choices(text, PEERS, "peer")


def parse_executors(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return _parse_choices(text, EXECUTORS, "executor")


def parse_targets(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    from pytest_tvmperf.values.remote_names import SEPARATOR, split_remote

    items = [i.strip() for i in (text.split(",") if isinstance(text, str) else list(text))]
    remote = [i for i in items if SEPARATOR in i and split_remote(i)]  # llvm@rpc:KEY; a malformed one raises
    local = [i for i in items if SEPARATOR not in i]
    if local or not remote:
        _parse_choices(local, TARGETS, "target")
    return tuple(dict.fromkeys(i for i in items if i))


def parse_alpha(text: str) -> float:
    try:
        value = float(str(text).strip().rstrip("%")) / (100.0 if str(text).strip().endswith("%") else 1.0)
    except ValueError:
        raise ValueError(f"bad false-alarm rate {text!r}: write a probability such as 0.05 or 5%") from None
    if not 0 < value < 1:
        raise ValueError(f"bad false-alarm rate {text!r}: it must lie strictly between 0 and 1")
    return value


def _one_of(known: tuple[str, ...], what: str, name: str) -> Callable[[Any], str]:
    """A parser (named ``name``) of exactly one of ``known``."""

    def parse(text: Any) -> str:
        names = _parse_choices(str(text), known, what)
        if len(names) != 1:
            raise ValueError(
                f"one {what} expected, got {', '.join(map(repr, names))}; choose one of {', '.join(known)}"
            )
        return names[0]

    parse.__name__ = name
    return parse


parse_inconclusive = _one_of(INCONCLUSIVE_POLICIES, "inconclusive policy", "parse_inconclusive")
parse_other_machine = _one_of(OTHER_MACHINE_POLICIES, "other-machine policy", "parse_other_machine")
#: what --tvmperf-update stores of each test's program for a/b timing
BASELINE_PROGRAMS = ("ir", "so")
parse_baseline_program = _one_of(BASELINE_PROGRAMS, "baseline program form", "parse_baseline_program")
#: what --tvmperf-update stores of a program's weights: seeded (dtype, shape and digest;
#: rebuilt with seeded values, store/seeded.py) or exact (their values, bit for bit)
BASELINE_WEIGHTS = ("seeded", "exact")
parse_baseline_weights = _one_of(BASELINE_WEIGHTS, "baseline weights form", "parse_baseline_weights")


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
            raise ValueError(
                f"bad noise {part!r}: write MODE=PERCENT with MODE one of {', '.join(NOISE_MODES)}, e.g. 'normalized=3%'"
            )
        try:
            number = float(value.strip().rstrip("%")) / 100.0
        except ValueError:
            number = -1.0
        if not value.strip().endswith("%") or not 0 <= number < 10:
            raise ValueError(f"bad noise {part!r}: the value is a percentage, e.g. '{mode}=3%'")
        result[mode] = number
    return result


#: The one vocabulary of every on/off setting (command line, ini and marker alike); a
#: marker may also give a Python bool.
SWITCH_ON: tuple[str, ...] = ("on", "true", "yes", "1")
SWITCH_OFF: tuple[str, ...] = ("off", "false", "no", "0")
SWITCH_WORDS = "on or off (also true/false, yes/no, 1/0)"


def parse_switch(value: Any) -> bool:
    """An on/off setting: a word of :data:`SWITCH_ON` or :data:`SWITCH_OFF` (any case), or a bool."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in SWITCH_ON:
        return True
    if word in SWITCH_OFF:
        return False
    raise ValueError(f"expected {SWITCH_WORDS}, got {value!r}")


def parse_simulate(text: str | bool) -> str:
    """``--tvmperf-simulate`` / ``simulate=``: "on" or "off", from any word of :func:`parse_switch`."""
    return "on" if parse_switch(text) else "off"


#: the largest count TVM takes (its ``int`` arguments are 32-bit)
INT32_MAX = 2**31 - 1


def bounded_int(low: int, high: int, what: str, name: str) -> Callable[[Any], int]:
    """A parser (named ``name``) of a whole number from ``low`` to ``high``; the error says the range."""

    def parse(text: Any) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:  # also a number of thousands of digits
            value = None
        if value is None or not low <= value <= high:
            shown = text if len(str(text)) <= 40 else f"{str(text)[:20]}... ({len(str(text))} characters)"
            raise ValueError(f"expected {what} from {low} to {high}, got {shown!r}")
        return value

    parse.__name__ = name
    return parse


#: the largest size an environment variable in MB may give: a pebibyte (past it no cap means anything)
MAX_SIZE_MB = 2**30


def parse_size_mb(name: str, raw: str | None, default: int) -> int:
    """Bytes from the environment variable ``name`` in MB (``raw`` its text; unset or
    empty: ``default`` MB). Anything but a positive number up to :data:`MAX_SIZE_MB`
    (``inf``, ``nan``, ``1e400``, a word) raises ValueError naming the variable."""
    if raw is None or not str(raw).strip():
        return int(default) * 2**20
    try:
        mb = float(str(raw).strip())
    except ValueError:
        mb = float("nan")
    if not 0 < mb <= MAX_SIZE_MB:  # also nan and inf
        shown = raw if len(str(raw)) <= 40 else f"{str(raw)[:20]}... ({len(str(raw))} characters)"
        raise ValueError(
            f"environment variable {name}={shown!r}: expected a positive number of MB up to "
            f"{MAX_SIZE_MB} (default {default}); set a number such as {name}={default}, or unset it"
        )
    return max(1, int(mb * 2**20))


#: any count option: a positive whole number that a 32-bit int holds
positive_int = bounded_int(1, INT32_MAX, "a positive integer", "positive_int")
#: one time sample at least this long: a minute is plenty (TVM ignores a value past 32 bits)
MAX_MIN_REPEAT_MS = 60_000
parse_min_repeat_ms = bounded_int(1, MAX_MIN_REPEAT_MS, "milliseconds per time sample", "parse_min_repeat_ms")
#: the longest a call to an RPC device may take: a day (a wait past ~292 years overflows)
MAX_RPC_TIMEOUT_S = 86_400
parse_rpc_timeout = bounded_int(1, MAX_RPC_TIMEOUT_S, "seconds", "parse_rpc_timeout")


def argparse_type(parser: Callable[[str], Any]) -> Callable[[str], Any]:
    """Wrap a ValueError-raising parser so argparse reports a usage error."""

    def convert(text: str):
        try:
            return parser(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parser.__name__
    return convert


def _one_mode(modes: tuple[str, ...], expected: str, name: str) -> Callable[[Any], str]:
    """A parser (named ``name``) of one of ``modes`` (any case, outer white space ignored)."""

    def parse(text: Any) -> str:
        value = str(text).strip().lower()
        if value not in modes:
            raise ValueError(f"{text!r} is not {expected}")
        return value

    parse.__name__ = name
    return parse


#: ``--tvmperf-tuned``: which tuning records a tuned build takes (builder/tuning_choice.py)
TUNED_MODES = ("any", "exact")
parse_tuned = _one_mode(
    TUNED_MODES,
    "a tuned mode; expected any (records of other CPUs or GPUs of the same kind apply where they can) "
    "or exact (this target's own records only)",
    "parse_tuned",
)
#: ``--tvmperf-same-program``: what a gate does when this build's program is the baseline's own
SAME_PROGRAM_MODES = ("skip", "time")
parse_same_program = _one_mode(
    SAME_PROGRAM_MODES,
    "a same-program mode; expected skip (an unchanged program is not timed against its baseline) "
    "or time (it is timed side by side all the same)",
    "parse_same_program",
)


#: the forms a duration takes, as every message about one lists them
DURATION_FORMS = "90s, 30m, 1.5h, 1h30m, or a number of seconds (90)"
_DURATION_UNITS = (3600.0, 60.0, 1.0)  # h, m, s


def parse_duration(text: str) -> float:
    """A positive wall-clock duration in seconds from ``90s``, ``30m``, ``1.5h``, ``1h30m`` or ``90``."""
    raw = str(text).strip().lower().replace(" ", "")
    # the units in this order, each once
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", raw)
    if re.fullmatch(r"\d+(?:\.\d+)?", raw):
        seconds = float(raw)
    elif parts and raw:
        seconds = sum(float(n) * unit for n, unit in zip(parts.groups(), _DURATION_UNITS) if n is not None)
    else:
        raise ValueError(f"{text!r} is not a duration; accepted forms: {DURATION_FORMS}")
    if not seconds > 0:
        raise ValueError(f"{text!r}: a duration must be more than 0; accepted forms: {DURATION_FORMS}")
    return seconds


#: ``--tvmperf-against-tvm``: a release of apache-tvm (against/env.py builds its environment)
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!-]*$")


def parse_version(text: str) -> str:
    """``--tvmperf-against-tvm``'s value: a release of apache-tvm such as ``0.26.0``."""
    text = str(text).strip().removeprefix("apache-tvm==")
    if not _VERSION.match(text):
        raise ValueError(f"{text!r} is not a version of apache-tvm: give one such as 0.26.0")
    return text


def parse_packages(text) -> tuple[str, ...]:
    """``--tvmperf-against-tvm-packages``: more packages the other environment needs to
    build the tests' workloads (``onnx,onnxruntime,torch``), each a name with an
    optional ``==VERSION`` (a bare name gets today's installed version)."""
    items = [p for p in re.split(r"[,\s]+", str(text).strip()) if p]
    for item in items:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(==[0-9][0-9A-Za-z.+!-]*)?", item):
            raise ValueError(f"{item!r} is not a package name (with an optional ==VERSION), e.g. onnx or torch==2.4.0")
    return tuple(items)
