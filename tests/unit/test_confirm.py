"""The confirmation rule (gate.confirm), written once for time, peers and relations."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given
from hypothesis import strategies as st

from pytest_tvmperf.judge.confirmation import confirm, confirmation_note
from pytest_tvmperf.values.samples import TimeSamples


@dataclass(frozen=True)
class Fake:
    """A verdict from a measurement whose samples all equal the ratio."""

    status: str
    ratio: float
    limit: float = 1.1
    by_own_run_time: bool = False
    #: the interval shown, when held (else :attr:`interval`'s)
    shown: tuple[float, float] | None = None

    @property
    def past_limit(self) -> bool:
        return self.ratio > self.limit

    @property
    def interval(self) -> tuple[float, float]:
        """The ratio alone for a decided answer; an open one's reaches across the limit (as a
        real verdict's: ``inconclusive`` is for intervals that straddle the limit)."""
        if self.shown is not None:
            return self.shown
        if self.status == "inconclusive":
            return min(self.ratio, 1.0), max(self.ratio, self.limit)
        return self.ratio, self.ratio

    @property
    def wholly_past_limit(self) -> bool:
        return self.interval[0] > self.limit

    def held(self, *measured: "Fake") -> "Fake":
        every = (self, *measured)
        return replace(
            self, status="inconclusive", shown=(min(v.interval[0] for v in every), max(v.interval[1] for v in every))
        )

    @property
    def measured_ratio(self) -> float:
        return self.ratio

    def describe(self) -> str:
        return f"{self.ratio:.2f}x"


def judge(samples: TimeSamples) -> dict[str, Fake]:
    ratio = sum(samples.samples) / len(samples.samples)
    return {"time": Fake("regressed" if ratio > 1.1 else "pass" if ratio < 1.05 else "inconclusive", ratio)}


def test_a_clear_pass_is_not_remeasured():
    calls = []
    got = confirm(TimeSamples((1.0,) * 3), judge, lambda: calls.append(1) or TimeSamples((2.0,) * 6))
    assert calls == [] and got.second is None and got.verdicts["time"].status == "pass"


def test_a_regression_both_measurements_see_stands_on_the_pooled_samples():
    got = confirm(TimeSamples((1.5,) * 3), judge, lambda: TimeSamples((1.3,) * 6))
    assert got.verdicts["time"].status == "regressed" and not got.disagreed
    assert len(got.samples.samples) == 9 and got.second["time"].ratio == 1.3


def test_a_pooled_regression_one_measurement_does_not_bear_out_is_held_inconclusive():
    got = confirm(TimeSamples((1.08,) * 3), judge, lambda: TimeSamples((1.5,) * 6))
    assert got.first["time"].status == "inconclusive" and got.second["time"].status == "regressed"
    assert got.verdicts["time"].status == "inconclusive" and got.disagreed == {"time"}


def test_confirmation_off_keeps_the_first_verdict():
    got = confirm(TimeSamples((1.5,) * 3), judge, lambda: TimeSamples((1.0,) * 6), enabled=False)
    assert got.second is None and got.verdicts["time"].status == "regressed"


@given(first=st.floats(0.5, 2.0), second=st.floats(0.5, 2.0))
def test_a_failure_stands_only_when_each_measurement_alone_is_past_the_limit(first, second):
    got = confirm(TimeSamples((first,) * 3), judge, lambda: TimeSamples((second,) * 6))
    if got.verdicts["time"].status == "regressed":
        assert first > 1.1 and (got.second is None or second > 1.1)


def test_an_inconclusive_first_measurement_past_the_limit_is_never_confirmed_into_a_failure():
    """Seen on unchanged code: first inconclusive at 1.11x (interval across the bound), the
    pooled samples regressed; a re-measure confirms a suspected failure, it does not make one."""

    def wide(samples: TimeSamples) -> dict[str, Fake]:
        ratio = sum(samples.samples) / len(samples.samples)
        # the first (3 samples) is too short to decide; more samples decide
        status = "inconclusive" if len(samples.samples) <= 3 else ("regressed" if ratio > 1.1 else "pass")
        return {"time": Fake(status, ratio)}

    got = confirm(TimeSamples((1.11,) * 3), wide, lambda: TimeSamples((1.11,) * 6))
    assert got.first["time"].status == "inconclusive" and got.first["time"].past_limit
    assert got.second["time"].status == "regressed"
    assert got.verdicts["time"].status == "inconclusive" and got.disagreed == {"time"}


def test_the_note_says_what_each_measurement_found():
    def samples(r):
        return TimeSamples((r,) * 10)

    assert confirmation_note(confirm(samples(1.0), judge, lambda: samples(1.0))) is None  # not re-measured
    confirmed = confirm(samples(1.3), judge, lambda: samples(1.3))
    assert confirmation_note(confirmed) == (
        "first measurement regressed at 1.30x; re-measured with 20 samples in all: confirmed"
    )
    cleared = confirm(samples(1.3), judge, lambda: samples(0.7))
    assert confirmation_note(cleared) == (
        "first measurement regressed at 1.30x; re-measured with 20 samples in all: not confirmed (now pass)"
    )
    unsure = confirm(
        TimeSamples((1.06,) * 3), lambda t: {"time": Fake("inconclusive", 1.06)}, lambda: TimeSamples((1.06,) * 6)
    )
    assert unsure.verdicts["time"].status == "inconclusive"
    assert confirmation_note(unsure).endswith("re-measured with 9 samples in all: still inconclusive")
    assert "confirmed" not in confirmation_note(unsure)
    held = confirm(samples(1.07), judge, lambda: samples(1.5))
    assert confirmation_note(held).endswith(
        "fails on all samples, but the measurements disagree (1.07x, then 1.50x): inconclusive; the re-measure "
        "alone 1.50x; shown with the interval spanning both measurements' and the pooled samples': 1.29x"
    )


def test_under_load_an_open_first_look_past_the_limit_is_confirmed_by_a_second_past_it():
    """Seen under load: ``1.21x (95% CI 1.11-1.31x, a/b)`` against a 10% limit, held
    inconclusive: the first look (15 rounds) was open, so the pooled failure was held. Judged on
    each side's own run time, a failure needs the whole interval past the limit; an open first
    look past the limit is a suspicion, confirmed when the re-measure is past it too."""

    def busy(samples: TimeSamples) -> dict[str, Fake]:
        ratio = sum(samples.samples) / len(samples.samples)
        status = "inconclusive" if len(samples.samples) <= 3 else ("regressed" if ratio > 1.1 else "pass")
        return {"time": Fake(status, ratio, by_own_run_time=True)}

    got = confirm(TimeSamples((1.21,) * 3), busy, lambda: TimeSamples((1.22,) * 6))
    assert got.first["time"].status == "inconclusive" and got.verdicts["time"].status == "regressed"
    assert not got.disagreed
    # the re-measure not past the limit: held
    got = confirm(TimeSamples((1.21,) * 3), busy, lambda: TimeSamples((1.05,) * 6))
    assert got.verdicts["time"].status != "regressed"
