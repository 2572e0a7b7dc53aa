"""Pure parts of the intended-change flow (issue 45): whether a pull request's entry
differs from the base branch's, what it changes (metric, old, new, with the callees), the
Markdown a reviewer reads, and which metrics of an approved entry are not what was measured."""

from __future__ import annotations

from _factories import exact, record

from pytest_tvmperf.check.approval import mismatches
from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.judge.verdict import FAILING, Verdict
from pytest_tvmperf.result.baseline_change import (
    STATE_NOTE,
    ChangeState,
    ChangedEntry,
    change_lines,
    entries_differ,
    markdown,
    state_of_note,
)


def test_an_entry_differs_when_added_removed_or_changed_in_any_field():
    base = record(metrics=exact(instructions=10))
    assert not entries_differ(base, record(metrics=exact(instructions=10)))
    assert not entries_differ(None, None)
    assert entries_differ(None, base) and entries_differ(base, None)
    assert entries_differ(base, record(metrics=exact(instructions=11)))
    assert entries_differ(base, record(samples=(2e-3, 2e-3, 2e-3), metrics=exact(instructions=10)))  # a time only


def test_the_change_names_each_metric_old_new_and_its_callees():
    lines = change_lines(
        record(metrics=exact(instructions=10, storage=1024)),
        record(metrics=exact(instructions=13, storage=1024), samples=(2e-3, 2e-3, 2e-3)),
    )
    assert lines[0] == "  instructions 10 -> 13 (+3)"
    assert lines[1] == "    by callee: +3 vm.builtin.alloc_tensor"
    assert not any("storage_bytes" in line for line in lines)  # unchanged: not listed
    assert any(line.startswith("  time on ") and "median 1 ms -> 2 ms" in line for line in lines)
    assert change_lines(None, record())[0].startswith("  new entry: instructions 10, calls 4, kernels 3")
    assert change_lines(record(), None) == ["  entry removed (the test has no baseline in the change)"]


def test_the_markdown_counts_each_state_and_says_how_to_approve():
    changed = [
        ChangedEntry("test_a[llvm-vm]", "baselines/t.json", ChangeState.UNAPPROVED, ("  instructions 1 -> 2 (+1)",)),
        ChangedEntry("test_`b`", "baselines/t.json", ChangeState.VERIFIED, ()),
    ]
    text = markdown(changed, "origin/main", approved=False)
    assert text.startswith(
        "### pytest-tvmperf: this change re-recorded 2 baseline(s) against `origin/main` "
        "(1 not approved, 1 approved, verified)"
    )
    assert "- ⏸️ `test_a[llvm-vm]` in `baselines/t.json`: not approved\n  - instructions 1 -> 2 (+1)" in text
    assert "`` test_`b` ``" in text  # a test id of backticks stays one code span
    assert "**To approve:**" in text and "--tvmperf-approved-change=on" in text
    assert "**To approve:**" not in markdown(changed, "origin/main", approved=True)
    assert markdown([], "origin/main", approved=False) == ""


def test_an_outcome_note_says_the_state_and_both_failing_states_fail():
    for state, note in STATE_NOTE.items():
        assert state_of_note(note + "; other") is state
    assert state_of_note("pass") is None
    assert {Verdict.UNAPPROVED_CHANGE, Verdict.UNVERIFIED_CHANGE} <= FAILING


def test_a_metric_past_its_limit_either_way_is_a_mismatch():
    comparison = Comparison(
        (
            MetricVerdict("instructions", Verdict.IMPROVED, 60, 28, "+0"),  # the entry claims more than measured
            MetricVerdict("calls", Verdict.REGRESSED, 20, 27, "+0"),
            MetricVerdict("kernels", Verdict.PASS, 6, 6, "+0"),
            MetricVerdict("time", Verdict.NOT_GATED, None, 1e-3, "off"),
        )
    )
    assert mismatches(comparison) == [
        "  instructions: the entry says 60, this code measures 28 (lower; limit +0, both ways for a re-recorded entry)",
        "  calls: the entry says 20, this code measures 27 (higher; limit +0, both ways for a re-recorded entry)",
    ]
