"""The per-kernel metric plug-in point (measure/metric_sources.py): sources, the gate
on their totals, the message naming the kernels that grew, and the baseline schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest
from _factories import exact, record

from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit, parse_limit
from pytest_tvmperf.judge import compare as compare_module
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure import metric_sources
from pytest_tvmperf.values import exact_metrics
from pytest_tvmperf.measure.metric_sources import collect, fmt_count, grown_kernels
from pytest_tvmperf.values.kernel_metrics import KernelMetric
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.result import regression
from pytest_tvmperf.store.schema import check_exact
from pytest_tvmperf.values.json_fields import SchemaProblem

WIDGETS = KernelMetric("widgets", "widgets", default_limit="1%")


@dataclass(frozen=True)
class FakeSource:
    name: str
    reason: str | None
    counts: dict

    metrics = (WIDGETS,)

    def unavailable(self, prepared, settings):
        return self.reason

    def collect(self, prepared, settings):
        return self.counts


@pytest.fixture
def widgets(monkeypatch):
    """Register the made-up metric 'widgets' as a metric source would."""
    monkeypatch.setattr(metric_sources, "KERNEL_METRICS", (WIDGETS,))
    monkeypatch.setattr(exact_metrics, "KERNEL_METRICS", (WIDGETS,))
    monkeypatch.setattr(compare_module, "KERNEL_METRIC_NAMES", ("widgets",))
    return {**DEFAULT_THRESHOLDS, "widgets": Limit(relative=0.01)}


def with_widgets(counts: dict) -> ExactMetrics:
    return replace(exact(), per_kernel={"widgets": counts})


def test_collect_runs_available_sources_and_says_why_others_did_not():
    got = collect(
        (
            FakeSource("sim", None, {"widgets": {"b": 2, "a": 1}}),
            FakeSource("gpu", "no GPU here", {"widgets": {"x": 9}}),
        ),
        prepared=None,
        settings=None,
    )
    assert got.per_kernel == {"widgets": {"a": 1, "b": 2}}
    assert got.skipped == ("gpu: no GPU here",)


def test_total_is_the_gated_number_and_an_unmeasured_source_metric_is_na(widgets):
    assert with_widgets({"a": 100, "b": 50}).scalar("widgets") == 150
    assert exact().scalar("widgets") is None
    with pytest.raises(KeyError):
        exact().scalar("no_such_metric")


def test_a_kernel_that_grew_past_the_allowance_regresses_and_is_named(widgets):
    base = record(metrics=with_widgets({"fused_matmul": 1_000_000, "fused_add": 5_000}))
    now = record(metrics=with_widgets({"fused_matmul": 1_104_000, "fused_add": 5_000}))
    comparison = compare_module.compare(now, base, widgets)
    assert comparison.get("widgets").status == Verdict.REGRESSED
    message = regression.regression_message("t.py::test_a", "p.json", now, base, comparison)
    assert "widgets 1005000 -> 1109000" in message
    assert "kernels that grew: fused_matmul: 1 M -> 1.1 M widgets (+10.4%)" in message
    assert "fused_add" not in message


def test_growth_within_the_allowance_passes(widgets):
    base = record(metrics=with_widgets({"k": 1_000_000}))
    now = record(metrics=with_widgets({"k": 1_005_000}))
    assert compare_module.compare(now, base, widgets).get("widgets").status == Verdict.PASS


def test_a_baseline_without_the_metric_is_na_not_a_failure(widgets):
    comparison = compare_module.compare(record(metrics=with_widgets({"k": 5})), record(), widgets)
    assert comparison.get("widgets").status == Verdict.NA
    assert not comparison.regressions


def test_records_without_source_metrics_compare_only_the_builtin_metrics(widgets):
    comparison = compare_module.compare(record(), record(), widgets)
    assert comparison.get("widgets") is None


def test_per_kernel_round_trips_and_is_left_out_when_empty():
    metrics_ = with_widgets({"k": 3})
    data = json.loads(json.dumps(metrics_.as_json()))
    assert data["per_kernel"] == {"widgets": {"k": 3}}
    assert ExactMetrics.from_json(data) == metrics_
    assert "per_kernel" not in exact().as_json()
    assert ExactMetrics.from_json(exact().as_json()).per_kernel == {}


def test_schema_names_the_bad_per_kernel_field():
    data = with_widgets({"k": 3}).as_json()
    check_exact(data)
    data["per_kernel"]["widgets"]["k"] = -1
    with pytest.raises(SchemaProblem, match=r"exact\.per_kernel\.widgets\.k"):
        check_exact(data)


def test_grown_kernels_orders_by_growth_and_marks_new_ones():
    got = grown_kernels({"a": 100, "b": 100}, {"a": 110, "b": 300, "c": 7}, "instr")
    assert got == "b: 100 -> 300 instr (+200.0%), a: 100 -> 110 instr (+10.0%), c: 7 instr (new)"
    assert grown_kernels(None, {"a": 1}, "x") == ""


@pytest.mark.parametrize("value, shown", [(1_820_000_000, "1.82 G"), (3100, "3.1 k"), (12, "12"), (2_500_000, "2.5 M")])
def test_fmt_count(value, shown):
    assert fmt_count(value) == shown


def test_a_source_metric_takes_the_usual_threshold_syntax(widgets, monkeypatch):
    from pytest_tvmperf.config import limits

    monkeypatch.setattr(limits, "METRICS", (*limits.METRICS, "widgets"))
    assert parse_limit("widgets", "2%") == Limit(relative=0.02)
    with pytest.raises(ValueError, match="widgets"):
        parse_limit("widgets", "lots")


@dataclass(frozen=True)
class DescribedSource(FakeSource):
    how: str = "pinned target X, tool 1.0"

    def setup(self, prepared, settings):
        return self.how


def test_collect_stores_how_each_metric_was_measured():
    got = collect((DescribedSource("sim", None, {"widgets": {"a": 1}}),), prepared=None, settings=None)
    assert got.measured_with == {"widgets": "pinned target X, tool 1.0"}
    # a source that does not describe its setup, or measured nothing, adds no line
    assert collect((FakeSource("sim", None, {"widgets": {"a": 1}}),), None, None).measured_with == {}
    assert collect((DescribedSource("sim", None, {}),), None, None).measured_with == {}


def with_setup(counts: dict, how: str) -> ExactMetrics:
    return replace(with_widgets(counts), measured_with={"widgets": how} if how else {})


def test_counts_of_another_setup_are_held_not_gated(widgets):
    base = record(metrics=with_setup({"k": 1_000_000}, "haswell, valgrind-3.19.0"))
    now = record(metrics=with_setup({"k": 2_000_000}, "haswell, valgrind-3.22.0"))
    comparison = compare_module.compare(now, base, widgets)
    held = comparison.get("widgets")
    assert held.status == Verdict.NOT_GATED and not comparison.regressions
    assert held.reason == "measured with haswell, valgrind-3.22.0 here, haswell, valgrind-3.19.0 in the baseline"
    (line,) = comparison.held_setups()
    assert (
        line.startswith("widgets not gated: measured with haswell, valgrind-3.22.0 here") and "--tvmperf-update" in line
    )


@pytest.mark.parametrize("base_how, now_how", [("same", "same"), ("", "same"), ("same", "")])
def test_the_same_setup_or_an_unstated_one_is_gated(widgets, base_how, now_how):
    base = record(metrics=with_setup({"k": 1_000_000}, base_how))
    now = record(metrics=with_setup({"k": 2_000_000}, now_how))
    comparison = compare_module.compare(now, base, widgets)
    assert comparison.get("widgets").status == Verdict.REGRESSED
    assert comparison.held_setups() == ()


def test_measured_with_round_trips_and_is_schema_checked():
    m = with_setup({"k": 3}, "haswell")
    data = json.loads(json.dumps(m.as_json()))
    assert data["measured_with"] == {"widgets": "haswell"}
    assert ExactMetrics.from_json(data) == m
    check_exact(data)
    assert "measured_with" not in with_widgets({"k": 3}).as_json()
    with pytest.raises(SchemaProblem) as err:
        check_exact({**data, "measured_with": {"widgets": 3}})
    assert err.value.field == "exact.measured_with.widgets"


def test_the_runtime_line_is_no_kernel_and_is_shown_on_its_own():
    """Seen: 'kernels that grew: [runtime]: 4.58 k -> 4.76 k instructions (+4.0%)'."""
    from pytest_tvmperf.measure.metric_sources import RUNTIME_LINE, runtime_change

    before, after = {"fused_add": 400, RUNTIME_LINE: 4580}, {"fused_add": 410, RUNTIME_LINE: 4760}
    assert grown_kernels(before, after, "instructions") == "fused_add: 400 -> 410 instructions (+2.5%)"
    assert runtime_change(before, after, "instructions") == "4.58 k -> 4.76 k instructions (+3.9%)"
    assert runtime_change(before, before, "instructions") == ""
    assert grown_kernels({RUNTIME_LINE: 1}, {RUNTIME_LINE: 2}, "x") == ""


def test_the_message_puts_the_runtime_on_a_line_of_its_own(widgets):
    from pytest_tvmperf.measure.metric_sources import RUNTIME_LINE

    base = record(metrics=with_widgets({"fused_matmul": 400, RUNTIME_LINE: 4580}))
    now = record(metrics=with_widgets({"fused_matmul": 400, RUNTIME_LINE: 4770}))
    message = regression.regression_message(
        "t.py::test_a", "p.json", now, base, compare_module.compare(now, base, widgets)
    )
    assert "kernels that grew" not in message
    assert "outside the kernels (the VM runtime's own work, [runtime]): 4.58 k -> 4.77 k widgets (+4.1%)" in message


def test_a_primfunc_tests_kernel_is_named_after_its_workload(widgets):
    """Seen: 'kernels that grew: main: 16.3 M -> 17.8 M instructions': every TE test's kernel is main."""
    import dataclasses

    base = dataclasses.replace(record(metrics=with_widgets({"main": 1_000_000})), executor="prim", workload="rgb2yuv")
    now = dataclasses.replace(record(metrics=with_widgets({"main": 1_100_000})), executor="prim", workload="rgb2yuv")
    message = regression.regression_message(
        "t.py::test_a", "p.json", now, base, compare_module.compare(now, base, widgets)
    )
    assert "kernels that grew: rgb2yuv (main): 1 M -> 1.1 M widgets (+10.0%)" in message


def test_an_update_keeps_only_the_unmeasured_counts_of_the_same_program():
    """issue 23: counts this run could not measure are kept from the baseline while the
    program's other exact metrics are unchanged (as a timing-off run keeps the timings)."""
    from pytest_tvmperf.measure.metric_sources import keep_unmeasured
    from pytest_tvmperf.values.exact_metrics import ExactMetrics

    stored = ExactMetrics(
        kernels=2,
        per_kernel={"cpu_instructions": {"k": 10}, "est_cycles": {"k": 20}},
        measured_with={"cpu_instructions": "setup", "est_cycles": "setup"},
    )
    now = ExactMetrics(kernels=2)
    kept, names = keep_unmeasured(now, stored, ("cpu_instructions", "est_cycles"))
    assert kept == stored and names == ("cpu_instructions", "est_cycles")
    assert keep_unmeasured(now, stored, ()) == (now, ())  # measured (or not applicable): nothing kept
    assert keep_unmeasured(now, None, ("cpu_instructions",)) == (now, ())  # no baseline
    changed = ExactMetrics(kernels=3)  # another program: its old counts are not its own
    assert keep_unmeasured(changed, stored, ("cpu_instructions",)) == (changed, ())


def test_a_kernel_that_moved_within_the_metrics_limit_is_not_listed_as_grown():
    """Seen on ResNet-18: ``kernels that grew: ... 615 M -> 615 M cycles (+0.0%)`` beside the one
    kernel that changed: a kernel within the limit is noise, not growth."""
    before = {"conv2d6": 615_000_000, "conv2d7": 100_000_000}
    after = {"conv2d6": 615_100_000, "conv2d7": 150_000_000, "new": 5}
    got = grown_kernels(before, after, "cycles", within=0.01)
    assert got == "conv2d7: 100 M -> 150 M cycles (+50.0%), new: 5 cycles (new)"
    assert "conv2d6" in grown_kernels(before, after, "cycles")  # without a limit every growth is listed


def test_a_kernel_grown_many_times_over_reads_as_a_factor():
    """issue 61: ``kernels that grew: ... 2.3 k -> 8.09 M cycles (+352442.6%)``."""
    from pytest_tvmperf.measure.metric_sources import fmt_growth

    assert grown_kernels({"k": 2300}, {"k": 8_090_000}, "cycles") == "k: 2.3 k -> 8.09 M cycles (3517x)"
    assert (fmt_growth(100, 110), fmt_growth(100, 90), fmt_growth(100, 999), fmt_growth(100, 1000)) == (
        "+10.0%",
        "-10.0%",
        "+899.0%",
        "10x",
    )
