"""How a tuning's trials and wall-clock budget are shared among a workload's kernels (pure).

Trials: each kernel is to have ``ceil(trials / tasks)`` trials measured for the target,
those of an earlier or killed tuning included (resume). Time: each kernel first gets the
time of :data:`MIN_TRIALS` trials (one batch, enough for a valid schedule), the rest goes
by its share of the program's run time (``weight x estimated FLOPs``, :func:`shares`), as
trials at the price of the measured first batch (:func:`spread`); a budget under
:func:`smallest_budget_s` is refused. tuning_run.py spreads what is left again before
each kernel, so time a kernel leaves unused goes to the ones after it.
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
        return max(0, self.target_trials - self.done_before) if self.target_trials else None


def plan_trials(names: Sequence[str], trials: int | None, done_before: Mapping[str, int]) -> list[TaskPlan]:
    """Each task's trial target (``ceil(trials / tasks)``) less what it already has."""
    per_task = math.ceil(trials / len(names)) if trials and names else 0
    return [TaskPlan(name, per_task, int(done_before.get(name, 0))) for name in names]


def shares(weights: Sequence[float], best_s: Sequence[float | None], flops: Sequence[float]) -> list[float]:
    """Each task's share of the program's run time (summing to 1): weight x best measured
    time, or x estimated FLOPs at the measured tasks' time per FLOP (equal when unknown)."""
    n = len(weights)
    if n == 0:
        return []
    measured = [(b, f) for b, f in zip(best_s, flops) if b is not None and b > 0]
    spent, counted = sum(b for b, _ in measured), sum(f for _, f in measured)
    per_flop = spent / counted if measured and counted > 0 else None
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


#: the fewest trials a kernel is tuned with: its first batch, enough for a valid schedule
MIN_TRIALS = 2


@dataclass(frozen=True)
class KernelShare:
    """One kernel's part of a time budget."""

    name: str
    #: the trials it is to measure (at least :data:`MIN_TRIALS`, at most its trial cap)
    trials: int
    #: the seconds it may take (its minimum batch's time plus its share of the rest)
    seconds: float


def smallest_budget_s(
    kernels: int, trial_s: float, min_trials: int = MIN_TRIALS, first_batch_s: float | None = None
) -> float:
    """The least time that tunes every kernel once: a first batch of ``min_trials`` each."""
    return kernels * max(min_trials * max(trial_s, 0.0), first_batch_s or 0.0)


def spread(
    budget_s: float,
    names: Sequence[str],
    share: Sequence[float],
    trial_s: float,
    caps: Sequence[int | None] | None = None,
    min_trials: int = MIN_TRIALS,
    first_batch_s: float | None = None,
) -> list[KernelShare]:
    """The budget spread over the kernels: each gets the time of its first batch of
    ``min_trials`` (``first_batch_s``, else ``min_trials`` x ``trial_s``), then the rest by
    its ``share``, as trials at ``trial_s`` each (bounded by its cap). The seconds sum to
    the budget, or to the first batches where it is smaller (refused by the caller)."""
    n = len(names)
    if n == 0:
        return []
    trial_s = max(trial_s, 1e-9)
    floor_s = max(min_trials * trial_s, first_batch_s or 0.0)
    spare = max(0.0, budget_s - n * floor_s)
    total = sum(max(0.0, s) for s in share)
    weights = [max(0.0, s) / total for s in share] if total > 0 else [1.0 / n] * n
    caps = list(caps) if caps is not None else [None] * n
    out = []
    for name, w, cap in zip(names, weights, caps):
        seconds = floor_s + spare * w
        trials = min_trials + int(spare * w / trial_s + 1e-9)
        if cap is not None:
            trials = max(min(trials, cap), min(min_trials, cap))
        out.append(KernelShare(name, trials, seconds))
    return out


def estimate_line(
    workload: str,
    shares_: Sequence[KernelShare],
    trial_s: float,
    budget_s: float | None,
    probe_trials: int,
    probe_s: float,
    setup_s: float = 0.0,
) -> str:
    """What a tuning of ``shares_`` is expected to take (printed first), from its measured
    first batch (``probe_trials`` in ``probe_s``) after ``setup_s`` seconds of getting ready
    (finding the kernels, starting the workers)."""
    trials = sum(k.trials for k in shares_)
    seconds = setup_s + trials * trial_s
    if budget_s is not None:
        seconds = min(seconds, budget_s)
    within = f" of the {describe_budget(budget_s)} budget" if budget_s is not None else ""
    setup = f", after {describe_seconds(setup_s)} to start" if setup_s >= 1 else ""
    return (
        f"tvmperf tune {workload}: {len(shares_)} kernel(s), {trials} trials, about "
        f"{describe_seconds(seconds)}{within} (first batch: {probe_trials} trial(s) in "
        f"{describe_seconds(probe_s)}{setup})"
    )


def duration_option(seconds: float) -> str:
    """``seconds`` rounded up (to 10 s, or to half an hour past 90 min) as the budget option
    takes it: ``50s``, ``2m20s``, ``7m``, ``2.5h``."""
    if seconds <= 110:
        return f"{max(10, math.ceil(seconds / 10) * 10)}s"
    if seconds <= 5400:
        tens = math.ceil(seconds / 10)
        minutes, rest = divmod(tens * 10, 60)
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    return f"{math.ceil(seconds / 3600 * 2) / 2:g}h"


def summary_line(workload: str, used_s: float, budget_s: float | None, trials: int, records: int, kernels: int) -> str:
    """The line after a tuning: time used against the budget, records written."""
    against = f" of the {describe_budget(budget_s)} budget" if budget_s is not None else ""
    over = ""
    if budget_s is not None and used_s > budget_s:
        over = f" ({describe_seconds(used_s - budget_s)} over: the last batch)"
    return (
        f"tvmperf tune {workload}: {describe_seconds(used_s)} used{against}{over}, {trials} trial(s) on "
        f"{kernels} kernel(s), {records} record(s) written"
    )


def describe_seconds(seconds: float) -> str:
    """``45 s``, ``2.5 min``, ``12 min``, ``1.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def describe_budget(seconds: float) -> str:
    """A budget as given, in words: ``90 s``, ``4 min``, ``2.5 min``, ``1.5 h``."""
    return f"{seconds / 60:g} min" if 120 <= seconds < 7200 and seconds % 60 == 0 else describe_seconds(seconds)
