"""Verdicts of compare_exact, compare_time and compare."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
from _factories import exact, machine, record, timing, with_timings
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_tvmperf.config.time_policy import TimePolicy
from pytest_tvmperf.judge.compare import compare, compare_exact, compare_time
from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.config.parsing import EXACT_METRICS
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.judge.timestats import Z_RULE_OUT, decide

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
        (100, 99, Limit(relative=0.05), "pass"),  # down, but within the allowance: noise-sized
        (100, 94, Limit(relative=0.05), "improved"),
        (10, 7, Limit(absolute=2), "improved"),
        (10, 8, Limit(absolute=2), "pass"),
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
def test_compare_exact_improved_only_when_smaller_by_more_than_the_allowance(baseline, current, limit):
    status = compare_exact("storage_bytes", baseline, current, limit).status
    margin = limit.allowed_max(baseline) - baseline if limit.enabled else 0
    assert (status == "improved") == (limit.enabled and current < baseline - margin)


# --------------------------------------------------------------------------- compare_time

#: a policy under which the only uncertainty is the samples' own (raw mode, no noise allowance)
QUIET = TimePolicy(noise_raw=0.0)


def test_time_policy_defaults():
    assert TimePolicy() == TimePolicy(
        alpha=0.05, noise_ab=0.02, noise_normalized=0.10, noise_raw=0.15, other_machine="normalized"
    )


def test_compare_time_no_current_timing_is_na():
    verdict = compare_time(record(None), record(), Limit(relative=0.5))
    assert (verdict.status, verdict.baseline, verdict.current, verdict.decision) == ("n/a", None, None, None)


def test_compare_time_off():
    verdict = compare_time(record((5e-3,)), record((1e-3,)), Limit(enabled=False))
    assert (verdict.status, verdict.limit, verdict.decision, verdict.note) == ("not gated", "off", None, "")
    assert verdict.baseline == pytest.approx(1e-3)
    assert verdict.current == pytest.approx(5e-3)


def test_compare_time_off_without_a_baseline_for_this_machine():
    verdict = compare_time(
        record((5e-3,), mach=machine("here")), record((1e-3,), mach=machine("there")), Limit(enabled=False)
    )
    assert (verdict.status, verdict.limit, verdict.baseline, verdict.decision) == ("not gated", "off", None, None)
    assert verdict.current == pytest.approx(5e-3)


@pytest.mark.parametrize(
    ("now", "status"),
    [
        (1.0e-3, "pass"),
        (1.2e-3, "pass"),  # significant (the CI is a point) but within the threshold
        (1.26e-3, "regressed"),
        (0.81e-3, "pass"),  # faster, but within the same margin
        (0.79e-3, "improved"),
    ],
)
def test_compare_time_uses_threshold_both_ways(now, status):
    verdict = compare_time(record((now,)), record((1e-3,)), Limit(relative=0.25), QUIET)
    assert verdict.status == status
    assert verdict.decision.status == status
    assert verdict.decision.ratio == pytest.approx(now / 1e-3)
    assert verdict.note == "raw times (no common reference kernel)"
    assert verdict.limit == "+25%"


@pytest.mark.parametrize(
    ("now", "status"),
    [
        (1.0e-3, "pass"),  # one raw sample each: 90% upper bound exp(1.28 * 0.15) = 1.21 <= 1.25
        (1.26e-3, "inconclusive"),  # low = 1.26 * exp(-1.96 * 0.15) = 0.94: not shown
        (0.81e-3, "pass"),  # high = 0.81 * 1.34 = 1.09 <= 1.25: a slowdown is ruled out
        (0.79e-3, "pass"),  # faster, but not significantly (high = 1.06 > 1)
        (2.0e-3, "regressed"),  # low = 2 * 0.745 = 1.49 > 1
        (0.5e-3, "improved"),  # high = 0.5 * 1.34 = 0.67 < 1
    ],
)
def test_compare_time_raw_noise_widens_the_interval(now, status):
    verdict = compare_time(record((now,)), record((1e-3,)), Limit(relative=0.25))
    assert verdict.status == status
    assert (verdict.decision.mode, verdict.decision.noise) == ("raw", 0.15)
    # a pass is shown with the interval it was decided on (its upper end the one-sided 90% bound)
    z = 1.2815515655446004 if status == "pass" else 1.959963984540054
    assert verdict.decision.high == pytest.approx(now / 1e-3 * math.exp(z * 0.15))
    if status == "pass":
        assert verdict.decision.high <= 1.25 and verdict.decision.confidence == pytest.approx(0.8)


def test_compare_time_gates_on_median_not_mean():
    base = record((1e-3,) * 15)
    noisy = record((1e-3,) * 14 + (1.0,))  # one huge outlier
    verdict = compare_time(noisy, base, Limit(relative=0.1), TimePolicy(noise_raw=0.01))
    assert verdict.status == "pass"
    assert verdict.current == pytest.approx(1e-3)
    assert verdict.decision.ratio == pytest.approx(1.0)


def test_compare_time_outlier_among_few_samples_is_inconclusive():
    """With 3 samples the bootstrap often draws the outlier twice: the interval is wide open."""
    verdict = compare_time(record((1e-3, 1e-3, 1.0)), record((1e-3,) * 3), Limit(relative=0.1))
    assert verdict.status == "inconclusive"
    assert verdict.current == pytest.approx(1e-3)
    assert verdict.decision.ratio == pytest.approx(1.0)
    assert verdict.decision.low < 0.1 and verdict.decision.high > 10


def test_compare_time_passes_alpha_and_threshold_on():
    policy = TimePolicy(alpha=0.01, noise_raw=0.0)
    verdict = compare_time(record((1.3e-3,)), record((1e-3,)), Limit(relative=0.3), policy)
    assert verdict.status == "pass"  # ratio 1.3 is not above 1 + 0.3
    regressed = compare_time(record((1.31e-3,)), record((1e-3,)), Limit(relative=0.3), policy)
    assert regressed.status == "regressed" and regressed.decision.confidence == pytest.approx(0.99)


@pytest.mark.parametrize("limit", [Limit(), Limit(absolute=5.0)])
def test_compare_time_without_relative_limit_allows_no_slowdown(limit):
    assert compare_time(record((1.001e-3,)), record((1e-3,)), limit, QUIET).status == "regressed"
    assert compare_time(record((1e-3,)), record((1e-3,)), limit, QUIET).status == "pass"


# ---- mode selection

# raw times say 2x slower; the reference kernel (and so the process) was 2x slower too
SLOW_NOW = (2.0e-3,) * 10
SLOW_REF = (4.0e-3,) * 10
BASE_NOW = (1.0e-3,) * 10
BASE_REF = (2.0e-3,) * 10


def test_compare_time_ab_mode_when_the_baseline_artifact_was_timed():
    base = with_timings([timing(BASE_NOW, reference=BASE_REF)])
    # the baseline's artifact ran as fast as today's in the same rounds: paired ratios 1.0
    now = record(SLOW_NOW, reference=SLOW_REF, ab=SLOW_NOW)
    verdict = compare_time(now, base, Limit(relative=0.05))
    assert verdict.status == "pass"
    assert verdict.note == "the baseline's artifact timed side by side"
    assert (verdict.decision.mode, verdict.decision.noise) == ("a/b", 0.02)
    assert verdict.decision.ratio == pytest.approx(1.0)
    assert verdict.decision == decide(now.timing.samples.ab_ratios, None, 0.05, 0.05, 0.02, "a/b")
    # the numbers shown agree with the verdict: both medians of this run's side-by-side samples,
    # the stored median (recorded in another run) kept beside them
    assert (verdict.baseline, verdict.current) == (pytest.approx(2e-3), pytest.approx(2e-3))
    assert verdict.stored_baseline == pytest.approx(1e-3) and verdict.ratio == pytest.approx(1.0)


def test_compare_time_other_modes_show_the_stored_median():
    base = with_timings([timing(BASE_NOW, reference=BASE_REF)])
    verdict = compare_time(record(SLOW_NOW, reference=SLOW_REF), base, Limit(relative=0.05))
    assert verdict.decision.mode == "normalized"
    assert (verdict.baseline, verdict.stored_baseline) == (pytest.approx(1e-3), None)


def test_compare_time_ab_mode_regresses_on_the_paired_ratios():
    base = with_timings([timing(BASE_NOW)])
    now = record(BASE_NOW, ab=(0.8e-3,) * 10)  # same raw time as the baseline, 1.25x its artifact
    verdict = compare_time(now, base, Limit(relative=0.05))
    assert verdict.status == "regressed"
    assert verdict.decision.mode == "a/b"
    assert verdict.decision.ratio == pytest.approx(1.25)


def test_compare_time_ab_mode_uses_policy_noise_ab():
    base = with_timings([timing(BASE_NOW)])
    now = record(BASE_NOW, ab=BASE_NOW)
    verdict = compare_time(now, base, Limit(relative=0.05), TimePolicy(noise_ab=0.2))
    assert verdict.decision.noise == 0.2
    assert verdict.status == "inconclusive"


def test_compare_time_normalized_mode_with_a_common_reference():
    base = with_timings([timing(BASE_NOW, reference=BASE_REF)])
    now = record(SLOW_NOW, reference=SLOW_REF)
    verdict = compare_time(now, base, Limit(relative=0.2))
    assert verdict.status == "pass"  # 90% upper bound exp(1.28 * 0.10) = 1.14 <= 1.2
    assert verdict.note == "normalized by the reference kernel"
    assert (verdict.decision.mode, verdict.decision.noise) == ("normalized", 0.10)
    assert verdict.decision.ratio == pytest.approx(1.0)
    assert verdict.decision == decide((0.5,) * 10, (0.5,) * 10, 0.2, 0.05, 0.10, "normalized")
    assert (verdict.baseline, verdict.current) == (pytest.approx(1e-3), pytest.approx(2e-3))


def test_compare_time_normalized_default_noise_cannot_pass_the_default_threshold():
    """1.28 * noise_normalized = 1.28 * 10% > log(1.05): with the default 5% threshold an
    unchanged normalized time is inconclusive, never pass."""
    base = with_timings([timing(BASE_NOW, reference=BASE_REF)])
    now = record(BASE_NOW, reference=BASE_REF)
    verdict = compare_time(now, base, DEFAULT_THRESHOLDS["time"])
    assert verdict.decision.ratio == pytest.approx(1.0)
    assert verdict.decision.high == pytest.approx(math.exp(1.959963984540054 * 0.10))
    assert verdict.status == "inconclusive"


def test_compare_time_normalized_mode_regresses_against_the_reference():
    base = with_timings([timing(BASE_NOW, reference=BASE_REF)])
    now = record(BASE_NOW, reference=(1.6e-3,) * 10)  # same raw time, the machine was 1.25x faster
    verdict = compare_time(now, base, Limit(relative=0.05))
    assert verdict.status == "regressed"
    assert verdict.decision.mode == "normalized"
    assert verdict.decision.ratio == pytest.approx(1.25)


@pytest.mark.parametrize(
    ("now_ref", "now_name", "base_ref", "base_name"),
    [
        (SLOW_REF, "matmul/v2", BASE_REF, "matmul/v1"),  # different reference kernels
        (SLOW_REF, "matmul/v1", None, None),  # the baseline has no reference samples
        (None, None, BASE_REF, "matmul/v1"),  # today has no reference samples
    ],
)
def test_compare_time_raw_mode_without_a_common_reference(now_ref, now_name, base_ref, base_name):
    base = with_timings([timing(BASE_NOW, reference=base_ref, reference_name=base_name)])
    now = record(SLOW_NOW, reference=now_ref, reference_name=now_name)
    verdict = compare_time(now, base, Limit(relative=0.05))
    assert verdict.note == "raw times (no common reference kernel)"
    assert (verdict.decision.mode, verdict.decision.noise) == ("raw", 0.15)
    assert verdict.decision.ratio == pytest.approx(2.0)
    assert verdict.status == "regressed"  # low = 2 * exp(-1.96 * 0.15) = 1.49


def test_compare_time_other_machine_normalized_with_doubled_noise():
    there = machine("there")
    base = with_timings([timing(BASE_NOW, mach=there, reference=BASE_REF)])
    now = record(SLOW_NOW, mach=machine("here"), reference=SLOW_REF)
    policy = TimePolicy(noise_normalized=0.02)
    verdict = compare_time(now, base, Limit(relative=0.05), policy)
    assert verdict.status == "inconclusive"  # high = exp(1.96 * 0.04) = 1.082 > 1.05
    assert verdict.note == f"vs another machine (there, {there.fingerprint}), normalized"
    assert (verdict.decision.mode, verdict.decision.noise) == ("normalized", 0.04)
    assert verdict.decision == decide((0.5,) * 10, (0.5,) * 10, 0.05, 0.05, 0.04, "normalized")
    assert (verdict.baseline, verdict.current) == (pytest.approx(1e-3), pytest.approx(2e-3))
    # the same samples on the same machine get the single noise: high = exp(1.96 * 0.02) = 1.040
    same = compare_time(
        now, with_timings([timing(BASE_NOW, mach=machine("here"), reference=BASE_REF)]), Limit(relative=0.05), policy
    )
    assert (same.status, same.decision.noise) == ("pass", 0.02)


def test_compare_time_other_machine_default_noise_is_inconclusive_at_5_percent():
    base = with_timings([timing(BASE_NOW, mach=machine("there"), reference=BASE_REF)])
    now = record(SLOW_NOW, mach=machine("here"), reference=SLOW_REF)
    verdict = compare_time(now, base, Limit(relative=0.05))
    assert verdict.decision.noise == 0.20  # twice noise_normalized
    assert verdict.status == "inconclusive"  # 90% upper bound exp(1.28 * 0.20) = 1.29 > 1.05
    assert verdict.decision.high == pytest.approx(math.exp(1.959963984540054 * 0.20))


def test_compare_time_other_machine_prefers_the_same_cpu_model():
    other_cpu = timing(BASE_NOW, mach=machine("there"), reference=(1.0e-3,) * 10)  # normalized 1.0
    same_cpu = timing(BASE_NOW, mach=machine("here", cores=64), reference=BASE_REF)  # normalized 0.5
    base = with_timings([other_cpu, same_cpu])
    now = record(SLOW_NOW, mach=machine("here", cores=2), reference=SLOW_REF)  # normalized 0.5
    verdict = compare_time(now, base, Limit(relative=0.5))
    assert verdict.note == f"vs another machine (here, {same_cpu.machine.fingerprint}), normalized"
    assert verdict.decision.ratio == pytest.approx(1.0)
    assert verdict.status == "pass"


def test_compare_time_same_cpu_name_other_target_never_regresses():
    """Clouds report generic CPU names: a baseline built for another mcpu under the same
    name is held (shown), never failed; a pass may stand."""
    from dataclasses import replace as dc_replace

    there = dc_replace(machine("AMD EPYC", cores=64), target='{"mcpu": "znver4"}')
    here = dc_replace(machine("AMD EPYC"), target='{"mcpu": "x86-64-v2"}')
    base = with_timings([timing(BASE_NOW, mach=there, reference=BASE_REF)])  # normalized 0.5
    slower = record(SLOW_NOW, mach=here, reference=BASE_REF)  # normalized 1.0: 2x
    verdict = compare_time(slower, base, Limit(relative=0.05))
    assert verdict.decision.ratio == pytest.approx(2.0)
    assert verdict.status == "inconclusive"
    assert verdict.reason.startswith('baseline built for another target ({"mcpu": "znver4"})')
    same = compare_time(record(BASE_NOW, mach=here, reference=BASE_REF), base, Limit(relative=0.5))
    assert same.status == "pass"


def test_compare_time_other_machine_skips_timings_with_another_reference():
    wrong_ref = timing(BASE_NOW, mach=machine("here", cores=64), reference=BASE_REF, reference_name="other/v9")
    usable = timing(BASE_NOW, mach=machine("there"), reference=BASE_REF)
    base = with_timings([wrong_ref, usable])
    now = record(SLOW_NOW, mach=machine("here"), reference=SLOW_REF)
    verdict = compare_time(now, base, Limit(relative=0.5))
    assert verdict.note == f"vs another machine (there, {usable.machine.fingerprint}), normalized"


def test_compare_time_other_machine_without_a_common_reference_is_not_gated():
    here = record((2e-3,), mach=machine("here"), reference=(1e-3,))
    base = record((1e-3,), mach=machine("there"), reference=(1e-3,), reference_name="other/v9")
    verdict = compare_time(here, base, Limit(relative=0.1))
    assert (verdict.status, verdict.baseline, verdict.decision, verdict.limit) == ("not gated", None, None, "+10%")
    assert verdict.current == pytest.approx(2e-3)
    assert verdict.note == (
        f"no time baseline for this machine (fingerprint {machine('here').fingerprint}); "
        f"1 other machine(s) recorded, none with reference kernel {here.timing.samples.reference_name}"
    )


def test_compare_time_other_machine_without_reference_samples_is_not_gated():
    here = record((2e-3,), mach=machine("here"))
    base = record((1e-3,), mach=machine("there"))
    verdict = compare_time(here, base, Limit(relative=0.1))
    assert verdict.status == "not gated"
    assert verdict.baseline is None
    assert verdict.current == pytest.approx(2e-3)
    assert verdict.note == (
        f"no time baseline for this machine (fingerprint {machine('here').fingerprint}); "
        "this run has no reference-kernel samples to normalize by"
    )


def test_compare_time_other_machine_skip_policy():
    here = record((2e-3,), mach=machine("here"), reference=(1e-3,))
    base = record((1e-3,), mach=machine("there"), reference=(1e-3,))
    verdict = compare_time(here, base, Limit(relative=0.1), TimePolicy(other_machine="skip"))
    assert (verdict.status, verdict.baseline, verdict.decision) == ("not gated", None, None)
    assert verdict.note == (
        f"no time baseline for this machine (fingerprint {machine('here').fingerprint}); "
        "1 other machine(s) recorded, not compared (--tvmperf-other-machine=skip)"
    )


def test_compare_time_no_timings_recorded_at_all():
    here = record((2e-3,), reference=(1e-3,))
    verdict = compare_time(here, record(None), Limit(relative=0.1))
    assert (verdict.status, verdict.baseline, verdict.decision) == ("not gated", None, None)
    assert verdict.note == (
        f"no time baseline for this machine (fingerprint {machine().fingerprint}); no machine has a time baseline yet"
    )


def test_compare_time_same_machine_is_preferred_over_others():
    here, there = machine("here"), machine("there")
    base = with_timings(
        [
            timing((1e-3,) * 10, mach=there, reference=(1e-3,) * 10),
            timing((1e-3,) * 10, mach=here, reference=(2e-3,) * 10),
        ]
    )
    now = record((1e-3,) * 10, mach=here, reference=(2e-3,) * 10)
    verdict = compare_time(now, base, Limit(relative=0.05))
    assert verdict.note == "normalized by the reference kernel"
    assert verdict.decision.ratio == pytest.approx(1.0)


# ---- properties through compare_time

#: 10 to 30 samples within 1% of each other
tight = st.tuples(
    st.floats(min_value=1e-6, max_value=1.0),
    st.lists(st.floats(min_value=1.0, max_value=1.01), min_size=10, max_size=30),
).map(lambda sf: tuple(sf[0] * f for f in sf[1]))


@settings(max_examples=30, deadline=None)
@given(samples=tight, threshold=st.floats(min_value=0.04, max_value=2), eps=st.floats(min_value=1e-3, max_value=10))
def test_scaling_samples_above_threshold_regresses(samples, threshold, eps):
    factor = (1 + threshold) * (1 + eps)
    current = record(tuple(s * factor for s in samples))
    verdict = compare_time(current, record(samples), Limit(relative=threshold), TimePolicy(noise_raw=0.01))
    assert verdict.status == "regressed"
    assert verdict.ratio == pytest.approx(factor)
    assert verdict.decision.ratio == pytest.approx(factor)


@settings(max_examples=30, deadline=None)
@given(samples=tight, threshold=st.floats(min_value=0.04, max_value=2), eps=st.floats(min_value=1e-3, max_value=10))
def test_scaling_samples_below_threshold_improves(samples, threshold, eps):
    factor = 1 / ((1 + threshold) * (1 + eps))
    current = record(tuple(s * factor for s in samples))
    verdict = compare_time(current, record(samples), Limit(relative=threshold), TimePolicy(noise_raw=0.01))
    assert verdict.status == "improved"
    assert verdict.decision.ratio == pytest.approx(factor)


sample_lists = st.lists(st.floats(min_value=1e-7, max_value=1.0), min_size=1, max_size=15)


@settings(max_examples=40, deadline=None)
@given(samples=sample_lists, limit=limits)
def test_identical_samples_never_regress(samples, limit):
    verdict = compare_time(record(tuple(samples)), record(tuple(samples)), limit)
    if not limit.enabled:
        assert (verdict.status, verdict.decision) == ("not gated", None)
        return
    threshold = limit.relative if limit.relative is not None else 0.0
    assert verdict.decision.ratio == 1.0
    assert verdict.status == verdict.decision.status
    z = NormalDist().inv_cdf(1 - 0.05 / 2)
    upper90 = verdict.decision.high ** (Z_RULE_OUT / z)
    assert verdict.status == ("inconclusive" if upper90 > 1 + threshold else "pass")


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
        (("pass", "inconclusive"), "inconclusive"),
        (("improved", "inconclusive"), "inconclusive"),
        (("inconclusive", "improved", "pass"), "inconclusive"),
        (("inconclusive", "regressed"), "regressed"),
        (("regressed", "inconclusive", "improved"), "regressed"),
    ],
)
def test_comparison_status(statuses, overall):
    comparison = Comparison(tuple(_v(f"m{i}", s) for i, s in enumerate(statuses)))
    assert comparison.status == overall
    assert comparison.inconclusive is ("inconclusive" in statuses)


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
    # 3 raw samples with 10% spread and raw noise 15% cannot rule out a 5% slowdown
    assert [v.status for v in result.verdicts] == ["pass"] * len(EXACT_METRICS) + ["inconclusive"]
    assert result.get("time").decision.mode == "raw"
    assert result.inconclusive is True
    assert result.status == "inconclusive"
    assert (result.regressions, result.improvements) == ((), ())


def test_compare_all_pass_with_a_quiet_time():
    quiet = (1e-3,) * 10
    result = compare(record(quiet, ab=quiet), with_timings([timing(quiet)]), DEFAULT_THRESHOLDS)
    assert {v.status for v in result.verdicts} == {"pass"}
    assert result.get("time").decision.mode == "a/b"
    assert result.inconclusive is False
    assert result.status == "pass"


def test_compare_passes_the_policy_to_the_time_verdict():
    result = compare(record((2e-3,)), record((1e-3,)), DEFAULT_THRESHOLDS, TimePolicy(alpha=0.2, noise_raw=0.5))
    decision = result.get("time").decision
    assert (decision.confidence, decision.noise) == (pytest.approx(0.8), 0.5)
    assert result.status == "regressed"  # low = 2 * exp(-1.28 * 0.5) = 1.054 > 1
    # at alpha 5% the same noise hides it: low = 2 * exp(-1.96 * 0.5) = 0.75
    assert (
        compare(record((2e-3,)), record((1e-3,)), DEFAULT_THRESHOLDS, TimePolicy(noise_raw=0.5)).status
        == "inconclusive"
    )


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


def test_compare_time_same_program_passes_without_a_ratio_whatever_the_times():
    from pytest_tvmperf.judge.compare import AB_SAME, SAME_PROGRAM_CELL, SAME_PROGRAM_NOTE, same_program_cell

    base = with_timings([timing(BASE_NOW)])
    now = record((3.0e-3,) * 10)  # 3x the stored median: the same code cannot have regressed
    verdict = compare_time(now, base, Limit(relative=0.05), ab_source=AB_SAME)
    assert verdict.status == "pass" and verdict.decision is None
    assert verdict.note == SAME_PROGRAM_NOTE and "byte for byte" in verdict.note
    assert same_program_cell(Comparison((verdict,))) == SAME_PROGRAM_CELL
    other = compare_time(now, base, Limit(relative=0.05))  # timed: the same numbers regress
    assert other.status == "regressed" and same_program_cell(Comparison((other,))) == ""
    assert same_program_cell(None) == ""


def test_compare_time_same_program_with_time_off_is_still_off():
    from pytest_tvmperf.judge.compare import AB_SAME

    verdict = compare_time(record(BASE_NOW), with_timings([timing(BASE_NOW)]), Limit(enabled=False), ab_source=AB_SAME)
    assert verdict.status == "not gated"
