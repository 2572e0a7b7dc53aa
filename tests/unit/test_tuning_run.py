"""A tuning run keeps its budget (issue 47): the budget spread over the kernels by their
share of the run time (tuning_budget.spread), the estimate line before the tuning, the
run ending within the budget plus the batch in flight, a budget too small for one valid
schedule per kernel refused with the smallest that would do, and plain lines for a log
file. A fake tuner on a fake clock: no MetaSchedule, no sleeps, no timing asserts."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.builder.tuning_budget import MIN_TRIALS, duration_option, smallest_budget_s, spread, summary_line
from pytest_tvmperf.builder.tuning_display import PlainDisplay, kernel_line
from pytest_tvmperf.builder.tuning_run import BudgetTooSmall, Kernel, KernelProgress, run

BATCH = 16


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeTuner:
    """Measures batches of up to ``BATCH`` trials of ``trial_s[kernel]`` seconds each
    (plus ``batch_s`` a batch) on the fake clock."""

    def __init__(
        self, clock: FakeClock, trial_s: list[float], batch_s: float = 0.0, start_s: float = 0.0, failing: int = 0
    ) -> None:
        self.clock, self.trial_s, self.batch_s, self.start_s = clock, trial_s, batch_s, start_s
        self.failing = failing  # the first this many trials fail to build or run
        self.batches: list[tuple[int, int]] = []  # (kernel, trials)

    def start(self) -> None:
        self.clock.now += self.start_s

    def tune(self, kernel, trials, on_batch) -> None:
        left = trials
        while left > 0:
            n = min(BATCH, left)
            self.clock.now += self.batch_s + n * self.trial_s[kernel]
            self.batches.append((kernel, n))
            left -= n
            ok = max(0, n - self.failing)
            self.failing = max(0, self.failing - n)
            if not on_batch(n, ok):
                return


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def estimate(self, line: str) -> None:
        self.events.append(("estimate", line))

    def kernel(self, progress: KernelProgress) -> None:
        self.events.append(("kernel", progress))

    def summary(self, line: str) -> None:
        self.events.append(("summary", line))


def kernels(*shares: float, cap: int | None = None) -> list[Kernel]:
    return [Kernel(f"k{i}", share, cap) for i, share in enumerate(shares)]


# --- the spread (pure) -------------------------------------------------------------------


def test_the_budget_goes_by_share_and_the_cheapest_kernel_gets_its_first_batch_only():
    share = spread(600.0, ["conv", "dense", "add"], [0.9, 0.099, 0.001], trial_s=5.0)
    assert [k.trials for k in share] == [104, 13, MIN_TRIALS]  # 2 each, then 570 s by share at 5 s a trial
    assert sum(k.seconds for k in share) == pytest.approx(600.0)
    assert spread(600.0, ["a"], [1.0], 5.0, caps=[7])[0].trials == 7  # a trial target caps it


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=30),
    st.floats(0.01, 60),
    st.floats(1.0, 5.0),
    st.integers(1, 4),
    st.floats(0, 120),
)
def test_spread_stays_within_the_budget_and_gives_each_kernel_its_minimum(shares, trial_s, over, min_trials, first_s):
    budget = smallest_budget_s(len(shares), trial_s, min_trials, first_s) * over
    out = spread(
        budget, [f"k{i}" for i in range(len(shares))], shares, trial_s, min_trials=min_trials, first_batch_s=first_s
    )
    assert sum(k.seconds for k in out) <= budget * (1 + 1e-9)
    assert sum(k.trials for k in out) * trial_s <= budget * (1 + 1e-9)
    assert all(k.trials >= min_trials for k in out)
    for a, b in zip(shares, out):  # a larger share never gets fewer trials
        assert all(k.trials >= b.trials for s, k in zip(shares, out) if s > a)


def test_the_smallest_budget_is_said_as_the_option_takes_it():
    assert smallest_budget_s(19, 5.0) == 190.0
    assert [duration_option(s) for s in (3, 41, 110, 190, 3600, 9000)] == ["10s", "50s", "110s", "3m10s", "60m", "2.5h"]


# --- the run -----------------------------------------------------------------------------


def test_the_estimate_comes_first_after_the_first_batch_of_the_largest_kernel():
    clock, shown = FakeClock(), Recorder()
    tuner = FakeTuner(clock, [5.0, 5.0, 5.0])
    run("resnet18", kernels(0.01, 0.9, 0.09), 600.0, tuner, clock, shown)
    assert tuner.batches[0] == (1, MIN_TRIALS)  # the largest share first, one batch alone
    kind, line = shown.events[0]
    assert kind == "estimate"
    assert line == (
        "tvmperf tune resnet18: 3 kernel(s), 119 trials, about 9.9 min of the 10 min budget "
        "(first batch: 2 trial(s) in 10 s)"
    )
    assert [p.name for k, p in shown.events if k == "kernel" and p.finished] == ["k1", "k2", "k0"]
    assert all(p.count == 3 for k, p in shown.events if k == "kernel")


def test_each_kernel_is_tuned_for_its_share():
    clock, shown = FakeClock(), Recorder()
    tuner = FakeTuner(clock, [5.0, 5.0, 5.0])
    run("resnet18", kernels(0.9, 0.099, 0.001), 600.0, tuner, clock, shown)
    done = {p.name: (p.done, p.share) for k, p in shown.events if k == "kernel" and p.finished}
    # the time the first two leave unused (a part of a trial each) goes to the last one
    assert done == {"k0": (104, 104), "k1": (13, 13), "k2": (3, 3)}


@pytest.mark.parametrize("trial_s, batch_s", [([5.0] * 4, 0.0), ([5.0] * 4, 12.0), ([9.0, 3.0, 2.0, 1.0], 4.0)])
def test_the_run_ends_within_the_budget_plus_one_batch(trial_s, batch_s):
    """Issue 47: 19 kernels x 16 trials ran 13 min 43 s on a 4 min budget."""
    clock, shown = FakeClock(), Recorder()
    tuner = FakeTuner(clock, trial_s, batch_s)
    start = clock.now
    outcome = run("resnet18", kernels(0.6, 0.3, 0.08, 0.02), 240.0, tuner, clock, shown)
    one_batch = batch_s + BATCH * max(trial_s)
    assert clock.now - start == outcome.used_s <= 240.0 + one_batch
    assert outcome.trials == sum(n for _, n in tuner.batches)
    assert {k for k, _ in tuner.batches} == {0, 1, 2, 3}  # every kernel tuned


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.001, 1.0), min_size=1, max_size=12), st.floats(0.1, 20), st.floats(0, 30), st.floats(1.0, 20.0)
)
def test_any_budget_above_the_smallest_ends_within_one_batch_of_it(shares, trial_s, batch_s, over):
    clock = FakeClock()
    probe_s = batch_s + MIN_TRIALS * trial_s
    budget = len(shares) * probe_s * over
    outcome = run("w", kernels(*shares), budget, FakeTuner(clock, [trial_s] * len(shares), batch_s), clock, Recorder())
    assert outcome.used_s <= budget + batch_s + BATCH * trial_s + 1e-6


def test_a_budget_too_small_for_one_schedule_per_kernel_is_refused_with_the_smallest_that_would_do():
    clock, shown = FakeClock(), Recorder()
    tuner = FakeTuner(clock, [5.0] * 19)
    with pytest.raises(BudgetTooSmall) as refused:
        run("resnet18", kernels(*[1.0] * 19), 60.0, tuner, clock, shown)
    assert str(refused.value) == (
        "the tuning budget 60s is too small for resnet18: its 19 kernel(s) need at least 2 trials each to build one "
        "valid schedule, and the first batch took 10.0 s for 2 trial(s); the smallest budget that would do: 3m10s"
    )
    assert refused.value.smallest == "3m10s"
    assert tuner.batches == [(0, MIN_TRIALS)] and shown.events == []  # nothing more measured, nothing shown


def test_without_a_budget_each_kernel_gets_its_trials():
    clock, shown = FakeClock(), Recorder()
    tuner = FakeTuner(clock, [1.0, 1.0])
    outcome = run("mlp", kernels(0.5, 0.5, cap=40), None, tuner, clock, shown)
    assert outcome.trials == 80 and outcome.budget_s is None
    assert shown.events[0] == (
        "estimate",
        "tvmperf tune mlp: 2 kernel(s), 80 trials, about 80 s (first batch: 2 trial(s) in 2 s)",
    )


# --- what a log file gets ------------------------------------------------------------------


def test_a_log_file_gets_plain_lines_with_k_of_n_kernels_and_each_kernels_time():
    clock, lines = FakeClock(), []
    display = PlainDisplay("resnet18", lines.append)
    outcome = run("resnet18", kernels(0.9, 0.1), 300.0, FakeTuner(clock, [5.0, 5.0]), clock, display)
    display.summary(summary_line("resnet18", outcome.used_s, 300.0, outcome.trials, outcome.trials, 2))
    assert lines[0].startswith("tvmperf tune resnet18: 2 kernel(s), ")
    assert lines[1:6] == [
        "tuning resnet18: 1/2 kernels k0: 2/52 trials, 10 s",  # the first batch
        "tuning resnet18: 1/2 kernels k0: 18/52 trials, 90 s",
        "tuning resnet18: 1/2 kernels k0: 34/52 trials, 2.8 min",
        "tuning resnet18: 1/2 kernels k0: 50/52 trials, 4.2 min",
        "tuning resnet18: 1/2 kernels k0: done, 52/52 trials in 4.3 min",
    ]
    assert lines[-2] == "tuning resnet18: 2/2 kernels k1: done, 8/8 trials in 40 s"
    assert (
        lines[-1]
        == "tvmperf tune resnet18: 5.0 min used of the 5 min budget, 60 trial(s) on 2 kernel(s), 60 record(s) written"
    )
    assert not any("\r" in line or "\x1b" in line for line in lines)


def test_the_summary_says_when_the_last_batch_went_over():
    line = summary_line("w", 250.0, 240.0, 40, 38, 3)
    assert (
        line
        == "tvmperf tune w: 4.2 min used of the 4 min budget (10 s over: the last batch), 40 trial(s) on 3 kernel(s), 38 record(s) written"
    )
    assert (
        kernel_line("w", KernelProgress(2, 19, "fused_conv2d", 4, 10, 61.0))
        == "tuning w: 2/19 kernels fused_conv2d: 4/10 trials, 61 s"
    )


def test_a_terminal_gets_a_bar_per_kernel_with_its_own_clock_and_share():
    import contextlib
    import io

    from pytest_tvmperf.builder.tuning_display import BarDisplay, display_for

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, log = Terminal(), io.StringIO()
    assert isinstance(display_for("w", lambda: terminal, contextlib.nullcontext), BarDisplay)
    assert isinstance(display_for("w", lambda: log, contextlib.nullcontext), PlainDisplay)
    clock = FakeClock()
    run(
        "w",
        kernels(0.9, 0.1),
        300.0,
        FakeTuner(clock, [5.0, 5.0]),
        clock,
        display_for("w", lambda: terminal, contextlib.nullcontext),
    )
    shown = terminal.getvalue()
    assert "tuning w: 1/2 kernels k0: 100%" in shown and "52/52" in shown
    assert "tuning w: 2/2 kernels k1: 100%" in shown and "8/8" in shown


def test_starting_the_tuner_counts_in_the_budget_but_does_not_price_the_batches():
    clock = FakeClock()
    with pytest.raises(
        BudgetTooSmall,
        match=r"the first batch took 10.0 s for 2 trial\(s\) after 30 s to start; "
        r"the smallest budget that would do: 70s",
    ):
        run("w", kernels(0.4, 0.3, 0.2, 0.1), 60.0, FakeTuner(clock, [5.0] * 4, start_s=30.0), clock, Recorder())
    clock, shown = FakeClock(), Recorder()
    outcome = run("w", kernels(0.4, 0.3, 0.2, 0.1), 240.0, FakeTuner(clock, [5.0] * 4, start_s=30.0), clock, shown)
    assert outcome.used_s <= 240.0 + BATCH * 5.0
    assert shown.events[0][1].endswith("(first batch: 2 trial(s) in 10 s, after 30 s to start)")


def test_a_kernel_without_a_valid_schedule_gets_another_first_batch():
    clock, shown = FakeClock(), Recorder()
    tuner = FakeTuner(clock, [5.0, 5.0], failing=2)  # the first batch (the probe) fails to build
    run("w", kernels(0.5, 0.5, cap=2), None, tuner, clock, shown)
    assert tuner.batches == [(0, 2), (0, 2), (1, 2)]
