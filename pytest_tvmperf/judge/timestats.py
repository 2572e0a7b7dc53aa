"""Pure statistics of the time verdict: samples in, a decision with its evidence out.

The ratio is current over baseline median time. Its confidence interval combines
the sampling uncertainty (a seeded bootstrap of the medians, so the same samples
always give the same verdict) with a noise allowance for what the samples of one
process cannot show: how much a whole process (or machine) differs from another.

Four outcomes, with ``t`` the threshold (the smallest slowdown worth failing for):

- ``regressed``: the interval lies above 1 and the ratio is above ``1 + t``;
- ``improved``: the interval lies below 1 and the ratio is below ``1 / (1 + t)``;
- ``pass``: neither, and a slowdown of ``t`` or more is ruled out: the one-sided 90%
  upper bound of the ratio is at most ``1 + t``; a pass is given with the interval it was
  decided on (80% two-sided, whose upper end is that bound), so that no line prints
  ``pass`` beside an interval reaching past its limit. With ``pass_rule="interval"`` (a
  ratio against a user's limit) a pass needs the whole (1 - alpha) interval at or under
  ``1 + t`` instead. With ``fail_rule="wholly"`` (compile time) ``regressed`` needs the whole
  interval past ``1 + t`` (``improved``: wholly under ``1 / (1 + t)``), and a pass the whole
  interval at or under ``1 + t``: an interval straddling the limit decides nothing;
- ``inconclusive``: otherwise: the noise is larger than the threshold, so such a
  slowdown can be neither shown nor ruled out.

The interval (and the ``regressed``/``improved`` calls) use ``alpha``, which the
plugin divides over the run's timed tests, so the false-alarm rate of the whole run
stays at the run's ``alpha``; ruling a slowdown out (``pass``) needs no such
correction, since calling ``pass`` wrongly does not fail anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, Sequence

import numpy as np

from pytest_tvmperf.judge.verdict import TimeStatus, Verdict

BOOTSTRAP_RESAMPLES = 2000
#: the estimates a time decision can be made on: the samples' wall time (a quiet machine),
#: or each side's own run time, its wall time less its own threads' CPU wait (a busy one)
WALL_TIME = "wall time"
OWN_RUN_TIME = "own run time"
#: one-sided 90% quantile: how sure "a slowdown of the threshold is ruled out" must be
Z_RULE_OUT = NormalDist().inv_cdf(0.90)


@dataclass(frozen=True)
class TimeDecision:
    status: TimeStatus
    ratio: float
    low: float
    high: float
    confidence: float
    #: how it compared: "a/b", "a/b, baseline rebuilt here", "a/b, baseline on its own inputs
    #: (shapes changed: ...)" (judge/compare.py ``ab_rebuilt_mode``), "normalized", "raw"; every
    #: mode that starts with "a/b" is a paired, side-by-side comparison (its rules and its noise)
    mode: str
    noise: float
    #: what the samples measured: :data:`WALL_TIME` or :data:`OWN_RUN_TIME`
    estimate: str = WALL_TIME
    #: how many values of today's series it was decided on (a/b: the paired rounds whose
    #: per-round ratios it took the median of); 0 where not told
    rounds: int = 0

    def describe(self) -> str:
        """'1.12x (99.5% CI 1.08-1.16x, a/b)'."""
        return f"{self.ratio:.2f}x ({self.confidence * 100:.3g}% CI {self.low:.2f}-{self.high:.2f}x, {self.mode})"


def bootstrap_se_log_ratio(now: Sequence[float], base: Sequence[float] | None, seed: int = 0) -> float:
    """Standard error of log(median(now) / median(base)), or of log(median(now)) when
    ``base`` is None (paired ratios), by a seeded bootstrap."""
    rng = np.random.default_rng(seed)
    a = np.log(np.asarray(now, dtype=float))
    idx = rng.integers(0, len(a), size=(BOOTSTRAP_RESAMPLES, len(a)))
    stat = np.median(a[idx], axis=1)
    if base is not None:
        b = np.log(np.asarray(base, dtype=float))
        jdx = rng.integers(0, len(b), size=(BOOTSTRAP_RESAMPLES, len(b)))
        stat = stat - np.median(b[jdx], axis=1)
    return float(np.std(stat))


def decide(
    now: Sequence[float],
    base: Sequence[float] | None,
    threshold: float,
    alpha: float,
    noise: float,
    mode: str,
    pass_rule: Literal["one-sided", "interval"] = "one-sided",
    fail_rule: Literal["significant", "wholly"] = "significant",
) -> TimeDecision:
    """Decide from raw samples: ``now`` and ``base`` in the same unit (seconds, or seconds
    over the reference kernel), or, ``base=None``, ``now`` the paired ratios current/baseline
    (a/b). ``threshold``: the least slowdown worth failing for (0.05 for 5%); ``alpha``: the
    two-sided false-alarm probability of this one comparison (already divided over the run's
    comparisons); ``noise``: the extra standard deviation of the log ratio the samples cannot
    show (process to process, machine to machine); ``pass_rule``, ``fail_rule``: see the module docstring."""
    if not now or (base is not None and not base):
        raise ValueError("decide() needs samples on both sides")
    log_ratio = math.log(float(np.median(now)))
    if base is not None:
        log_ratio -= math.log(float(np.median(base)))
    se = bootstrap_se_log_ratio(now, base)
    return decide_from(log_ratio, se, threshold, alpha, noise, mode, pass_rule, fail_rule, rounds=len(now))


def decide_from(
    log_ratio: float,
    se: float,
    threshold: float,
    alpha: float,
    noise: float,
    mode: str,
    pass_rule: Literal["one-sided", "interval"] = "one-sided",
    fail_rule: Literal["significant", "wholly"] = "significant",
    rounds: int = 0,
) -> TimeDecision:
    """:func:`decide` from the log ratio and its sampling standard error ``se`` (the samples'
    own; ``noise`` is added to it): the rule alone, for the sequential rule's simulations."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    se = math.hypot(se, noise)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    ratio, low, high = math.exp(log_ratio), math.exp(log_ratio - z * se), math.exp(log_ratio + z * se)
    upper90 = math.exp(log_ratio + Z_RULE_OUT * se)
    confidence = 1 - alpha
    status: TimeStatus
    if fail_rule == "wholly":
        if low > 1 + threshold:
            status = Verdict.REGRESSED
        elif high < 1 / (1 + threshold):
            status = Verdict.IMPROVED
        else:
            status = Verdict.PASS if high <= 1 + threshold else Verdict.INCONCLUSIVE
        return TimeDecision(status, ratio, low, high, confidence, mode, noise, rounds=rounds)
    if low > 1 and ratio > 1 + threshold:
        status = Verdict.REGRESSED
    elif high < 1 and ratio < 1 / (1 + threshold):
        status = Verdict.IMPROVED
    elif pass_rule == "interval":
        status = Verdict.PASS if high <= 1 + threshold else Verdict.INCONCLUSIVE
    elif upper90 <= 1 + threshold:
        # shown with the interval that decided it: its upper end is the one-sided 90% bound
        status, low, high = Verdict.PASS, math.exp(log_ratio - Z_RULE_OUT * se), upper90
        confidence = 1 - 2 * (1 - NormalDist().cdf(Z_RULE_OUT))
    else:
        status = Verdict.INCONCLUSIVE
    return TimeDecision(status, ratio, low, high, confidence, mode, noise, rounds=rounds)
