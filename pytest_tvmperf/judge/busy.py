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


def held_between(decision: TimeDecision, *measured: TimeDecision) -> TimeDecision:
    """``decision`` (the pooled samples') held at inconclusive because the measurements it
    pools disagree: shown with the interval that spans them all, from the least of their low
    ends to the most of their high ends (the ratio stays the pooled one), so that the printed
    interval reflects the disagreement instead of the pooled interval alone."""
    lows = [decision.low, *(m.low for m in measured)]
    highs = [decision.high, *(m.high for m in measured)]
    return replace(decision, status=Verdict.INCONCLUSIVE, low=min(lows), high=max(highs))


def busy_paired_decision(decision: TimeDecision, lean: float) -> TimeDecision:
    """On a busy machine the pairs' ratios can lean a few percent either way beyond what
    their spread shows (the side preempted more often also refills its caches more often),
    so a verdict there asks more than on a quiet one: ``regressed`` only when the interval
    clears 1 by the ``lean`` the load allows (its allowance, judge/own_time.py), not merely
    1; ``improved`` only when it lies under ``1 / (1 + lean)``; otherwise inconclusive with
    the size it could have told."""
    if decision.status == Verdict.REGRESSED and decision.low <= 1 + lean:
        return replace(decision, status=Verdict.INCONCLUSIVE)
    if decision.status == Verdict.IMPROVED and decision.high >= 1 / (1 + lean):
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
    if not low_side:  # no round whose run time can be told: nothing bounds it
        return untold_decision(now, base, preempted, threshold, alpha, noise, mode, allow_pass)
    return _widened(now, base, low_side, high_side, preempted, threshold, alpha, noise, mode, allow_pass)


#: the least share of its wall time a round's run time is taken to be where its wait passes the
#: run share (:func:`untold_decision`): how far such a round's bound reaches
UNTOLD_RUN_SHARE = 1e-3


def untold_decision(
    now: Sequence[float],
    base: Sequence[float] | None,
    preempted: Sequence[float],
    threshold: float,
    alpha: float,
    noise: float,
    mode: str,
    allow_pass: bool = False,
) -> TimeDecision:
    """A verdict whose run time cannot be told (a side waited for a CPU past its run share
    on too many rounds): shown with the interval every round's wait allows, the rounds past
    the run share included with their own wait (at most ``1 - UNTOLD_RUN_SHARE``): so the
    interval printed beside ``inconclusive`` is what the samples support whatever the load
    did, never the wall times' own interval, which can lie wholly past the limit by the
    load alone. Decided only where even that interval lies wholly past the limit (or under
    ``1 / limit``, or, ``allow_pass``, at or under it): no load explains such a ratio."""
    shares = [min(p, 1 - UNTOLD_RUN_SHARE) for p in preempted]
    low_side = tuple(x * (1 - p) for x, p in zip(now, shares))
    high_side = tuple(x / (1 - p) for x, p in zip(now, shares))
    return _widened(now, base, low_side, high_side, preempted, threshold, alpha, noise, mode, allow_pass)


def _widened(
    now: Sequence[float],
    base: Sequence[float] | None,
    low_side: Sequence[float],
    high_side: Sequence[float],
    preempted: Sequence[float],
    threshold: float,
    alpha: float,
    noise: float,
    mode: str,
    allow_pass: bool,
) -> TimeDecision:
    """The decision on the interval from ``low_side``'s low end to ``high_side``'s high end."""
    wider = math.hypot(noise, load_noise(preempted))
    plain = decide(now, base, threshold, alpha, wider, mode, "interval")  # type: ignore[arg-type]
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


def widened_note(preempted: Sequence[float], source: str = "host") -> str:
    """'interval widened by each round's CPU wait (median 62%)'; on an RPC device, by the
    share of each round the reference kernel beside it lost (judge/disturbance.busy_shares)."""
    median = f"median {float(np.median(preempted)):.0%}"
    if source == "device":
        return f"interval widened by the share of each round the reference kernel lost on the device ({median})"
    return f"interval widened by each round's CPU wait ({median})"
