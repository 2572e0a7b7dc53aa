"""The sequential rule of measuring a borderline verdict until it is decided (judge/confirmation.py
:func:`settle`, issue 60): on simulated A/A data its false failures stay under the nominal level
however many looks it takes, and it decides a slowdown past the limit."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.config.parsing import TIME_METRIC
from pytest_tvmperf.config.time_policy import DecideBudget, TimePolicy, spent_alpha
from pytest_tvmperf.judge.metric_verdict import MetricVerdict
from pytest_tvmperf.judge.confirmation import DECIDED, confirm, settle
from pytest_tvmperf.judge.timestats import decide_from
from pytest_tvmperf.judge.verdict import Verdict

ROUNDS = 15


class Simulated:
    """One comparison's measurements: each a fresh load, offset by the process noise ``tau`` (its
    placement), each round's log ratio spread by ``sigma`` around it; ``shift`` the true log ratio."""

    def __init__(self, rng: random.Random, shift: float, sigma: float, tau: float) -> None:
        self.rng, self.shift, self.sigma, self.tau = rng, shift, sigma, tau

    def measure(self, rounds: int) -> tuple[float, ...]:
        offset = self.rng.gauss(self.shift, self.tau)
        return tuple(self.rng.gauss(offset, self.sigma) for _ in range(rounds))


def judge_for(policy: TimePolicy, threshold: float, tau: float):
    """The time verdict's rule on log ratios (the mean for the median; the samples' own standard
    error, the process noise over the loads pooled), as judge/compare.py applies it to an a/b series."""

    def judge_look(logs: tuple[float, ...], look: int, loads: int) -> dict[str, MetricVerdict]:
        at = policy.at_look(look, loads) if look else policy
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        d = decide_from(
            mean, sd / math.sqrt(len(logs)), threshold, at.alpha, at.shrink(tau), "a/b", fail_rule=at.fail_rule
        )
        return {"time": MetricVerdict(TIME_METRIC, d.status, 1.0, d.ratio, "", decision=d, bound=1 + threshold)}

    return judge_look


def run(sim: Simulated, alpha: float, threshold: float, budget: DecideBudget) -> tuple[str, int]:
    """The whole sequence: a first measurement, its confirmation (twice the rounds), then the looks."""
    judge_look = judge_for(TimePolicy(alpha=alpha), threshold, sim.tau)
    checked = confirm(sim.measure(ROUNDS), lambda s: judge_look(s, 0, 1), lambda: sim.measure(2 * ROUNDS))
    straddles = lambda v: v.status == Verdict.INCONCLUSIVE  # noqa: E731
    settled, how = settle(checked, judge_look, sim.measure, budget, ROUNDS, lambda: 0.0, straddles)
    return settled.verdicts["time"].status, how.looks if how is not None else 0


@settings(max_examples=8, deadline=None, derandomize=True)
@given(
    sigma=st.sampled_from([0.005, 0.03, 0.1, 0.3]),
    tau=st.sampled_from([0.0, 0.01, 0.03]),
    threshold=st.sampled_from([0.0, 0.02, 0.05]),
    seed=st.integers(0, 2**16),
)
def test_a_a_false_failures_stay_under_the_nominal_level_while_looking_many_times(sigma, tau, threshold, seed):
    """At a nominal two-sided alpha of 0.2 per comparison (large, so that 300 sequences can show a
    breach), the false failures of unchanged code stay under it (the rule's bound is 3/4 of it), with
    up to 4 more looks each (budget 600 rounds: 40 more measurements)."""
    rng, alpha, n = random.Random(seed), 0.2, 300
    outcomes = [run(Simulated(rng, 0.0, sigma, tau), alpha, threshold, DecideBudget(60, 600)) for _ in range(n)]
    failed = sum(status == Verdict.REGRESSED for status, _ in outcomes)
    assert failed <= alpha * n, (failed, n)
    if threshold == 0.0:  # nothing passes an A/A against a limit of 0: each sequence takes every look it can
        assert max(looks for _, looks in outcomes) >= 4


def test_a_slowdown_past_the_limit_is_decided_in_later_looks():
    """+10% against a 5% limit with each measurement placed +-3% apart (the process noise the first
    measurement and its confirmation must allow whole): most are decided only by the later looks."""
    rng = random.Random(7)
    outcomes = [
        run(Simulated(rng, math.log(1.10), 0.05, 0.03), 0.0025, 0.05, DecideBudget(60, 1000)) for _ in range(40)
    ]
    caught = sum(status == Verdict.REGRESSED for status, _ in outcomes)
    later = sum(status == Verdict.REGRESSED and looks > 0 for status, looks in outcomes)
    assert caught >= 36 and later >= 20, (caught, later)


def test_the_budget_bounds_the_looks_and_says_why_it_stopped():
    sim = Simulated(random.Random(1), math.log(1.05), 0.05, 0.03)  # at the limit: never decided
    judge_look = judge_for(TimePolicy(alpha=0.01), 0.05, sim.tau)
    checked = confirm(sim.measure(ROUNDS), lambda s: judge_look(s, 0, 1), lambda: sim.measure(2 * ROUNDS))
    straddles = lambda v: v.status == Verdict.INCONCLUSIVE  # noqa: E731
    calls = []
    measure = lambda n: calls.append(n) or sim.measure(n)  # noqa: E731
    _, how = settle(checked, judge_look, measure, DecideBudget(60, 100), ROUNDS, lambda: 0.0, straddles)
    assert how is not None and not how.decided and how.stopped == "its budget's 100 rounds spent"
    assert calls == [ROUNDS] * 6 and how.rounds == 90 and how.batches == 6 and how.looks == 2
    clock = [0.0]  # each measurement takes 0.1 s of wall clock
    timed = lambda n: clock.__setitem__(0, clock[0] + 0.1) or sim.measure(n)  # noqa: E731
    _, how = settle(checked, judge_look, timed, DecideBudget(0.25, 1000), ROUNDS, lambda: clock[0], straddles)
    assert how is not None and how.stopped == "its budget's 0.25 s spent" and how.batches == 3
    off = settle(checked, judge_look, measure, DecideBudget(0, 0), ROUNDS, lambda: 0.0, straddles)
    assert off == (checked, None)


def test_a_clear_verdict_spends_nothing():
    sim = Simulated(random.Random(2), 0.0, 0.001, 0.0)
    judge_look = judge_for(TimePolicy(alpha=0.01), 0.05, 0.0)
    checked = confirm(sim.measure(ROUNDS), lambda s: judge_look(s, 0, 1), lambda: sim.measure(2 * ROUNDS))
    assert checked.verdicts["time"].status == Verdict.PASS
    assert settle(checked, judge_look, sim.measure, DecideBudget(), ROUNDS, lambda: 0.0, lambda v: True)[1] is None


def test_the_looks_spend_at_most_half_the_alpha_however_many():
    assert sum(spent_alpha(0.05, k) for k in range(1, 60)) == pytest.approx(0.025)
    assert spent_alpha(0.05, 1) == 0.0125
    with pytest.raises(ValueError):
        spent_alpha(0.05, 0)
    assert DECIDED == "decided"
