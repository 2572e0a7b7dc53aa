"""One set of numbers per verdict (issue 43): the medians shown beside a time ratio are those
of the samples the ratio was judged on, with the same estimate, in the failure text, the
summary row, the JSON files and the HTML report, and each says which estimate it is."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _factories import machine, with_timings

from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS
from pytest_tvmperf.judge.compare import compare
from pytest_tvmperf.judge.metric_verdict import MetricVerdict
from pytest_tvmperf.judge.timestats import TimeDecision
from pytest_tvmperf.report.benchmark_json import benchmark_entry
from pytest_tvmperf.report.html_report import render_html
from pytest_tvmperf.result.entry import ResultEntry, results_json
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.regression import regression_message, time_headline
from pytest_tvmperf.result.text import SummaryRow, fmt_time, summary_legend, summary_table
from pytest_tvmperf.values.record import Timing
from pytest_tvmperf.values.samples import TimeSamples

N = 15
#: per round: today's build at 1.3x the baseline's program, each waiting for a CPU
#: (today's build far more: its wall-time median is 5x its run time's)
RUN_BASE = tuple(1e-3 * (1 + 0.02 * (i % 5)) for i in range(N))
RUN_NOW = tuple(1.3 * b * (1 + 0.01 * (i % 3)) for i, b in enumerate(RUN_BASE))
WAIT_NOW, WAIT_BASE = 0.8, 0.1


def _outcome() -> Outcome:
    samples = TimeSamples(
        tuple(t / (1 - WAIT_NOW) for t in RUN_NOW),
        baseline=tuple(b / (1 - WAIT_BASE) for b in RUN_BASE),
        preempted=(WAIT_NOW,) * N,
        waits=(("time", (WAIT_NOW,) * N), ("baseline", (WAIT_BASE,) * N)),
    )
    current = with_timings([Timing(machine(), samples)])
    baseline = with_timings([Timing(machine(), TimeSamples((1e-3,) * N))])
    comparison = compare(current, baseline, DEFAULT_THRESHOLDS)
    time = comparison.get("time")
    assert time.status == "regressed" and time.decision.estimate == "own run time", time
    message = regression_message("t.py::a", "p.json", current, baseline, comparison)
    return Outcome("t.py::a", "a", "vm", "llvm", "regressed", current, baseline, comparison, message=message)


#: the medians of the samples the decision used: each side's own run time
NOW_S, BASE_S = float(np.median(RUN_NOW)), float(np.median(RUN_BASE))
SHOWN = (fmt_time(NOW_S), fmt_time(BASE_S))


def test_the_failure_text_shows_the_own_run_time_medians_it_was_judged_on():
    outcome = _outcome()
    (headline,) = [line for line in outcome.message.splitlines() if line.startswith("  time ")]
    assert headline.startswith(f"  time {SHOWN[1]} -> {SHOWN[0]} (own run time medians, side by side); a/b ratio 1.3")
    assert f"the ratio is the median of {N} paired rounds' ratios" in headline
    time = outcome.comparison.get("time")
    assert (time.current, time.baseline) == (pytest.approx(NOW_S), pytest.approx(BASE_S))


def test_the_summary_row_shows_the_same_medians_and_says_which_estimate():
    row = SummaryRow.of(ResultEntry.of(_outcome()))
    assert (row.median_s, row.baseline_s) == (pytest.approx(NOW_S), pytest.approx(BASE_S))
    line = summary_table([row])[-1]
    assert re.search(rf"{re.escape(SHOWN[0])} +{re.escape(SHOWN[1])} +1\.3\dx \[.*\] a/b, own run time", line), line
    assert any("own run time" in legend for legend in summary_legend([row]))


def test_the_json_files_and_junit_properties_carry_the_same_medians_and_their_estimate():
    from pytest_tvmperf.result.junit import junit_properties

    outcome = _outcome()
    entry = ResultEntry.of(outcome)
    props = dict(junit_properties(outcome))
    assert (props["tvmperf_median_s"], props["tvmperf_baseline_s"]) == (pytest.approx(NOW_S), pytest.approx(BASE_S))
    assert props["tvmperf_estimate"] == "own run time"
    time = results_json([entry], "now")["tests"][0]["time"]
    assert (time["median_s"], time["baseline_s"]) == (pytest.approx(NOW_S), pytest.approx(BASE_S))
    assert time["estimate"] == "own run time"
    extra = benchmark_entry(entry)["extra_info"]
    assert (extra["tvmperf_median_s"], extra["tvmperf_baseline_s"]) == (pytest.approx(NOW_S), pytest.approx(BASE_S))
    assert extra["tvmperf_estimate"] == "own run time"


def test_the_html_report_shows_the_same_medians_and_says_which_estimate():
    page = render_html(results_json([ResultEntry.of(_outcome())], "now"))
    row = re.search(r'<tr data-verdict="regressed">.*?</tr>', page, re.S).group(0)
    cells = re.findall(r'<td class="num">(.*?)</td>', row)
    assert cells[:2] == list(SHOWN)
    assert '<span class="mode">a/b, own run time</span>' in cells[2]


def test_an_ab_headline_says_why_the_medians_ratio_lies_outside_its_interval():
    """Seen under load: ``time 547 ms -> 791 ms (medians, side by side); a/b ratio 1.13x
    (98.8% CI 1.04-1.22x)``: the medians said +45% while the ratio said +13%."""
    decision = TimeDecision("inconclusive", 1.13, 1.04, 1.22, 0.988, "a/b", 0.02, rounds=15)  # type: ignore[arg-type]
    verdict = MetricVerdict("time", "inconclusive", 0.547, 0.791, "+5%", decision=decision, bound=1.05)  # type: ignore[arg-type]
    line = time_headline(verdict, 15)
    assert "a/b ratio 1.13x (98.8% CI 1.04-1.22x), limit +5%, 15 samples; the ratio is the median of 15 paired" in line
    assert line.endswith(
        "(the two medians' own ratio, 1.45x, falls outside its interval: the rounds' load differed, and each "
        "round's ratio compares its two sides under that round's load)"
    )
    agreeing = MetricVerdict("time", "inconclusive", 0.7, 0.791, "+5%", decision=decision, bound=1.05)  # type: ignore[arg-type]
    assert "falls outside" not in time_headline(agreeing, 15)


def test_an_assert_ratio_message_says_its_medians_are_each_sides_own_run_time():
    from pytest_tvmperf.judge.ratios import relation_verdict
    from pytest_tvmperf.result.text import relation_message
    from pytest_tvmperf.values.exact_metrics import ExactMetrics

    samples = TimeSamples(
        tuple(t / (1 - WAIT_NOW) for t in RUN_NOW),
        baseline=tuple(b / (1 - WAIT_BASE) for b in RUN_BASE),
        preempted=(WAIT_NOW,) * N,
        waits=(("time", (WAIT_NOW,) * N), ("baseline", (WAIT_BASE,) * N)),
    )
    verdict = relation_verdict("a / b", samples, 1.1, 0.05, 0.07)
    text = relation_message("a / b", verdict, ExactMetrics(), ExactMetrics())
    assert f"  {SHOWN[0]} vs {SHOWN[1]} (own run time medians, measured side by side)" in text
