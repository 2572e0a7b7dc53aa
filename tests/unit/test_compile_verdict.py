"""compile_s's pure parts (issue 48): the builds interleaved in alternating order on an
injected clock, the verdict from the paired ratios (n/a with the reason, not gated for the
same program or a noisy build, never held), its threshold and selection, and its words."""

from __future__ import annotations

import math
import random

import pytest

from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit, parse_thresholds
from pytest_tvmperf.config.parsing import parse_resources
from pytest_tvmperf.config.time_policy import DecideBudget
from pytest_tvmperf.judge.compile_verdict import CANNOT_DECIDE, build_until_decided, compile_verdict, versions_verdict
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.compile_time import CompileTimer, side_by_side
from pytest_tvmperf.result.compile_text import compile_cell, compile_lines, compile_properties, stored_compile_cell
from pytest_tvmperf.result.entry import MetricCell
from pytest_tvmperf.values.compile_times import CompileTimes
from pytest_tvmperf.values.json_fields import Fields

LIMIT = Limit(relative=0.25)


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_builds_alternate_sides_on_the_injected_clock():
    clock, done = _Clock(), []

    def build(side: str, seconds: float):
        def run():
            done.append(side)
            clock.now += seconds

        return run

    timer = CompileTimer(clock=clock)
    times = side_by_side(build("b", 2.0), build("c", 3.0), timer, builds=4)
    assert done == ["b", "c", "c", "b", "b", "c", "c", "b"]  # neither side always first
    assert times.baseline_s == (2.0,) * 4 and times.current_s == (3.0,) * 4 and times.ratios == (1.5,) * 4
    assert timer.builds == ["baseline", "current", "current", "baseline"] * 2


def test_compile_times_come_in_positive_pairs():
    with pytest.raises(ValueError, match="pairs"):
        CompileTimes((1.0,), ())
    with pytest.raises(ValueError, match="positive"):
        CompileTimes((0.0,), (1.0,))


def test_the_verdict_from_the_paired_ratios():
    slower = compile_verdict(CompileTimes((1.0, 1.1, 0.9), (1.6, 1.76, 1.44)), LIMIT, 0.01)
    assert slower.status == Verdict.REGRESSED and slower.decision.ratio == pytest.approx(1.6)
    assert (slower.baseline, slower.current, slower.limit) == (1.0, 1.6, "+25%")
    same_speed = compile_verdict(CompileTimes((1.0, 1.0, 1.0), (1.02, 0.99, 1.0)), LIMIT, 0.01)
    assert same_speed.status == Verdict.PASS
    faster = compile_verdict(CompileTimes((1.0,) * 3, (0.5,) * 3), LIMIT, 0.01)
    assert faster.status == Verdict.IMPROVED
    # noise larger than the threshold: inconclusive, as a time interval straddling its limit is (issue 60)
    noisy = compile_verdict(CompileTimes((1.0, 1.0, 1.0), (0.6, 1.3, 2.4)), Limit(relative=0.05), 0.01)
    assert noisy.status == Verdict.INCONCLUSIVE and "noise is larger than the threshold" in noisy.note
    off = compile_verdict(CompileTimes((1.0,) * 3, (3.0,) * 3), Limit(enabled=False), 0.01)
    assert off.status == Verdict.NOT_GATED and off.limit == "off"


def test_nothing_built_is_na_with_the_reason_or_the_same_program_never_zero():
    assert compile_verdict(None, LIMIT, 0.01) is None  # left out: nothing shown
    na = compile_verdict(CompileTimes(skipped="the baseline stores no IR"), LIMIT, 0.01)
    assert (na.status, na.current, na.baseline, na.note) == (Verdict.NA, None, None, "the baseline stores no IR")
    same = compile_verdict(CompileTimes(same=True), LIMIT, 0.01)
    assert same.status == Verdict.NOT_GATED and "not compiled twice" in same.note
    assert compile_cell(str(same.status), None, None, same.note, same.limit) == "same program, not compiled twice"
    assert compile_cell(str(na.status), None, None, na.note, na.limit) == "n/a: the baseline stores no IR"
    assert compile_lines(na) == ["  compile_s n/a: the baseline stores no IR"]
    assert compile_properties(na) == [("tvmperf_compile_s", "n/a: the baseline stores no IR")]


def test_threshold_keys_alias_and_selection():
    assert DEFAULT_THRESHOLDS["compile_s"] == Limit(relative=0.25)
    assert parse_thresholds("compile=40%") == {"compile_s": Limit(relative=0.4)}
    assert parse_thresholds("compile_s=1.5x") == {"compile_s": Limit(relative=0.5)}
    with pytest.raises(ValueError, match="compile_s=25% or compile_s=1.25x"):
        parse_thresholds("compile_s=3")  # a ratio of times: a bare number means nothing
    assert "compile_s" in parse_resources("all")
    assert parse_resources("compile") == ("compile_s",)
    assert "compile_s" not in parse_resources("alloc_bytes,code_bytes")


def test_words_in_the_reports():
    v = compile_verdict(CompileTimes((1.0,) * 3, (1.6,) * 3), LIMIT, 0.01)
    assert compile_lines(v)[0].startswith(
        "  compile_s 1 s -> 1.6 s (medians, built side by side); a/b ratio 1.60x ("
    ) and compile_lines(v)[0].endswith("limit +25%, at most 1.25x")
    assert compile_cell(str(v.status), v.current, v.baseline, v.note, v.limit) == (
        "1 s -> 1.6 s (1.60x of the medians side by side, limit +25%): regressed"
    )
    assert dict(compile_properties(v)) == {
        "tvmperf_compile_s": 1.6,
        "tvmperf_baseline_compile_s": 1.0,
        "tvmperf_compile_ratio": pytest.approx(1.6),
    }
    assert stored_compile_cell(None, None) == ""
    assert stored_compile_cell(1.0, 2.0).startswith("stored 1 s -> 2 s")
    both = versions_verdict(3.0, 2.0, "0.26.0", "0.27.0")
    assert both.status == Verdict.NOT_GATED and both.note.startswith(
        "compile time: TVM 0.27.0 2 s, TVM 0.26.0 3 s (each version's whole build"
    )


def test_the_results_cell_keeps_its_note_and_other_metrics_keep_their_form():
    cell = MetricCell("compile_s", "n/a", None, None, "+25%", "why")
    assert cell.to_json()["note"] == "why"
    assert MetricCell.read(Fields(cell.to_json(), "", True)) == cell
    plain = MetricCell("instructions", "pass", 3, 3, "0")
    assert "note" not in plain.to_json() and MetricCell.read(Fields(plain.to_json(), "", True)) == plain


def test_html_section_and_benchmark_extra_info():
    from pytest_tvmperf.report.benchmark_json import compile_extra
    from pytest_tvmperf.report.html_report import compile_section
    from pytest_tvmperf.result.entry import ResultEntry

    slower = ResultEntry(
        "t.py::test_a", Verdict.REGRESSED, metrics=(MetricCell("compile_s", "regressed", 1.6, 1.0, "+25%"),)
    )
    na = ResultEntry(
        "t.py::test_b", Verdict.PASS, metrics=(MetricCell("compile_s", "n/a", None, None, "+25%", "no IR"),)
    )
    page = compile_section([slower, na, ResultEntry("t.py::test_c", Verdict.PASS)])
    assert "Compile time side by side" in page and "1.60x" in page and "n/a: no IR" in page
    assert compile_section([ResultEntry("t.py::test_c", Verdict.PASS)]) == ""
    assert compile_extra(slower) == {
        "tvmperf_compile_s": 1.6,
        "tvmperf_baseline_compile_s": 1.0,
        "tvmperf_compile_s_verdict": "regressed",
    }
    assert compile_extra(na) == {"tvmperf_compile_s_na": "no IR"}


def test_a_compile_time_interval_straddling_its_limit_decides_nothing():
    """issue 60: a renamed tensor's A/A builds gave 1.58x (95% CI 1.02-2.45x) against +25%, and
    the whole verdict failed on compile_s. Past the limit only when the whole interval is: an
    interval reaching under the limit is inconclusive (as time's is); one wholly past it regresses."""
    wide = compile_verdict(CompileTimes((1.0, 1.0, 1.0, 1.0), (1.1, 1.4, 1.8, 2.3)), LIMIT, 0.05)
    assert wide.decision.ratio > 1.25 and 1.0 < wide.decision.low < 1.25
    assert wide.status == Verdict.INCONCLUSIVE and "noise is larger than the threshold" in wide.note
    tight = compile_verdict(CompileTimes((1.0,) * 4, (1.58,) * 4), LIMIT, 0.05)
    assert tight.decision.low > 1.25 and tight.status == Verdict.REGRESSED


class _Builds:
    """Pairs of builds on a fake clock: today's take ``ratio`` times the baseline's, spread by
    ``sigma`` (log-normal, seeded), each pair ``seconds`` of wall clock."""

    def __init__(self, ratio: float, sigma: float = 0.2, seconds: float = 1.0) -> None:
        self.rng, self.ratio, self.sigma, self.seconds = random.Random(3), ratio, sigma, seconds
        self.now, self.asked = 0.0, []

    def __call__(self, pairs: int) -> CompileTimes:
        self.asked.append(pairs)
        self.now += self.seconds * pairs
        got = tuple(self.ratio * math.exp(self.rng.gauss(0.0, self.sigma)) for _ in range(pairs))
        return CompileTimes((1.0,) * pairs, got)


def test_builds_straddling_the_limit_are_built_on_until_decided():
    """An A/A whose 4 builds straddle +25% (spread 20% each): more pairs (2, 4, 8, ...) until the
    interval lies wholly under the limit; the verdict says how many builds and looks it took."""
    more = _Builds(1.0)
    first = more(4)
    assert compile_verdict(first, LIMIT, 0.05).status == Verdict.INCONCLUSIVE
    times = build_until_decided(first, more, LIMIT, 0.05, DecideBudget(60, 1000), lambda: more.now)
    v = compile_verdict(times, LIMIT, 0.05)
    assert v.status == Verdict.PASS and times.stopped == "decided" and times.looks >= 2
    assert more.asked == [4] + [2**k for k in range(1, times.looks + 1)]
    assert f"{len(times.ratios)} build(s) of each side, interleaved ({times.looks} more look(s): decided)" in v.note
    # a slowdown past the limit, noisier: decided the other way, in more builds (the allowance for what
    # one process cannot show, 5%, does not shrink with them; the looks' alpha does)
    more = _Builds(1.8, sigma=0.7, seconds=0.05)
    first = more(4)
    assert compile_verdict(first, LIMIT, 0.05).status == Verdict.INCONCLUSIVE
    times = build_until_decided(first, more, LIMIT, 0.05, DecideBudget(60, 1000), lambda: more.now)
    assert compile_verdict(times, LIMIT, 0.05).status == Verdict.REGRESSED and times.stopped == "decided"


def test_the_budget_bounds_the_builds_and_a_clear_verdict_spends_none():
    more = _Builds(1.25, sigma=0.4)  # at the limit, noisy: never decided
    times = build_until_decided(more(4), more, LIMIT, 0.05, DecideBudget(60, 14), lambda: more.now)
    assert times.stopped == "its budget's 14 rounds spent" and times.looks == 3 and len(times.ratios) == 4 + 14
    assert compile_verdict(times, LIMIT, 0.05).status == Verdict.INCONCLUSIVE
    more = _Builds(1.25, sigma=0.4, seconds=10.0)
    times = build_until_decided(more(4), more, LIMIT, 0.05, DecideBudget(30, 1000), lambda: more.now)
    assert times.stopped == "its budget's 30 s spent" and more.asked == [4, 2, 4]
    # builds that agree (the pairs' own error under the allowance) within 5% of the limit: more of them
    # cannot move the interval past it, so none are added, and the verdict says why
    more = _Builds(1.25, sigma=0.0)
    times = build_until_decided(more(4), more, LIMIT, 0.05, DecideBudget(), lambda: more.now)
    assert times.stopped == CANNOT_DECIDE and more.asked == [4] and times.looks == 0
    assert compile_verdict(times, LIMIT, 0.05).note.endswith(
        f"({CANNOT_DECIDE}); the interval straddles the limit: the builds' noise is larger than the threshold can tell"
    )
    more = _Builds(1.25)
    off = more(4)
    assert build_until_decided(off, more, LIMIT, 0.05, DecideBudget(0, 0), lambda: 0.0) is off
    clear = _Builds(1.0, sigma=0.0)
    first = clear(4)
    assert build_until_decided(first, clear, LIMIT, 0.05, DecideBudget(), lambda: 0.0) is first
