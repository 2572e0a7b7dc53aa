"""Sequential sampling (judge/confirmation.py ``sample_in_looks``): a gate stops measuring at an
early look when the samples so far already rule a slowdown out, and takes every round
(then confirms) otherwise. Pure parts, then as a user runs it (the injected timer)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tvmperf.judge.confirmation import looks, sample_in_looks
from pytest_tvmperf.values.samples import TimeSamples


def test_the_default_fifteen_rounds_are_judged_after_6_10_and_15():
    assert looks(15) == (6, 10, 15)
    assert looks(5) == (5,)  # too few rounds to look earlier
    assert looks(30) == (12, 20, 30)


@given(st.integers(1, 400))
def test_looks_end_on_every_round_and_grow(rounds):
    plan = looks(rounds)
    assert plan[-1] == rounds
    assert list(plan) == sorted(set(plan))
    assert all(b - a >= 3 for a, b in zip(plan, plan[1:]))
    assert plan[0] >= min(rounds, 6)


def _measure(calls: list[int]):
    def measure(n: int) -> TimeSamples:
        calls.append(n)
        return TimeSamples(tuple(1e-3 for _ in range(n)))

    return measure


def test_a_settled_first_look_stops_the_measurement():
    calls: list[int] = []
    got = sample_in_looks(_measure(calls), 15, lambda s: True)
    assert calls == [6] and len(got.samples.samples) == 6
    assert got.stopped_early and got.note() == "a pass after 6 of 15 rounds (sequential sampling)"


def test_an_open_answer_takes_every_round_in_looks():
    calls: list[int] = []
    seen: list[int] = []
    got = sample_in_looks(_measure(calls), 15, lambda s: seen.append(len(s.samples)) or False)
    assert calls == [6, 4, 5] and len(got.samples.samples) == 15
    assert seen == [6, 10]  # the last look is judged by the gate itself, not by `settled`
    assert not got.stopped_early and got.note() == ""


def test_without_a_rule_every_round_is_one_measurement():
    calls: list[int] = []
    sample_in_looks(_measure(calls), 15, None)
    assert calls == [15]


TEST = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


def _samples(project, path: str = "r.json") -> int:
    (entry,) = json.loads((project.pytester.path / path).read_text())["tests"]
    return len(entry["time"]["samples_s"])


@pytest.mark.parametrize(
    "scale, outcome, rounds",
    [
        ("1.0", "passed", 6),  # unchanged: ruled out after the first look
        ("1.10", "failed", 45),  # +10%: every round, then the confirmation's 30
    ],
)
def test_a_gate_stops_early_only_on_a_pass(project, scale, outcome, rounds):
    project.pytester.makepyfile(test_perf=TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    assert len(next(iter(project.baselines()["tests"]["test_a[llvm-prim]"]["timings"].values()))["samples_s"]) == 15
    project.set_env("TVMPERF_FAKE_SCALE", scale)
    result = project.run("--tvmperf-json=r.json")
    result.assert_outcomes(**{outcome: 1})
    assert _samples(project) == rounds


def test_a_gated_peer_takes_every_round(project):
    project.pytester.makepyfile(
        test_perf=TEST.replace('executors=["prim"]', 'executors=["prim"], vs_numpy=100').replace(
            "workloads.multiply(m=8, n=8)", "workloads.rgb2yuv(width=16, height=8)"
        )
    )
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.run("--tvmperf-json=r.json").assert_outcomes(passed=1)
    assert _samples(project) == 15
