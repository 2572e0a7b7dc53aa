"""A verdict held because its two measurements disagree (gate.confirm) shows an interval
that spans them, so it straddles the limit; an interval wholly past the limit is decided."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.check.decide import judged_peers
from pytest_tvmperf.config.time_policy import TimePolicy
from pytest_tvmperf.judge.metric_verdict import MetricVerdict
from pytest_tvmperf.judge.confirmation import confirm, confirmation_note
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME, TimeDecision
from pytest_tvmperf.values.samples import TimeSamples

LIMIT = 1.05


def _time(status: str, ratio: float, low: float, high: float, own: bool = False, reason: str = "") -> MetricVerdict:
    estimate = OWN_RUN_TIME if own else "wall time"
    decision = TimeDecision(status, ratio, low, high, 0.95, "a/b", 0.02, estimate)  # type: ignore[arg-type]
    return MetricVerdict("time", status, 1e-3, ratio * 1e-3, "+5%", decision=decision, bound=LIMIT, reason=reason)  # type: ignore[arg-type]


def _by_rounds(first, second, pooled):
    """A judge that answers each measurement as given: 3 rounds, the re-measure's 6, all 9."""
    return lambda s: {3: first, 6: second, 9: pooled}[len(s.samples)]


def _confirm(first, second, pooled):
    return confirm(TimeSamples((1e-3,) * 3), _by_rounds(first, second, pooled), lambda: TimeSamples((1e-3,) * 6))


def test_a_verdict_held_because_its_measurements_disagree_shows_an_interval_across_the_limit():
    """Seen: ``1.33x [1.15-1.55]`` beside limit +5%, inconclusive and not regressed: the pooled
    interval was kept while the first measurement alone was under the limit."""
    first = {"time": _time("inconclusive", 1.04, 0.97, 1.12)}
    second = {"time": _time("regressed", 1.5, 1.4, 1.62)}
    pooled = {"time": _time("regressed", 1.33, 1.15, 1.55)}
    got = _confirm(first, second, pooled)
    held = got.verdicts["time"]
    assert held.status == "inconclusive" and got.disagreed == {"time"}
    assert (held.decision.low, held.decision.high) == (0.97, 1.62)  # the hull of the three intervals
    assert held.decision.ratio == 1.33  # the ratio shown stays the pooled one
    assert held.decision.low <= LIMIT < held.decision.high
    note = confirmation_note(got)
    assert "the measurements disagree (1.04x, then 1.50x): inconclusive" in note
    assert "the re-measure alone 1.50x (95% CI 1.40-1.62x, a/b)" in note
    assert note.endswith("the pooled samples': 1.33x (95% CI 0.97-1.62x, a/b)")


def test_an_interval_wholly_past_the_limit_under_load_is_decided():
    """A first answer held for the busy machine (wall times) but already wholly past the
    limit, a re-measure and the pooled samples wholly past it too: every measurement agrees
    past the limit, so the failure stands instead of ``inconclusive`` beside 1.15-1.55."""
    first = {"time": _time("inconclusive", 1.33, 1.16, 1.52, reason="machine busy"), "other": _open()}
    second = {"time": _time("regressed", 1.3, 1.12, 1.5, own=True), "other": _open()}
    pooled = {"time": _time("regressed", 1.32, 1.15, 1.55, own=True), "other": _open()}
    got = _confirm(first, second, pooled)
    assert got.verdicts["time"].status == "regressed" and "time" not in got.disagreed


def _open() -> MetricVerdict:
    return _time("inconclusive", 1.0, 0.9, 1.1)  # straddles: worth measuring again


def _peer(status: str, ratio: float, low: float, high: float, limit: float = 3.0) -> RatioVerdict:
    scaled = {"exceeded": "regressed"}.get(status, status)
    decision = TimeDecision(scaled, ratio / limit, low / limit, high / limit, 0.95, "a/b", 0.07)  # type: ignore[arg-type]
    return RatioVerdict("torch", limit, decision, ratio * 1e-3, 1e-3)


def test_a_peer_held_because_its_measurements_disagree_shows_an_interval_across_its_limit():
    first, second = _peer("inconclusive", 2.9, 2.5, 3.3), _peer("exceeded", 4.0, 3.6, 4.4)
    pooled = _peer("exceeded", 3.6, 3.2, 4.0)
    got = _confirm({"torch": first}, {"torch": second}, {"torch": pooled})
    held = got.verdicts["torch"]
    assert held.status == "inconclusive" and held.low <= 3.0 < held.high
    assert (round(held.low, 6), round(held.high, 6), round(held.ratio, 6)) == (2.5, 4.4, 3.6)


def test_the_peer_gate_holds_the_pooled_verdict_with_the_interval_of_both_measurements():
    """check/decide.judged_peers: the peer judged again on the pooled samples, held with the
    measurements' hull (the summary, JSON and HTML read its low and high)."""
    n = 20
    samples = TimeSamples(tuple(4e-3 * (1 + 0.01 * (i % 3)) for i in range(n)), peers=(("torch", (1e-3,) * n),))
    measured = (_peer("inconclusive", 2.9, 2.5, 3.3), _peer("exceeded", 4.4, 4.1, 4.9))
    (peer,) = judged_peers(samples, {"torch": 3.0}, TimePolicy(), ("torch",), {"torch": measured})
    assert peer.status == "inconclusive" and peer.low == 2.5 and peer.high >= 4.9


# --- the property: no verdict reads inconclusive beside an interval wholly past its limit ------


@st.composite
def decisions(draw, reasons: bool) -> MetricVerdict:
    """A time verdict as the judge makes it: on a quiet machine (``regressed`` needs the
    interval above 1 and the ratio past the limit), on each side's own run time (the whole
    interval past the limit), or, where ``reasons``, held because a side's run time cannot be
    told (not measured again)."""
    ratio = draw(st.floats(0.6, 2.5))
    width = draw(st.floats(0.005, 0.6))
    low, high = ratio * math.exp(-width), ratio * math.exp(width)
    rule = draw(st.sampled_from(("quiet", "own", "reason") if reasons else ("quiet", "own")))
    if rule == "reason":  # held for a run time that cannot be told: decided only wholly past (busy.untold_decision)
        return (
            _time("regressed", ratio, low, high)
            if low > LIMIT
            else _time("inconclusive", ratio, low, high, reason="busy")
        )
    if rule == "quiet":
        fails = low > 1 and ratio > LIMIT
    else:
        fails = low > LIMIT
    status = "regressed" if fails else ("pass" if high <= LIMIT else "inconclusive")
    return _time(status, ratio, low, high, own=rule == "own")


@settings(max_examples=300, deadline=None)
@given(first=decisions(reasons=True), second=decisions(reasons=True), pooled=decisions(reasons=False))
def test_no_final_verdict_is_inconclusive_beside_an_interval_wholly_past_the_limit(first, second, pooled):
    got = _confirm({"time": first}, {"time": second}, {"time": pooled})
    final = got.verdicts["time"]
    if final.status == "inconclusive":
        assert final.decision.low <= LIMIT, (first, second, pooled, final)
    if final.status == "regressed" and "time" in got.disagreed:
        raise AssertionError("a held verdict is never regressed")


# --- a side whose run time cannot be told: the interval its waits allow -----------------------


def _untold(ratio: float, wait: float = 0.97):
    from _factories import machine, with_timings

    from pytest_tvmperf.values.record import Timing

    n = 15
    samples = TimeSamples(
        tuple(ratio * 1e-3 * (1 + 0.01 * (i % 3)) for i in range(n)),
        baseline=(1e-3,) * n,
        preempted=(wait,) * n,
        waits=(("time", (wait,) * n), ("baseline", (0.3,) * n)),
    )
    return with_timings([Timing(machine(), samples)])


def test_a_time_held_because_a_sides_run_time_cannot_be_told_shows_the_interval_its_waits_allow():
    """Before: ``2.00x (CI 1.9-2.1x)`` beside +5%, inconclusive: the wall times' own interval,
    which the load alone can put wholly past the limit."""
    from _factories import machine, with_timings

    from pytest_tvmperf.config.limits import Limit
    from pytest_tvmperf.judge.compare import compare_time
    from pytest_tvmperf.values.record import Timing

    baseline = with_timings([Timing(machine(), TimeSamples((1e-3,) * 15))])
    verdict = compare_time(_untold(2.0), baseline, Limit(relative=0.05))
    assert verdict.status == "inconclusive" and "the run time of today's build cannot be told" in verdict.reason
    assert verdict.decision.low <= LIMIT < verdict.decision.high
    assert "interval widened by each round's CPU wait" in verdict.note
    # a ratio no load explains (even each round's wait taken out, still past the limit) is decided
    far = compare_time(_untold(100.0), baseline, Limit(relative=0.05))
    assert far.status == "regressed" and far.decision.low > LIMIT and not far.reason


def test_a_peer_held_because_a_sides_run_time_cannot_be_told_shows_the_interval_its_waits_allow():
    from pytest_tvmperf.judge.ratios import peer_verdicts

    n = 15
    samples = TimeSamples(
        tuple(6e-3 * (1 + 0.01 * (i % 3)) for i in range(n)),
        peers=(("torch", (1e-3,) * n),),
        preempted=(0.97,) * n,
        waits=(("time", (0.97,) * n), ("peer:torch", (0.1,) * n)),
    )
    (peer,) = peer_verdicts(samples, {"torch": 3.0}, 0.025, 0.07)
    assert peer.status == "inconclusive" and "cannot be told" in peer.reason
    assert peer.low <= 3.0 < peer.high, peer.describe()
