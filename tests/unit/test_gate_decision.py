"""The whole-test verdict and the notes the runner shows (judge/confirmation.py, pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_tvmperf.judge.confirmation import pipeline_notes, summary_note, whole_verdict
from pytest_tvmperf.judge.verdict import Verdict

COMPARISON = ["pass", "regressed", "improved", "inconclusive", "n/a", "not gated"]
PEER = ["pass", "exceeded", "inconclusive"]


def test_a_regression_is_named_before_a_slow_peer():
    v = whole_verdict("regressed", True, False, ["exceeded"])
    assert (v.verdict, v.fails, v.peers_lead, v.shown) == (Verdict.REGRESSED, True, False, True)


def test_a_peer_past_its_limit_fails_a_passing_comparison_and_leads_the_message():
    v = whole_verdict("pass", False, False, ["pass", "exceeded"])
    assert (v.verdict, v.fails, v.open, v.peers_lead) == (Verdict.SLOWER_THAN_PEER, True, False, True)


def test_an_open_peer_leaves_the_test_open_but_passing():
    v = whole_verdict("improved", False, False, ["inconclusive"])
    assert (v.verdict, v.fails, v.open, v.peers_lead, v.shown) == (Verdict.IMPROVED, False, True, True, True)


def test_a_clean_pass_shows_no_message():
    v = whole_verdict("pass", False, False, ["pass"])
    assert (v.verdict, v.fails, v.open, v.shown) == (Verdict.PASS, False, False, False)


@given(st.sampled_from(COMPARISON), st.lists(st.sampled_from(PEER), max_size=3))
def test_the_test_fails_exactly_when_a_metric_regressed_or_a_peer_exceeded(status, peers):
    v = whole_verdict(status, status == "regressed", status == "inconclusive", peers)
    assert v.fails == (status == "regressed" or "exceeded" in peers)
    assert v.verdict.fails == v.fails or v.verdict == Verdict.REGRESSED
    assert v.open == (status == "inconclusive" or "inconclusive" in peers)


def test_pipeline_change_is_noted_and_tuning_records_only_on_the_same_target():
    assert pipeline_notes("default", "tuned", True, None, "abc") == (["compile pipeline changed: default -> tuned"], "")
    notes, word = pipeline_notes("tuned", "tuned", True, "abc", "def")
    assert notes[0].startswith("tuning database records changed since the baseline (abc -> def)")
    assert word == "tuning database records changed since the baseline"
    assert pipeline_notes("tuned", "tuned", False, "abc", "def") == ([], "")
    assert pipeline_notes("tuned", "tuned", True, "abc", "abc") == ([], "")


def test_summary_note_one_line_per_kind_of_reason():
    assert (
        summary_note("", "inconclusive", "machine busy: 40% of samples preempted", "", "")
        == "time inconclusive: machine busy"
    )
    assert (
        summary_note("timed at 1 TVM thread(s): machine busy", "pass", "", "", "tuning changed")
        == "timed at 1 TVM thread(s): machine busy; tuning changed"
    )
    assert summary_note("x", "not gated", "", "another machine", "") == "time shown, not gated: another machine"
    assert summary_note("", "pass", "a reason not shown on a pass", "", "") == ""
