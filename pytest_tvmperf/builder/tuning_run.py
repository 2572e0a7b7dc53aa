"""The order and the stopping of a tuning run, kernel by kernel and batch by batch, with
the tuner and its clock injected (no TVM here; tests give a fake tuner and clock).

1. The kernels are tuned one after another, the largest share of the run time first.
2. The first kernel's first batch (:data:`~tuning_budget.MIN_TRIALS` trials) is measured
   alone: its time per trial prices the rest. A budget smaller than every kernel's first
   batch at that price raises :class:`BudgetTooSmall`, naming the smallest that would do.
3. The estimate is shown, then each kernel is tuned for its share (the budget left,
   spread again over the kernels left at the price so far), stopping after the batch that
   gives it its trials or spends its time: the budget is passed by no more than the batch
   in flight. A kernel whose trials gave no valid schedule gets up to :data:`RETRIES`
   more first batches, past its share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from pytest_tvmperf.builder.tuning_budget import MIN_TRIALS, KernelShare, duration_option, estimate_line
from pytest_tvmperf.builder.tuning_budget import smallest_budget_s, spread

#: batches of :data:`~tuning_budget.MIN_TRIALS` more for a kernel whose trials gave no valid
#: schedule (every candidate failed to build or run), even past its share of the budget
RETRIES = 2


@dataclass(frozen=True)
class Kernel:
    """One kernel (task) to tune."""

    name: str
    #: its share of the program's run time (weight x estimated FLOPs; any scale)
    share: float
    #: trials still to measure for a trial target, None: only the time budget ends it
    cap: int | None = None


@dataclass(frozen=True)
class KernelProgress:
    """Where one kernel's tuning is: shown after each batch."""

    #: 1-based position in the run, of ``count``
    index: int
    count: int
    name: str
    #: trials measured for it in this run, and its share of trials
    done: int
    share: int
    #: seconds spent on it in this run
    elapsed_s: float
    finished: bool = False


@dataclass(frozen=True)
class RunOutcome:
    """What a run did: its seconds and trials, against its budget."""

    used_s: float
    budget_s: float | None
    trials: int
    kernels: int


class Tuner(Protocol):
    def start(self) -> None:
        """Start the workers: apart from the first batch, so it does not price every first batch."""

    def tune(self, kernel: int, trials: int, on_batch: Callable[[int, int], bool]) -> None:
        """Measure up to ``trials`` trials of kernel ``kernel`` (an index into the run's list),
        calling ``on_batch(measured, of them valid)`` after each batch; stop when it returns False."""


class Display(Protocol):
    """Where a run's progress goes: the estimate, each kernel's progress, the summary."""

    def estimate(self, line: str) -> None: ...
    def kernel(self, progress: KernelProgress) -> None: ...
    def summary(self, line: str) -> None: ...


class NoDisplay:
    """Shows nothing."""

    def estimate(self, line: str) -> None: ...
    def kernel(self, progress: KernelProgress) -> None: ...
    def summary(self, line: str) -> None: ...


class BudgetTooSmall(Exception):
    """The time budget cannot tune every kernel once: a usage error."""

    def __init__(
        self,
        workload: str,
        budget_s: float,
        smallest_s: float,
        kernels: int,
        probe_s: float,
        probe_trials: int,
        setup_s: float = 0.0,
    ) -> None:
        self.smallest = duration_option(smallest_s)
        given = f"{budget_s / 60:g}m" if budget_s >= 120 and budget_s % 60 == 0 else f"{budget_s:g}s"  # as given
        super().__init__(
            f"the tuning budget {given} is too small "
            f"for {workload}: its {kernels} kernel(s) need at least {MIN_TRIALS} trials each to build one valid "
            f"schedule, and the first batch took {probe_s:.1f} s for {probe_trials} trial(s)"
            + (f" after {setup_s:.0f} s to start" if setup_s >= 1 else "")
            + f"; the smallest budget that would do: {self.smallest}"
        )


def run(
    workload: str,
    kernels: Sequence[Kernel],
    budget_s: float | None,
    tuner: Tuner,
    clock: Callable[[], float],
    display: Display,
    began: float | None = None,
) -> RunOutcome:
    """Tune ``kernels`` with ``tuner`` within ``budget_s`` (or their trial caps), counted
    from ``began`` (before the kernels were found; else now), the tuner's start included."""
    start = clock() if began is None else began
    order = sorted(range(len(kernels)), key=lambda i: -kernels[i].share)
    n = len(order)
    if n == 0:
        return RunOutcome(0.0, budget_s, 0, 0)
    names = [kernels[i].name for i in order]
    shares = [kernels[i].share for i in order]
    caps = [kernels[i].cap for i in order]
    if budget_s is None and None in caps:
        raise ValueError("a run without a time budget needs every kernel's trial cap")
    done = [0] * n  # trials measured in this run, per kernel (in tuning order)
    valid = [0] * n  # of them, the ones that built and ran

    def tune(k: int, trials: int, on_batch: Callable[[int], bool]) -> None:
        def counted(measured: int, ok: int) -> bool:
            done[k] += measured
            valid[k] += ok
            return on_batch(measured)

        tuner.tune(order[k], trials, counted)

    tuner.start()
    probe_trials = min(MIN_TRIALS, caps[0]) if caps[0] is not None else MIN_TRIALS
    probe_start = clock()
    setup_s = probe_start - start  # finding the kernels, starting the tuner's workers
    tune(0, probe_trials, lambda _measured: False)  # the first batch alone
    probe_s = clock() - probe_start
    trial_s = probe_s / max(1, done[0])
    first_batch_s = probe_s * probe_trials / max(1, done[0])  # a kernel's first batch (the largest kernel's)
    if budget_s is not None:
        smallest = setup_s + smallest_budget_s(n, trial_s, probe_trials, first_batch_s)
        if budget_s < smallest * (1 - 1e-9):  # (not for a float rounding)
            raise BudgetTooSmall(workload, budget_s, smallest, n, probe_s, done[0], setup_s)
    plan = _plan(None if budget_s is None else budget_s - setup_s, names, shares, trial_s, caps, first_batch_s)
    display.estimate(estimate_line(workload, plan, trial_s, budget_s, done[0], probe_s, setup_s))
    kernel_start = probe_start
    for k in range(n):
        if k > 0:
            spent = clock() - start
            trial_s = (clock() - probe_start) / max(1, sum(done))  # the price measured so far
            left = None if budget_s is None else budget_s - spent
            plan[k:] = _plan(left, names[k:], shares[k:], trial_s, caps[k:], first_batch_s)
            kernel_start = clock()
        share = plan[k]

        def show(k: int = k, share: KernelShare = share, began: float = kernel_start, finished: bool = False) -> float:
            elapsed = clock() - began
            display.kernel(KernelProgress(k + 1, n, names[k], done[k], max(share.trials, done[k]), elapsed, finished))
            return elapsed

        show()

        def go_on(_measured: int, k: int = k, share: KernelShare = share, show: Callable[..., float] = show) -> bool:
            elapsed = show()
            return done[k] < share.trials and (budget_s is None or elapsed < share.seconds)

        if done[k] < share.trials and (budget_s is None or clock() - kernel_start < share.seconds):
            tune(k, share.trials - done[k], go_on)
        for _ in range(RETRIES):  # no valid schedule yet: another first batch, past its share and trials
            if valid[k]:
                break
            measured_before = done[k]
            tune(k, MIN_TRIALS, lambda _measured: False)
            if done[k] == measured_before:  # nothing left to measure (the search space is spent)
                break
        show(finished=True)
    return RunOutcome(clock() - start, budget_s, sum(done), n)


def _plan(
    budget_s: float | None,
    names: Sequence[str],
    shares: Sequence[float],
    trial_s: float,
    caps: Sequence[int | None],
    first_batch_s: float,
) -> list[KernelShare]:
    """Each kernel's trials and seconds: the budget spread, or its trial cap at the price."""
    if budget_s is None:
        return [KernelShare(name, int(cap or 0), int(cap or 0) * trial_s) for name, cap in zip(names, caps)]
    return spread(max(0.0, budget_s), names, shares, trial_s, caps, first_batch_s=first_batch_s)
