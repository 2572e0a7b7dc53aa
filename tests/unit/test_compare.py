"""Verdicts of compare_exact, compare_time and compare."""

from __future__ import annotations

import pytest
from _factories import exact, machine, record
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_tvmperf.compare import Comparison, MetricVerdict, compare, compare_exact, compare_time
from pytest_tvmperf.options import DEFAULT_THRESHOLDS, EXACT_METRICS, Limit

limits = st.one_of(
    st.just(Limit()),
    st.just(Limit(enabled=False)),
    st.floats(min_value=0, max_value=100).map(lambda r: Limit(relative=r)),
    st.floats(min_value=0, max_value=1e6).map(lambda a: Limit(absolute=a)),
)
counts = st.integers(min_value=0, max_value=10**9)

# --------------------------------------------------------------------------- compare_exact


@pytest.mark.parametrize(
    ("baseline", "current", "limit", "status"),
    [
        (10, 10, Limit(), "pass"),
        (10, 11, Limit(), "regressed"),
        (10, 9, Limit(), "improved"),
        (10, 12, Limit(absolute=2), "pass"),
        (10, 13, Limit(absolute=2), "regressed"),
        (100, 105, Limit(relative=0.05), "pass"),
        (100, 106, Limit(relative=0.05), "regressed"),
        (100, 99, Limit(relative=0.05), "improved"),
        (10, 1000, Limit(enabled=False), "not gated"),
        (None, 10, Limit(), "n/a"),
        (10, None, Limit(), "n/a"),
        (None, None, Limit(enabled=False), "n/a"),
        (0, 0, Limit(), "pass"),
        (0, 1, Limit(relative=10.0), "regressed"),  # any growth from 0 exceeds a relative limit
    ],
)
def test_compare_exact(baseline, current, limit, status):
    verdict = compare_exact("instructions", baseline, current, limit)
    assert verdict.status == status
    assert (verdict.metric, verdict.baseline, verdict.current) == ("instructions", baseline, current)


def test_compare_exact_limit_text():
    assert compare_exact("kernels", 1, 2, Limit(absolute=3)).limit == "+3"
    assert compare_exact("kernels", 1, 2, Limit(enabled=False)).limit == "off"
    assert compare_exact("kernels", None, 2, Limit(relative=0.1)).limit == "+10%"


@given(value=counts, limit=limits)
def test_compare_exact_equal_never_regresses(value, limit):
    assert compare_exact("calls", value, value, limit).status in ("pass", "not gated")


@given(baseline=counts, extra=st.integers(min_value=1, max_value=10**6), limit=limits)
def test_compare_exact_above_allowed_max_regresses(baseline, extra, limit):
    assume(limit.enabled)
    current = int(limit.allowed_max(baseline)) + extra
    assert compare_exact("calls", baseline, current, limit).status == "regressed"


@given(baseline=counts, current=counts, limit=limits)
def test_compare_exact_improved_only_when_smaller(baseline, current, limit):
    status = compare_exact("storage_bytes", baseline, current, limit).status
    assert (status == "improved") == (limit.enabled and current < baseline)


# --------------------------------------------------------------------------- compare_time


def test_compare_time_no_current_timing_is_na():
    verdict = compare_time(record(None), record(), Limit(relative=0.5))
    assert (verdict.status, verdict.baseline, verdict.current) == ("n/a", None, None)


def test_compare_time_other_machine_is_not_gated_with_note():
    here = record((2e-3,), mach=machine("here"))
    base = record((1e-3,), mach=machine("there"))
    verdict = compare_time(here, base, Limit(relative=0.1))
    assert verdict.status == "not gated"
    assert verdict.baseline is None
    assert verdict.current == pytest.approx(2e-3)
    assert machine("here").fingerprint in verdict.note
    assert "1 other machine(s) recorded" in verdict.note


def test_compare_time_off():
    verdict = compare_time(record((5e-3,)), record((1e-3,)), Limit(enabled=False))
    assert (verdict.status, verdict.limit) == ("not gated", "off")
    assert verdict.baseline == pytest.approx(1e-3)
    assert verdict.current == pytest.approx(5e-3)


@pytest.mark.parametrize(
    ("now", "status"),
    [
        (1.0e-3, "pass"),
        (1.2e-3, "pass"),
        (1.26e-3, "regressed"),
        (0.81e-3, "pass"),  # faster, but within the same margin: noise
        (0.79e-3, "improved"),
    ],
)
def test_compare_time_uses_threshold_both_ways(now, status):
    verdict = compare_time(record((now,)), record((1e-3,)), Limit(relative=0.25))
    assert verdict.status == status
    assert verdict.note == "median of samples"
    assert verdict.limit == "+25%"


def test_compare_time_gates_on_median_not_mean():
    base = record((1e-3, 1e-3, 1e-3))
    noisy = record((1e-3, 1e-3, 1.0))  # one huge outlier
    verdict = compare_time(noisy, base, Limit(relative=0.1))
    assert verdict.status == "pass"
    assert verdict.current == pytest.approx(1e-3)


sample_lists = st.lists(st.floats(min_value=1e-7, max_value=1.0), min_size=1, max_size=15)


@given(samples=sample_lists, threshold=st.floats(min_value=0, max_value=2),
       eps=st.floats(min_value=1e-6, max_value=10))
def test_scaling_samples_above_threshold_regresses(samples, threshold, eps):
    factor = (1 + threshold) * (1 + eps)
    current = record(tuple(s * factor for s in samples))
    verdict = compare_time(current, record(tuple(samples)), Limit(relative=threshold))
    assert verdict.status == "regressed"
    assert verdict.ratio == pytest.approx(factor)


@given(samples=sample_lists, threshold=st.floats(min_value=0, max_value=2),
       eps=st.floats(min_value=1e-6, max_value=10))
def test_scaling_samples_below_threshold_improves(samples, threshold, eps):
    factor = 1 / ((1 + threshold) * (1 + eps))
    current = record(tuple(s * factor for s in samples))
    assert compare_time(current, record(tuple(samples)), Limit(relative=threshold)).status == "improved"


@given(samples=sample_lists, limit=limits)
def test_identical_samples_never_regress(samples, limit):
    verdict = compare_time(record(tuple(samples)), record(tuple(samples)), limit)
    assert verdict.status == ("pass" if limit.enabled else "not gated")


# --------------------------------------------------------------------------- MetricVerdict / Comparison


@pytest.mark.parametrize(
    ("baseline", "current", "ratio"),
    [(2.0, 3.0, 1.5), (None, 3.0, None), (0, 3.0, None), (2.0, None, None)],
)
def test_metric_verdict_ratio(baseline, current, ratio):
    assert MetricVerdict("time", "pass", baseline, current, "+0%").ratio == ratio


def _v(metric, status):
    return MetricVerdict(metric, status, 1, 1, "no increase")


@pytest.mark.parametrize(
    ("statuses", "overall"),
    [
        ((), "pass"),
        (("pass", "n/a", "not gated"), "pass"),
        (("pass", "improved"), "improved"),
        (("improved", "regressed"), "regressed"),
        (("regressed", "regressed"), "regressed"),
    ],
)
def test_comparison_status(statuses, overall):
    assert Comparison(tuple(_v(f"m{i}", s) for i, s in enumerate(statuses))).status == overall


def test_comparison_collections_and_get():
    c = Comparison((_v("a", "regressed"), _v("b", "improved"), _v("c", "pass"), _v("d", "regressed")))
    assert [v.metric for v in c.regressions] == ["a", "d"]
    assert [v.metric for v in c.improvements] == ["b"]
    assert c.get("c").status == "pass"
    assert c.get("zzz") is None


# --------------------------------------------------------------------------- compare


def test_compare_all_metrics_in_order():
    result = compare(record(), record(), DEFAULT_THRESHOLDS)
    assert [v.metric for v in result.verdicts] == [*EXACT_METRICS, "time"]
    assert result.status == "pass"
    assert {v.status for v in result.verdicts} == {"pass"}


def test_compare_finds_exact_regression_and_uses_totals():
    base = record(metrics=exact(instructions=10, kernels=3))
    now = record(metrics=exact(instructions=12, kernels=2))
    result = compare(now, base, DEFAULT_THRESHOLDS)
    assert result.get("instructions").status == "regressed"
    assert (result.get("instructions").baseline, result.get("instructions").current) == (10, 12)
    assert result.get("kernels").status == "improved"
    assert result.status == "regressed"


def test_compare_respects_per_metric_thresholds():
    base = record(metrics=exact(instructions=10))
    now = record((3e-3,), metrics=exact(instructions=12))
    thresholds = {**DEFAULT_THRESHOLDS, "instructions": Limit(absolute=2), "time": Limit(enabled=False)}
    result = compare(now, base, thresholds)
    assert result.status == "pass"
    assert result.get("time").status == "not gated"


def test_compare_missing_metrics_are_na():
    base = record(metrics=exact(instructions=None, calls=None))
    now = record(metrics=exact())
    result = compare(now, base, DEFAULT_THRESHOLDS)
    assert result.get("instructions").status == "n/a"
    assert result.get("calls").status == "n/a"
    assert result.get("kernels").status == "pass"


def test_compare_needs_a_limit_per_metric():
    with pytest.raises(KeyError):
        compare(record(), record(), {"time": Limit()})
