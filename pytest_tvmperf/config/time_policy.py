"""How the time verdict weighs its evidence: the policy the options set and judge/compare.py
applies (config's, so that the options build it without importing the judge)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal, Mapping

from pytest_tvmperf.config.parsing import DEFAULT_ALPHA, DEFAULT_NOISE, parse_duration


@dataclass(frozen=True)
class TimePolicy:
    """How the time verdict weighs its evidence. alpha: two-sided false-alarm probability of
    one comparison (the run's rate divided by the number of timed tests); noise_*: standard
    deviation of the log ratio that the samples cannot show, per mode (a/b against the
    baseline's artifact timed side by side; normalized by the reference kernel; raw);
    other_machine: "normalized" compares with another machine's baseline in normalized form
    (noise doubled), "skip" shows the time without gating it."""

    alpha: float = DEFAULT_ALPHA
    noise_ab: float = DEFAULT_NOISE["ab"]
    noise_normalized: float = DEFAULT_NOISE["normalized"]
    noise_raw: float = DEFAULT_NOISE["raw"]
    other_machine: str = "normalized"
    noise_ratio: float = DEFAULT_NOISE["ratio"]
    #: the independent measurements (each with both programs loaded anew) the samples pool: an a/b
    #: comparison's process-level allowances (its noise, a busy machine's) shrink by sqrt(loads)
    loads: int = 1
    #: "significant": ``regressed`` once the interval clears 1 and the ratio its limit (the first
    #: measurement and its confirmation); "wholly": only when the whole interval lies past the
    #: limit (the later looks of measuring until decided, judge/confirmation.py :func:`settle`)
    fail_rule: Literal["significant", "wholly"] = "significant"

    def at_look(self, look: int, loads: int) -> "TimePolicy":
        """The policy of look ``look`` (1, 2, ...) of measuring a borderline verdict until it is
        decided: the alpha that look spends (:func:`spent_alpha`), ``loads`` measurements pooled,
        and a failure only wholly past the limit."""
        return replace(self, alpha=spent_alpha(self.alpha, look), loads=loads, fail_rule="wholly")

    def shrink(self, allowance: float) -> float:
        """A process-level ``allowance`` over the :attr:`loads` pooled (a/b: each load a new draw)."""
        return allowance / math.sqrt(max(1, self.loads))


def spent_alpha(alpha: float, look: int) -> float:
    """The two-sided alpha look ``look`` (1, 2, ...) after the first measurement and its confirmation
    spends: ``alpha / 2**(look + 1)``, so all later looks together spend at most ``alpha / 2``. A false
    failure needs a regression on one side: at most ``alpha / 2`` from the first measurement with its
    confirmation, at most ``alpha / 4`` from every later look together (an alpha-spending rule with
    a Bonferroni bound over the looks, docs/gate.md): under ``alpha`` however many looks are taken."""
    if look < 1:
        raise ValueError(f"a later look is numbered from 1, got {look}")
    return alpha / 2 ** (look + 1)


#: what measuring a borderline time verdict until it is decided may add to one test, by default
DEFAULT_DECIDE_BUDGET_S = 60.0
DEFAULT_DECIDE_ROUNDS = 1000
DECIDE_BUDGET_FORMS = "a duration (60s, 2m), a duration and a number of rounds (60s,1000), or off"


@dataclass(frozen=True)
class DecideBudget:
    """What measuring a borderline time verdict until it is decided may add to one test
    (``--tvmperf-decide-budget``, marker ``decide_budget=``): the wall-clock seconds and the
    rounds, whichever is spent first; ``rounds=0``: off (a borderline verdict is inconclusive
    after its confirmation, as before)."""

    seconds: float = DEFAULT_DECIDE_BUDGET_S
    rounds: int = DEFAULT_DECIDE_ROUNDS

    @property
    def enabled(self) -> bool:
        return self.rounds > 0

    def describe(self) -> str:
        return f"{self.seconds:g} s or {self.rounds} rounds" if self.enabled else "off"

    def less(self, seconds: float, rounds: int) -> "DecideBudget":
        """What is left once ``seconds`` and ``rounds`` are spent (one budget for a test's verdicts);
        off once its rounds are; the description stays the budget's own."""
        if not self.enabled:
            return self
        return DecideBudget(max(0.0, self.seconds - seconds), max(0, self.rounds - rounds))


def parse_decide_budget(text: str | float | int) -> DecideBudget:
    """``60s``, ``2m,500``, ``90,1000`` or ``off``; ValueError on zero, a fraction of a round or junk."""
    raw = str(text).strip().lower()
    if raw in ("off", "none", "false"):
        return DecideBudget(0.0, 0)
    duration, sep, rounds = raw.partition(",")
    try:
        seconds = parse_duration(duration)
    except ValueError as exc:
        raise ValueError(f"{exc}; the budget is {DECIDE_BUDGET_FORMS}") from None
    if not sep:
        return DecideBudget(seconds)
    if not re.fullmatch(r"\s*\d+\s*", rounds) or int(rounds) < 1:
        raise ValueError(
            f"{text!r}: the rounds must be a whole number of at least 1; the budget is {DECIDE_BUDGET_FORMS}"
        )
    return DecideBudget(seconds, int(rounds))


def time_policy(alpha: float, noise: Mapping[str, float], other_machine: str, comparisons: int = 1) -> TimePolicy:
    """The one constructor of the time verdict's policy: the false-alarm rate ``alpha`` is
    split evenly over the ``comparisons`` (Bonferroni), so a suite of many cases does not
    fail by chance; ``noise`` per mode as :func:`parse_noise` gives it."""
    noises = {f"noise_{mode}": noise[mode] for mode in ("ab", "normalized", "raw", "ratio")}
    return TimePolicy(alpha=alpha / max(1, comparisons), other_machine=other_machine, **noises)
