"""The time verdict's statistics: decide(), its confidence interval and its four outcomes."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.judge.timestats import Z_RULE_OUT, TimeDecision, bootstrap_se_log_ratio, decide

# decide() bootstraps 2000 resamples per call: keep the example counts modest.
few = settings(max_examples=40, deadline=None)

MODES = ("a/b", "normalized", "raw")


def z(alpha: float) -> float:
    return NormalDist().inv_cdf(1 - alpha / 2)


# --------------------------------------------------------------------------- strategies

#: samples of any spread (positive, finite, over 12 orders of magnitude)
any_samples = st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=1, max_size=20)
thresholds = st.floats(min_value=0.01, max_value=1.0)
alphas = st.floats(min_value=1e-4, max_value=0.5)
noises = st.floats(min_value=0.0, max_value=0.5)
modes = st.sampled_from(MODES)


@st.composite
def tight_samples(draw) -> list[float]:
    """10 to 30 samples within 1% of each other (max/min <= 1.01)."""
    scale = draw(st.floats(min_value=1e-6, max_value=1.0))
    spread = st.floats(min_value=1.0, max_value=1.01)
    return [scale * f for f in draw(st.lists(spread, min_size=10, max_size=30))]


# Under tight samples (bootstrap SE of the log ratio <= ~0.0071) and noise <= 0.01, the
# total SE stays <= ~0.0122, so z * SE <= 2.576 * 0.0122 < log(1.04): every factor past
# (1 + threshold) with threshold >= 4% and alpha >= 1% is significant as well as large.
low_noise = st.floats(min_value=0.0, max_value=0.01)
clear_thresholds = st.floats(min_value=0.04, max_value=1.0)
clear_alphas = st.floats(min_value=0.01, max_value=0.2)
margins = st.floats(min_value=1e-3, max_value=2.0)


# --------------------------------------------------------------------------- examples: the four outcomes


BASE = [1.0] * 10


@pytest.mark.parametrize(
    ("now", "noise", "status"),
    [
        ([1.2] * 10, 0.03, "regressed"),  # low = 1.2 * exp(-1.96 * 0.03) = 1.131 > 1, ratio > 1.05
        ([0.8] * 10, 0.03, "improved"),  # high = 0.8 * exp(1.96 * 0.03) = 0.848 < 1, ratio < 1 / 1.05
        ([1.0] * 10, 0.15, "inconclusive"),  # high = exp(1.96 * 0.15) = 1.342 > 1.05
        ([1.1] * 10, 0.15, "inconclusive"),  # a 10% slowdown that the noise hides (low = 0.82)
        ([1.0] * 10, 0.01, "pass"),  # high = exp(1.96 * 0.01) = 1.0198 <= 1.05
        ([1.03] * 10, 0.001, "pass"),  # significant (low = 1.028 > 1) but below the 5% threshold
        ([0.97] * 10, 0.001, "pass"),  # significantly faster (high = 0.972 < 1) but not by 1 / 1.05
    ],
)
def test_decide_outcomes_with_no_sample_spread(now, noise, status):
    """With identical samples the bootstrap SE is 0, so the CI is ratio * exp(+-z * noise)."""
    d = decide(now, BASE, threshold=0.05, alpha=0.05, noise=noise, mode="raw")
    assert d.status == status
    assert d.ratio == pytest.approx(now[0], rel=1e-12)
    # a pass is shown with the interval it was decided on: 80% two-sided, its upper end the
    # one-sided 90% bound (so no pass prints an interval reaching past its limit)
    zz, confidence = (Z_RULE_OUT, 0.8) if status == "pass" else (z(0.05), 0.95)
    assert d.low == pytest.approx(now[0] * math.exp(-zz * noise), rel=1e-9)
    assert d.high == pytest.approx(now[0] * math.exp(zz * noise), rel=1e-9)
    assert (round(d.confidence, 9), d.mode, d.noise) == (confidence, "raw", noise)
    if status == "pass":
        assert d.high <= 1.05


def test_decide_regressed_example_values():
    d = decide([1.2] * 10, BASE, 0.05, 0.05, 0.03, "normalized")
    assert d.status == "regressed"
    assert (round(d.low, 4), round(d.high, 4)) == (1.1315, 1.2727)
    assert d.describe() == "1.20x (95% CI 1.13-1.27x, normalized)"


def test_decide_improved_example_values():
    d = decide([0.8] * 10, BASE, 0.05, 0.05, 0.03, "raw")
    assert d.status == "improved"
    assert (round(d.low, 4), round(d.high, 4)) == (0.7543, 0.8484)
    assert d.describe() == "0.80x (95% CI 0.75-0.85x, raw)"


def test_decide_inconclusive_example_values():
    d = decide([1.0] * 10, BASE, 0.05, 0.05, 0.15, "raw")
    assert d.status == "inconclusive"
    assert (round(d.low, 4), round(d.high, 4)) == (0.7453, 1.3418)
    assert d.describe() == "1.00x (95% CI 0.75-1.34x, raw)"


def test_decide_pass_example_values():
    d = decide([1.0] * 10, BASE, 0.05, 0.05, 0.01, "raw")
    assert d.status == "pass"
    assert (round(d.low, 4), round(d.high, 4)) == (0.9873, 1.0129)  # exp(-+1.2816 * 0.01): 80%, one-sided 90%


def test_decide_ratio_of_medians_ignores_outliers():
    now = [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1000.0]
    base = [1.0, 1.0, 1.0, 1.0, 1.0, 0.001]
    d = decide(now, base, 0.05, 0.05, 0.0, "raw")
    assert d.ratio == pytest.approx(2.0)


def test_decide_ab_mode_is_the_median_of_paired_ratios():
    ratios = [1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 5.0]
    d = decide(ratios, None, 0.05, 0.025, 0.0, "a/b")
    assert d.status == "regressed"
    assert d.ratio == pytest.approx(1.1)
    assert d.confidence == 0.975
    assert d.describe() == "1.10x (97.5% CI 1.10-1.10x, a/b)"


def test_decide_ab_mode_ratio_one_passes_with_ab_noise():
    d = decide([1.0] * 15, None, 0.05, 0.05, 0.01, "a/b")
    assert d.status == "pass"
    assert d.ratio == pytest.approx(1.0)


def test_decide_threshold_zero_fails_any_significant_slowdown():
    assert decide([1.001] * 10, BASE, 0.0, 0.05, 0.0, "raw").status == "regressed"
    assert decide([0.999] * 10, BASE, 0.0, 0.05, 0.0, "raw").status == "improved"
    # with no slowdown allowed, any noise leaves a slowdown of more than 0% open
    assert decide([1.0] * 10, BASE, 0.0, 0.05, 0.001, "raw").status == "inconclusive"


def test_decide_smaller_alpha_widens_the_interval():
    wide = decide([1.06] * 10, BASE, 0.05, 0.001, 0.02, "raw")
    narrow = decide([1.06] * 10, BASE, 0.05, 0.2, 0.02, "raw")
    assert wide.low < narrow.low and wide.high > narrow.high
    assert narrow.status == "regressed"  # low = 1.06 * exp(-1.28 * 0.02) = 1.033
    assert wide.status == "inconclusive"  # low = 1.06 * exp(-3.29 * 0.02) = 0.993


def test_decide_bootstrap_counts_the_spread_of_the_samples():
    """The same medians give a wider interval when the samples spread more."""
    tight = decide([1.1, 1.1, 1.1, 1.1, 1.1], [1.0, 1.0, 1.0, 1.0, 1.0], 0.05, 0.05, 0.0, "raw")
    spread = decide([0.5, 0.8, 1.1, 1.5, 2.0], [0.5, 0.8, 1.0, 1.5, 2.0], 0.05, 0.05, 0.0, "raw")
    assert tight.ratio == pytest.approx(spread.ratio)
    assert tight.status == "regressed"
    assert spread.status == "inconclusive"
    assert spread.high - spread.low > 0.5
    assert tight.high - tight.low < 1e-9


def test_decide_accepts_tuples_and_lists_alike():
    assert decide((1.2,) * 5, (1.0,) * 5, 0.05, 0.05, 0.03, "raw") == decide(
        [1.2] * 5, [1.0] * 5, 0.05, 0.05, 0.03, "raw"
    )


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("now", "base"), [([], [1.0]), ([1.0], []), ([], None), ((), ())])
def test_decide_needs_samples_on_both_sides(now, base):
    with pytest.raises(ValueError, match=r"^decide\(\) needs samples on both sides$"):
        decide(now, base, 0.05, 0.05, 0.01, "raw")


@pytest.mark.parametrize("alpha", [0, 0.0, 1, 1.0, -0.05, 1.5, float("nan")])
def test_decide_rejects_alpha_outside_open_unit_interval(alpha):
    with pytest.raises(ValueError, match=rf"^alpha must be in \(0, 1\), got {alpha}$"):
        decide([1.0], [1.0], 0.05, alpha, 0.01, "raw")


# --------------------------------------------------------------------------- describe / bootstrap


@pytest.mark.parametrize(
    ("decision", "text"),
    [
        (TimeDecision("regressed", 1.1, 1.08, 1.12, 0.975, "a/b", 0.01), "1.10x (97.5% CI 1.08-1.12x, a/b)"),
        (TimeDecision("pass", 1.0, 0.955, 1.049, 0.95, "normalized", 0.03), "1.00x (95% CI 0.95-1.05x, normalized)"),
        (TimeDecision("inconclusive", 2.5, 1.79, 3.49, 0.995, "raw", 0.15), "2.50x (99.5% CI 1.79-3.49x, raw)"),
        (TimeDecision("improved", 0.5, 0.4, 0.6, 0.99975, "raw", 0.15), "0.50x (100% CI 0.40-0.60x, raw)"),
    ],
)
def test_describe(decision, text):
    assert decision.describe() == text


def test_bootstrap_se_is_seeded():
    now, base = [1.0, 1.3, 0.9, 1.7, 1.1], [1.0, 1.2, 0.8]
    assert bootstrap_se_log_ratio(now, base) == bootstrap_se_log_ratio(now, base)
    assert bootstrap_se_log_ratio(now, base, seed=0) != bootstrap_se_log_ratio(now, base, seed=1)
    assert bootstrap_se_log_ratio(now, base) > 0


def test_bootstrap_se_of_constant_samples_is_zero():
    assert bootstrap_se_log_ratio([2e-3] * 9, [1e-3] * 4) == pytest.approx(0.0, abs=1e-12)
    assert bootstrap_se_log_ratio([1.1] * 9, None) == pytest.approx(0.0, abs=1e-12)
    assert bootstrap_se_log_ratio([1.0], [3.0]) == pytest.approx(0.0, abs=1e-12)


def test_bootstrap_se_grows_with_the_spread():
    narrow = bootstrap_se_log_ratio([1.0, 1.01, 0.99, 1.0, 1.02], None)
    wide = bootstrap_se_log_ratio([1.0, 1.5, 0.6, 1.0, 2.0], None)
    assert 0 < narrow < wide


# --------------------------------------------------------------------------- properties


@few
@given(samples=any_samples, threshold=thresholds, alpha=alphas, noise=noises, mode=modes)
def test_identical_samples_never_regress(samples, threshold, alpha, noise, mode):
    d = decide(samples, list(samples), threshold, alpha, noise, mode)
    assert d.ratio == 1.0
    assert d.status not in ("regressed", "improved")
    if d.status == "pass":  # shown with its one-sided 90% bound, at or under the limit
        assert d.high <= 1 + threshold and d.confidence == pytest.approx(0.8)
    else:
        z = NormalDist().inv_cdf(1 - alpha / 2)
        upper90 = d.high ** (Z_RULE_OUT / z)
        assert d.status == "inconclusive" and upper90 > 1 + threshold


@few
@given(samples=tight_samples(), threshold=clear_thresholds, margin=margins, alpha=clear_alphas, noise=low_noise)
def test_scaling_above_threshold_regresses(samples, threshold, margin, alpha, noise):
    factor = (1 + threshold) * (1 + margin)
    d = decide([s * factor for s in samples], samples, threshold, alpha, noise, "raw")
    assert d.status == "regressed"
    assert d.ratio == pytest.approx(factor, rel=1e-9)
    assert d.low > 1


@few
@given(samples=tight_samples(), threshold=clear_thresholds, margin=margins, alpha=clear_alphas, noise=low_noise)
def test_scaling_below_threshold_improves(samples, threshold, margin, alpha, noise):
    factor = 1 / ((1 + threshold) * (1 + margin))
    d = decide([s * factor for s in samples], samples, threshold, alpha, noise, "normalized")
    assert d.status == "improved"
    assert d.ratio == pytest.approx(factor, rel=1e-9)
    assert d.high < 1


@few
@given(ratios=tight_samples(), threshold=clear_thresholds, margin=margins, alpha=clear_alphas, noise=low_noise)
def test_ab_ratios_above_threshold_regress(ratios, threshold, margin, alpha, noise):
    """In a/b mode the samples are ratios already: lift them all past 1 + threshold."""
    factor = (1 + threshold) * (1 + margin) / min(ratios)
    d = decide([r * factor for r in ratios], None, threshold, alpha, noise, "a/b")
    assert d.status == "regressed"
    assert d.mode == "a/b"


@few
@given(now=any_samples, base=st.none() | any_samples, threshold=thresholds, alpha=alphas, noise=noises, mode=modes)
def test_decide_is_deterministic(now, base, threshold, alpha, noise, mode):
    first = decide(now, base, threshold, alpha, noise, mode)
    again = decide(list(now), None if base is None else list(base), threshold, alpha, noise, mode)
    assert first == again


@few
@given(now=any_samples, base=st.none() | any_samples, threshold=thresholds, alpha=alphas, noise=noises, mode=modes)
def test_ci_contains_ratio_and_reports_its_inputs(now, base, threshold, alpha, noise, mode):
    d = decide(now, base, threshold, alpha, noise, mode)
    assert 0 < d.low <= d.ratio <= d.high
    # the interval is at least as wide as the noise allowance alone (a pass: at its own 80%)
    zz = Z_RULE_OUT if d.status == "pass" else z(alpha)
    assert math.log(d.high) - math.log(d.low) >= 2 * zz * noise * (1 - 1e-9) - 1e-12
    assert d.confidence == (pytest.approx(0.8) if d.status == "pass" else 1 - alpha)
    assert (d.mode, d.noise) == (mode, noise)
    assert d.status in ("pass", "regressed", "improved", "inconclusive")


@few
@given(
    now=any_samples,
    base=any_samples,
    threshold=thresholds,
    alpha=alphas,
    noise=noises,
    more=st.floats(min_value=0.0, max_value=0.5),
)
def test_more_noise_never_creates_a_verdict(now, base, threshold, alpha, noise, more):
    """More noise widens the interval: regressed can only become inconclusive or pass,
    improved only pass or inconclusive, and nothing becomes regressed or improved."""
    quiet = decide(now, base, threshold, alpha, noise, "raw")
    loud = decide(now, base, threshold, alpha, noise + more, "raw")
    assert loud.ratio == quiet.ratio
    if loud.confidence == quiet.confidence:  # a pass is shown at 80%, other verdicts at 1 - alpha
        assert loud.low <= quiet.low and loud.high >= quiet.high
    if loud.status == "regressed":
        assert quiet.status == "regressed"
    if loud.status == "improved":
        assert quiet.status == "improved"
    if quiet.status == "inconclusive":
        assert loud.status == "inconclusive"


@few
@given(
    samples=any_samples,
    threshold=st.floats(min_value=0.0, max_value=0.3),
    extra=st.floats(min_value=1e-3, max_value=0.5),
    alpha=st.floats(min_value=1e-4, max_value=0.3),
    mode=modes,
)
def test_noise_above_threshold_leaves_no_change_inconclusive(samples, threshold, extra, alpha, mode):
    """At ratio 1 with noise > threshold (and alpha <= 0.3, so z > 1) the interval reaches
    past 1 + threshold: a slowdown of the threshold cannot be ruled out."""
    d = decide(samples, list(samples), threshold, alpha, threshold + extra, mode)
    assert d.ratio == 1.0
    assert d.high > 1 + threshold
    assert d.status == "inconclusive"
