"""How a tuning's trials and wall-clock budget are shared among a workload's kernels
(pure: :mod:`pytest_tvmperf.builder.tuning` feeds it what MetaSchedule measured).

Trials: each kernel (task) is to have ``ceil(trials / tasks)`` trials measured for the
target; the trials a killed or earlier tuning already measured count (resume), so a
re-run measures only what is missing.

Time: a budget of ``B`` seconds is spread over the kernels by their share of the
program's run time, ``weight x best time measured so far`` (before a kernel is first
measured, its estimated FLOPs stand in, scaled like the measured kernels). A kernel
stops once it has spent its allowance, ``(B - time spent by the kernels that stopped) x
share / sum of the running kernels' shares``: the time a kernel leaves unused (its
search ended early) goes to the others. Every kernel gets at least its first batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True)
class TaskPlan:
    """One kernel's part of a tuning run."""

    name: str
    #: the trials this kernel is to have measured for the target in all (0: no trial budget)
    target_trials: int
    #: trials already measured for the target (by an earlier or killed tuning)
    done_before: int = 0

    @property
    def remaining(self) -> int | None:
        """Trials still to measure; None without a trial budget (the time budget ends it)."""
        if not self.target_trials:
            return None
        return max(0, self.target_trials - self.done_before)


def plan_trials(names: Sequence[str], trials: int | None, done_before: Mapping[str, int]) -> list[TaskPlan]:
    """Each task's trial target (``ceil(trials / tasks)``) less what it already has."""
    per_task = math.ceil(trials / len(names)) if trials and names else 0
    return [TaskPlan(name, per_task, int(done_before.get(name, 0))) for name in names]


def shares(weights: Sequence[float], best_s: Sequence[float | None], flops: Sequence[float]) -> list[float]:
    """Each task's share of the program's run time (they sum to 1): its weight times its
    best measured time, or its estimated FLOPs scaled by the measured tasks' time per
    FLOP (equal shares when nothing is known)."""
    n = len(weights)
    if n == 0:
        return []
    measured = [(b, f) for b, f in zip(best_s, flops) if b is not None and b > 0]
    per_flop = (sum(b for b, _ in measured) / sum(f for _, f in measured)
                if measured and sum(f for _, f in measured) > 0 else None)
    raw = []
    for w, b, f in zip(weights, best_s, flops):
        if b is not None and b > 0:
            raw.append(w * b)
        elif per_flop is not None and f > 0:
            raw.append(w * f * per_flop)
        elif per_flop is None and any(x > 0 for x in flops) and f > 0:
            raw.append(w * f)
        else:
            raw.append(0.0)
    total = sum(raw)
    if total <= 0:
        return [1.0 / n] * n
    floor = 1e-6  # a task of ~0 estimated time still gets its first batch
    raw = [max(r / total, floor) for r in raw]
    total = sum(raw)
    return [r / total for r in raw]


def allowances(budget_s: float, spent_s: Sequence[float], share: Sequence[float],
               stopped: Sequence[bool]) -> list[float]:
    """Each running task's time allowance (stopped tasks: what they spent)."""
    left = budget_s - sum(s for s, done in zip(spent_s, stopped) if done)
    running = sum(sh for sh, done in zip(share, stopped) if not done)
    out = []
    for s, sh, done in zip(spent_s, share, stopped):
        out.append(s if done else (max(0.0, left) * sh / running if running > 0 else 0.0))
    return out


def over_budget(budget_s: float, spent_s: Sequence[float], share: Sequence[float], stopped: Sequence[bool],
                task: int) -> bool:
    """Whether ``task`` has spent its allowance (or the whole budget is spent)."""
    if sum(spent_s) >= budget_s:
        return True
    return spent_s[task] >= allowances(budget_s, spent_s, share, stopped)[task]


def describe_seconds(seconds: float) -> str:
    """``45 s``, ``12 min``, ``1.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
