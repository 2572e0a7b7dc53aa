"""Failure messages and the summary table (pure text)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from _factories import exact, machine, record, timing, with_timings
from hypothesis import given
from hypothesis import strategies as st

from pytest_tvmperf.judge.compare import compare
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.result.regression import missing_baseline_message, regression_message
from pytest_tvmperf.result.markdown import markdown_summary
from pytest_tvmperf.result.text import (
    SummaryRow,
    count_diff,
    fmt_number,
    fmt_time,
    summary_legend,
    summary_notes,
    summary_table,
    update_command,
)

# --------------------------------------------------------------------------- fmt_time / fmt_number


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (2.0, "2 s"),
        (1.0, "1 s"),
        (123.4, "123 s"),
        (0.0015, "1.5 ms"),
        (1e-3, "1 ms"),
        (2.5e-5, "25 us"),
        (1e-6, "1 us"),
        (5e-7, "500 ns"),
        (1.234e-9, "1.23 ns"),
        (0.0, "0 ns"),
    ],
)
def test_fmt_time(seconds, text):
    assert fmt_time(seconds) == text


@pytest.mark.parametrize("seconds", [0.0009996, 999.7e-6, 999.7])
def test_fmt_time_never_uses_exponent_notation(seconds):
    assert "e+" not in fmt_time(seconds)


@given(st.floats(min_value=1e-12, max_value=900.0))
def test_fmt_time_unit_and_value(seconds):
    number, unit = fmt_time(seconds).split(" ")
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    assert float(number) * scale == pytest.approx(seconds, rel=5e-3)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "n/a"),
        (3, "3"),
        (3.0, "3"),
        (0, "0"),
        (-2, "-2"),
        (2.5, "2.5"),
        (1 / 3, "0.3333"),
        (12345.678, "1.235e+04"),
    ],
)
def test_fmt_number(value, text):
    assert fmt_number(value) == text


# --------------------------------------------------------------------------- count_diff


def test_count_diff_none_is_empty():
    assert count_diff(None, {"a": 1}) == ""
    assert count_diff({"a": 1}, None) == ""


def test_count_diff_equal_is_empty():
    assert count_diff({"a": 1, "b": 2}, {"b": 2, "a": 1}) == ""


def test_count_diff_largest_first_then_name():
    before = {"ret": 2, "vm.builtin.make_shape": 1, "same": 5, "gone": 1}
    after = {"ret": 1, "vm.builtin.make_shape": 7, "same": 5, "transpose": 3}
    assert count_diff(before, after) == "+6 vm.builtin.make_shape, +3 transpose, -1 gone, -1 ret"


def test_count_diff_limit():
    before = {}
    after = {f"k{i}": i + 1 for i in range(5)}
    assert count_diff(before, after, limit=2) == "+5 k4, +4 k3, ... 3 more"
    assert count_diff(before, after, limit=5) == "+5 k4, +4 k3, +3 k2, +2 k1, +1 k0"


@given(
    st.dictionaries(st.sampled_from("abcdefghij"), st.integers(0, 50)),
    st.dictionaries(st.sampled_from("abcdefghij"), st.integers(0, 50)),
)
def test_count_diff_parts_sum_to_total_change(before, after):
    text = count_diff(before, after, limit=100)
    parts = [p for p in text.split(", ") if p]
    total = sum(int(p.split(" ")[0]) for p in parts)
    assert total == sum(after.values()) - sum(before.values())
    magnitudes = [abs(int(p.split(" ")[0])) for p in parts]
    assert magnitudes == sorted(magnitudes, reverse=True)


# --------------------------------------------------------------------------- messages


def test_update_command_quotes_node_id():
    assert update_command("tests/test_x.py::test_a") == "pytest --tvmperf-update tests/test_x.py::test_a"
    assert update_command("tests/test_x.py::test_a[vm bytecode]") == (
        "pytest --tvmperf-update 'tests/test_x.py::test_a[vm bytecode]'"
    )


def test_missing_baseline_message():
    text = missing_baseline_message("tests/t.py::test_a[prim-llvm]", "test_a[prim-llvm]", "baselines/tests/t.json")
    assert text == (
        "tvmperf: no baseline for test_a[prim-llvm] in baselines/tests/t.json\n"
        "create it with: pytest --tvmperf-update 'tests/t.py::test_a[prim-llvm]'"
    )


def _metrics(instructions: dict, calls: dict) -> ExactMetrics:
    return ExactMetrics(
        instructions=instructions,
        by_callee={"ret": 1, "call": sum(instructions.values()) - 1},
        calls=calls,
        kernels=2,
        storage_bytes=100,
    )


def test_regression_message_instructions_and_calls():
    base = record(metrics=_metrics({"main": 10}, {"fused_add": 2}))
    now = record(metrics=_metrics({"main": 12, "helper": 1}, {"fused_add": 5, "transpose": 1}), tvm_version="0.28")
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    text = regression_message("tests/t.py::test_a", "baselines/tests/t.json", now, base, comparison)
    lines = text.splitlines()
    assert lines[0] == "tvmperf: instructions, calls regressed against the baseline in baselines/tests/t.json"
    assert "  instructions 10 -> 13 (+3, limit no increase)" in lines
    assert "    by callee: +3 call" in lines
    assert "    by function: +2 main, +1 helper" in lines
    assert "  calls 2 -> 6 (+4, limit no increase)" in lines
    assert "    executed calls by callee: +3 fused_add, +1 transpose" in lines
    assert "  TVM was 0.27, now 0.28" in lines
    assert not any(line.startswith("  workload was") for line in lines)
    accept = lines.index("to accept these values as the new baseline: pytest --tvmperf-update tests/t.py::test_a")
    assert lines[accept + 1] == "details:" and lines[accept + 2].startswith("  time 1 ms -> 1 ms")  # not regressed


def test_regression_message_time_with_improvement_and_workload_change():
    base = record((1e-3,), metrics=exact(kernels=3), workload="mlp-v1")
    now = record((2.5e-3, 2.5e-3, 3e-3), metrics=exact(kernels=2), workload="mlp-v2")
    comparison = compare(now, base, {**DEFAULT_THRESHOLDS, "time": Limit(relative=0.5)})
    assert [v.metric for v in comparison.regressions] == ["time"]
    text = regression_message("n", "p.json", now, base, comparison)
    assert text.splitlines() == [
        "tvmperf: time regressed against the baseline in p.json",
        "  time 1 ms -> 2.5 ms (stored median -> this run's); raw ratio 2.50x (95% CI 1.79-3.49x), limit +50%, 3 samples",
        "  workload was mlp-v1, now mlp-v2",
        "to accept these values as the new baseline: pytest --tvmperf-update n",
        "details:",
        "    compared: raw times (no common reference kernel)",
        "  (improved: kernels 3 -> 2)",
    ]


def test_regression_message_time_improvement_uses_time_format():
    base = record((4e-3,), metrics=exact(storage=100))
    now = record((1e-3,), metrics=exact(storage=200))
    comparison = compare(now, base, {**DEFAULT_THRESHOLDS, "time": Limit(relative=0.5)})
    text = regression_message("n", "p.json", now, base, comparison)
    assert text.splitlines() == [
        "tvmperf: storage_bytes regressed against the baseline in p.json",
        "  storage_bytes 100 -> 200 (+100, limit no increase)",
        "to accept these values as the new baseline: pytest --tvmperf-update n",
        "details:",
        "  time 4 ms -> 1 ms (stored median -> this run's); raw ratio 0.25x (95% CI 0.19-0.34x), limit +50%, 1 samples "
        "[improved]",
        "    compared: raw times (no common reference kernel)",
    ]
    assert "(improved: time" not in text


QUIET = (1e-3,) * 10


def test_regression_message_inconclusive_time_with_notes():
    base = with_timings([timing(QUIET, reference=(2e-3,) * 10)])
    now = record(QUIET, reference=(2e-3,) * 10)
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    assert (comparison.status, comparison.regressions) == ("inconclusive", ())
    notes = ["first measurement inconclusive at 1.00x; re-measured", "baseline artifact gone"]
    text = regression_message("t.py::a", "p.json", now, base, comparison, notes=notes)
    assert text.splitlines() == [
        "tvmperf: time inconclusive against the baseline in p.json: the noise is larger than the threshold",
        "to accept these values as the new baseline: pytest --tvmperf-update t.py::a",
        "details:",
        "  note: first measurement inconclusive at 1.00x; re-measured",
        "  note: baseline artifact gone",
        "  time 1 ms -> 1 ms (stored median -> this run's); normalized ratio 1.00x (95% CI 0.82-1.22x), limit +5%, "
        "10 samples [inconclusive]",
        "    compared: normalized by the reference kernel",
    ]


def test_regression_message_regressed_time_and_instructions_with_a_note():
    now = record((2e-3,) * 10, ab=QUIET)
    base = with_timings([timing(QUIET)], metrics=exact(instructions=9))
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    text = regression_message("t.py::a", "p.json", now, base, comparison, notes=("re-measured: confirmed",))
    assert text.splitlines() == [
        "tvmperf: instructions, time regressed against the baseline in p.json",
        "  instructions 9 -> 10 (+1, limit no increase)",
        "    by callee: +1 vm.builtin.alloc_tensor",
        "    by function: +1 main",
        "  time 1 ms -> 2 ms (medians, side by side); a/b ratio 2.00x (95% CI 1.92-2.08x), limit +5%, 10 samples; "
        "the ratio is the median of 10 paired rounds' ratios",
        "to accept these values as the new baseline: pytest --tvmperf-update t.py::a",
        "details:",
        "    compared: the baseline's artifact timed side by side",
        "  note: re-measured: confirmed",
    ]


def test_ab_headline_leads_with_the_side_by_side_medians_not_the_stored_one():
    """The stored median was recorded under load (95.5 ms); side by side today the
    baseline's artifact takes 47.5 ms and the build 51.3 ms: the headline shows those."""
    stored = (95.5e-3,) * 10
    now = record((51.3e-3,) * 10, ab=(47.5e-3,) * 10)
    base = with_timings([timing(stored)], metrics=exact(instructions=9))
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    time_verdict = comparison.get("time")
    assert time_verdict.status == "regressed"
    lines = regression_message("t.py::a", "p.json", now, base, comparison).splitlines()
    assert lines[4].startswith("  time 47.5 ms -> 51.3 ms (medians, side by side); a/b ratio 1.08x (")
    assert lines[5:7] == ["to accept these values as the new baseline: pytest --tvmperf-update t.py::a", "details:"]
    assert lines[7] == (
        "    compared: the baseline's artifact timed side by side (the baseline's stored median, "
        "95.5 ms, was measured in another run: not compared)"
    )
    assert "95.5 ms ->" not in "\n".join(lines)
    # the summary row, the JUnit properties and the results JSON show the same numbers
    from pytest_tvmperf.result.junit import junit_properties, summary_row
    from pytest_tvmperf.result.outcome import Outcome
    from pytest_tvmperf.result.entry import ResultEntry

    outcome = Outcome("t.py::a", "a", "prim", "llvm", "regressed", record=now, baseline=base, comparison=comparison)
    row = summary_row(outcome)
    assert (row.median_s, row.baseline_s, row.mode) == (pytest.approx(51.3e-3), pytest.approx(47.5e-3), "a/b")
    assert summary_table([row])[1].split()[3:7] == ["51.3", "ms", "47.5", "ms"]
    assert summary_legend([row]) and summary_legend([replace(row, mode="normalized")]) == []
    props = dict(junit_properties(outcome))
    assert (props["tvmperf_baseline_s"], props["tvmperf_mode"]) == (pytest.approx(47.5e-3), "a/b")
    assert ResultEntry.of(outcome).time.baseline_s == pytest.approx(47.5e-3)


def test_regression_message_time_not_gated_on_another_machine():
    here = machine("here")
    now = record((2e-3,), mach=here)
    base = record((1e-3,), mach=machine("there"), metrics=exact(instructions=9))
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    lines = regression_message("t.py::a", "p.json", now, base, comparison).splitlines()
    assert lines[0] == "tvmperf: instructions regressed against the baseline in p.json"
    assert lines[4:8] == ["to accept these values as the new baseline: pytest --tvmperf-update t.py::a", "details:"] + [
        "  time - -> 2 ms (this run's median); limit +5%, median of 1 samples [not gated]",
        f"    compared: no time baseline for this machine (fingerprint {here.fingerprint}); "
        "this run has no reference-kernel samples to normalize by",
    ]


def test_a_failures_head_names_every_regressed_metric_what_changed_and_the_accept_command():
    """issue 61: the fact a user needed (``note: compile pipeline changed: default -> unfused``) sat in
    the middle of 128 lines. The first 12 lines name every regressed metric, the changed pipeline and
    the accept command; how each metric was compared and the other notes follow as details."""
    now = record((2e-3,) * 10, ab=QUIET, metrics=_metrics({"main": 12, "helper": 1}, {"fused_add": 5}))
    base = with_timings([timing(QUIET)], metrics=_metrics({"main": 10}, {"fused_add": 2}))
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    notes = [f"note {i} of a long run" for i in range(20)] + ["compile pipeline changed: default -> unfused"]
    lines = regression_message("t.py::a", "p.json", now, base, comparison, notes=notes).splitlines()
    head = lines[: lines.index("details:")]
    assert len(head) <= 12
    for metric in ("instructions", "calls", "time"):
        assert any(line.startswith(f"  {metric} ") and "->" in line for line in head), metric
    assert "  note: compile pipeline changed: default -> unfused" in head
    assert head[-1] == "to accept these values as the new baseline: pytest --tvmperf-update t.py::a"
    assert "  note: note 19 of a long run" in lines[len(head) :]  # nothing is dropped: it follows


def test_regression_message_time_off_has_no_decision_and_no_note():
    now = record((2e-3,))
    base = record((1e-3,), metrics=exact(instructions=9))
    comparison = compare(now, base, {**DEFAULT_THRESHOLDS, "time": Limit(enabled=False)})
    lines = regression_message("t.py::a", "p.json", now, base, comparison).splitlines()
    assert lines[4:] == [
        "to accept these values as the new baseline: pytest --tvmperf-update t.py::a",
        "details:",
        "  time 1 ms -> 2 ms (stored median -> this run's); ratio of medians 2.00x, limit off, median of 1 samples "
        "[not gated]",
    ]


def test_regression_message_without_current_timing_has_no_time_line():
    now = record(None, metrics=exact(instructions=11))
    comparison = compare(now, record(), DEFAULT_THRESHOLDS)
    assert comparison.get("time").status == "n/a"
    text = regression_message("n", "p.json", now, record(), comparison)
    assert not any(line.lstrip().startswith("time ") for line in text.splitlines())


def test_regression_message_missing_metric_shows_na():
    base = record(metrics=exact(storage=None))
    now = record(metrics=exact(storage=None, kernels=4))
    comparison = compare(now, base, DEFAULT_THRESHOLDS)
    text = regression_message("n", "p.json", now, base, comparison)
    assert "  kernels 3 -> 4 (+1, limit no increase)" in text.splitlines()
    assert "storage_bytes" not in text


# --------------------------------------------------------------------------- summary


ROWS = [
    SummaryRow("test_mlp", "vm-bytecode", "llvm", 2e-3, 1e-3, 17, 15, "regressed"),
    SummaryRow("test_long_name[x]", "prim", "llvm", 5e-6, None, None, None, "not gated", note="no time baseline"),
    SummaryRow("t", "vm-compiled", "cuda", None, 1e-3, 3, None, "pass", note="no time baseline"),
    SummaryRow(
        "test_ab", "prim", "llvm", 1.1e-3, 1e-3, 5, 5, "inconclusive", ratio=1.0412, low=0.987, high=1.0961, mode="a/b"
    ),
]


def test_summary_table_cells():
    lines = summary_table(ROWS)
    assert len(lines) == 5
    assert lines[0].split() == [
        "test",
        "executor",
        "target",
        "median",
        "baseline",
        "ratio",
        "[CI]",
        "instr",
        "now/base",
        "verdict",
    ]
    assert lines[1].split() == ["test_mlp", "vm-bytecode", "llvm", "2", "ms", "1", "ms", "2.00x", "17/15", "regressed"]
    assert lines[2].split() == ["test_long_name[x]", "prim", "llvm", "5", "us", "-", "-", "n/a", "not", "gated"]
    assert lines[3].split() == ["t", "vm-compiled", "cuda", "-", "1", "ms", "-", "3/-", "pass"]
    # with a decision, the ratio cell is the decision's ratio and CI (not median over baseline)
    assert lines[4].split() == [
        "test_ab",
        "prim",
        "llvm",
        "1.1",
        "ms",
        "1",
        "ms",
        "1.04x",
        "[0.99-1.10]",
        "a/b",
        "5/5",
        "inconclusive",
    ]


def test_the_summary_names_the_metric_that_failed_and_shows_the_simulated_cost():
    """Seen: '0.93x [0.81-1.06] a/b ... regressed' with no word of the instruction count
    that failed the test."""
    rows = [
        SummaryRow(
            "test_onnx",
            "vm-bytecode",
            "llvm",
            0.93e-3,
            1e-3,
            17,
            17,
            "regressed",
            ratio=0.93,
            low=0.81,
            high=1.06,
            mode="a/b",
            cpu_instructions=5170,
            baseline_cpu_instructions=4985,
            failed=("cpu_instructions",),
        ),
        SummaryRow("test_mlp", "vm-bytecode", "llvm", 2e-3, 1e-3, 17, 15, "regressed", failed=["time", "instructions"]),
        SummaryRow("test_new", "prim", "llvm", 1e-3, None, None, None, "recorded", cpu_instructions=1_820_000),
    ]
    lines = summary_table(rows)
    assert "cpu_instr now/base" in lines[0]
    assert lines[1].split()[-3:] == ["5.17k/4.99k", "regressed", "(cpu_instructions)"]
    assert lines[2].split()[-4:] == ["n/a", "regressed", "(time,", "instructions)"]
    assert lines[3].split()[-2:] == ["1.82M/-", "recorded"]
    assert "cpu_instr" not in summary_table(ROWS)[0]  # no simulated cost in the run: no column
    markdown = markdown_summary(rows)
    assert "simulated instructions now/base" in markdown and "❌ regressed (cpu_instructions)" in markdown
    # the xdist hand-over (a results entry, from which the controller derives the row) keeps them
    from pytest_tvmperf.judge.verdict import Verdict
    from pytest_tvmperf.result.entry import MetricCell, ResultEntry

    entry = ResultEntry(
        "t.py::test_mlp",
        Verdict.REGRESSED,
        test_id="test_mlp",
        failed=("time", "instructions"),
        metrics=(MetricCell("time", "regressed"), MetricCell("instructions", "regressed")),
    )
    assert SummaryRow.of(ResultEntry.from_json(entry.to_json())).failed == ("time", "instructions")


def test_summary_table_ratio_needs_the_whole_interval():
    partial = SummaryRow("p", "prim", "llvm", 3e-3, 1e-3, None, None, "pass", ratio=1.5, low=None, high=2.0, mode="raw")
    assert summary_table([partial])[1].split()[7] == "3.00x"  # falls back to median over baseline


def test_summary_table_columns_align():
    lines = summary_table(ROWS)
    assert all(line == line.rstrip() for line in lines)
    for word in ("executor", "target", "median", "baseline", "ratio [CI]", "instr now/base", "verdict"):
        column = lines[0].index(word)
        for line in lines[1:]:
            assert line[column - 2 : column] == "  "  # every column starts after a two-space gap
            assert line[column] != " "
    widest = max(len(r.test) for r in ROWS)
    assert lines[0].index("executor") == widest + 2
    widest_ratio = len("1.04x [0.99-1.10] a/b")
    assert lines[0].index("instr now/base") == lines[0].index("ratio [CI]") + widest_ratio + 2


def test_summary_table_empty_is_header_only():
    assert summary_table([]) == ["test  executor  target  median  baseline  ratio [CI]  instr now/base  verdict"]


def test_summary_notes_counts_distinct_notes():
    rows = [*ROWS, SummaryRow("u", "prim", "llvm", None, None, None, None, "pass", note="a first note")]
    assert summary_notes(rows) == ["1 test(s): a first note", "2 test(s): no time baseline"]
    assert summary_notes(ROWS[:1]) == []


def test_a_simulated_count_regressed_beside_an_improved_time_says_why_both_can_hold():
    """issue 61: est_cycles "regressed" beside a time that read 0.91x [improved], with nothing saying why."""
    from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict

    comparison = Comparison(
        (
            MetricVerdict("est_cycles", "regressed", 100.0, 200.0, "1%"),
            MetricVerdict("time", "improved", 1e-3, 0.91e-3, "+5%"),
        )
    )
    now, base = record((0.91e-3,)), record((1e-3,))
    text = regression_message("t.py::a", "p.json", now, base, comparison)
    assert "est_cycles counted the build for llvm -mcpu=haswell, 1 thread under callgrind's cache model" in text
    assert "the two can move apart" in text.split("details:")[1]
