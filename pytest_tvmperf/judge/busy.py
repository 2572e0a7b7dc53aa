"""Time verdicts on a busy machine: a decision held at inconclusive, one that asks more of
pairs timed under load, and one from wall times widened by each round's CPU wait (what the
rounds' waits say is judge/disturbance.py's)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from pytest_tvmperf.judge.disturbance import load_noise, wait_bounds
from pytest_tvmperf.judge.timestats import TimeDecision, decide
from pytest_tvmperf.judge.verdict import Verdict


def held_decision(decision: TimeDecision, allow_pass: bool = False) -> TimeDecision:
    """The decision held at inconclusive (a pass may stand where ``allow_pass``)."""
    if decision.status == Verdict.PASS and allow_pass:
        return decision
    return replace(decision, status=Verdict.INCONCLUSIVE)


def busy_paired_decision(decision: TimeDecision, threshold: float) -> TimeDecision:
    """On a busy machine the pairs' ratios can lean a few percent either way beyond what
    their spread shows (the side preempted more often also refills its caches more often),
    so a verdict there asks more than on a quiet one: ``regressed`` only when the whole
    widened interval lies above the limit (not merely above 1), ``improved`` only when it
    lies below 1/limit; otherwise inconclusive with the size it could have told."""
    limit = 1 + threshold
    if decision.status == Verdict.REGRESSED and decision.low <= limit:
        return replace(decision, status=Verdict.INCONCLUSIVE)
    if decision.status == Verdict.IMPROVED and decision.high >= 1 / limit:
        return replace(decision, status=Verdict.INCONCLUSIVE)
    return decision


def busy_widened_decision(
    now: Sequence[float],
    base: Sequence[float] | None,
    preempted: Sequence[float],
    threshold: float,
    alpha: float,
    noise: float,
    mode: str,
    allow_pass: bool = False,
) -> TimeDecision:
    """A verdict on a busy machine from wall times: the interval widened by the most each
    round's CPU wait could have moved it (its low end from every round's value less its
    wait, its high end from every value over its run time: :func:`wait_bounds`), and by the
    allowance the load adds. ``regressed`` when the whole widened interval lies above the
    limit ``1 + threshold`` (no load explains it: 38x against a limit of 3x fails),
    ``improved`` when it lies below ``1 / limit``, ``pass`` (``allow_pass``, a ratio's
    verdict) when it lies at or under the limit, otherwise inconclusive. The ratio shown is
    the measured one."""
    low_side, high_side = wait_bounds(now, preempted)
    wider = math.hypot(noise, load_noise(preempted))
    plain = decide(now, base, threshold, alpha, wider, mode, "interval")  # type: ignore[arg-type]
    if not low_side:  # no round whose run time can be told: nothing bounds it
        return held_decision(plain)
    low = decide(low_side, base, threshold, alpha, wider, mode, "interval").low  # type: ignore[arg-type]
    high = decide(high_side, base, threshold, alpha, wider, mode, "interval").high  # type: ignore[arg-type]
    limit = 1 + threshold
    if low > limit:
        status = Verdict.REGRESSED
    elif high < 1 / limit:
        status = Verdict.IMPROVED
    elif allow_pass and high <= limit:
        status = Verdict.PASS
    else:
        status = Verdict.INCONCLUSIVE
    return replace(plain, status=status, low=low, high=high)


def widened_note(preempted: Sequence[float]) -> str:
    """'interval widened by each round's CPU wait (median 62%)'."""
    return f"interval widened by each round's CPU wait (median {float(np.median(preempted)):.0%})"
