"""result/run_report.py: the run report is the one collector of outcomes and notes, and
crosses from an xdist worker to the controller as one payload (pure: no TVM, no pytest run)."""

from __future__ import annotations

import json

from _factories import record

from pytest_tvmperf.report.terminal import EndOfRun, end_of_run
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.run_notes import Note

HANDED_OVER = (Note.NOT_MEASURED, Note.TUNING, Note.UNTUNED, Note.EXPORT)


def outcome(name: str, verdict: str = "recorded") -> Outcome:
    return Outcome(f"t.py::{name}[llvm-prim]", f"{name}[llvm-prim]", "prim", "llvm", verdict, record=record())


def worker(name: str, *notes: str) -> RunReport:
    """A worker's report of one test that brought ``notes``, and one note of each other kind."""
    report = RunReport()
    report.add(outcome(name), notes)
    report.note(f"tuning line of {name}", Note.TUNING)
    report.note(f"t.py::{name}_tuned[llvm-prim]", Note.UNTUNED)
    return report


def sent(report: RunReport) -> dict:
    """What the controller gets: the payload through JSON, as execnet's builtin types."""
    return json.loads(json.dumps(report.to_payload()))


def test_a_payload_merged_gives_the_same_report():
    one = worker("a", "peer torch not timed: no torch", "baselines predate peak_bytes")
    one.note("compiled artifacts cannot be exported here, a/b timing is off (no cc)", Note.EXPORT)
    controller = RunReport()
    controller.merge(sent(one))
    assert controller.result_entries() == one.result_entries()
    assert {k: controller.notes(k) for k in Note} == {k: one.notes(k) for k in HANDED_OVER} | {
        k: () for k in Note if k not in HANDED_OVER
    }
    assert controller.to_payload() == one.to_payload()
    assert sorted(one.to_payload()) == ["export_problem", "not_measured", "results", "tuning_lines", "untuned_here"]


def test_the_payload_keeps_its_keys_and_lists_each_reason_once_sorted():
    report = worker("a", "z reason", "a reason", "z reason")
    payload = report.to_payload()
    assert sorted(payload) == ["not_measured", "results", "tuning_lines", "untuned_here"]  # no export problem: no key
    assert payload["not_measured"] == ["a reason", "z reason"]


def test_two_workers_merge_in_either_order_to_the_same_lines():
    a, b = worker("a", "shared reason", "only a"), worker("b", "shared reason", "only b")
    ab, ba = RunReport(), RunReport()
    for controller, order in ((ab, (a, b)), (ba, (b, a))):
        for report in order:
            controller.merge(sent(report))
    assert ab.notes(Note.NOT_MEASURED) == ba.notes(Note.NOT_MEASURED) == ("only a", "only b", "shared reason")
    assert sorted(e.nodeid for e in ab.result_entries()) == sorted(e.nodeid for e in ba.result_entries())
    # the summary lines of the reasons come sorted, whichever worker finished first
    reasons = [
        [line for line in end_of_run(EndOfRun(c)) if line.text.startswith(("tvmperf: only", "tvmperf: shared"))]
        for c in (ab, ba)
    ]
    assert reasons[0] == reasons[1] and [line.text for line in reasons[0]] == [
        "tvmperf: only a",
        "tvmperf: only b",
        "tvmperf: shared reason",
    ]


def test_a_note_a_test_wrote_on_a_worker_is_printed_by_the_controller():
    report = worker("a", "peer torch not timed: no torch")
    report.note("compiled artifacts cannot be exported here, a/b timing is off (no cc)", Note.EXPORT)
    controller = RunReport()
    controller.merge(sent(report))
    shown = [line.text for line in end_of_run(EndOfRun(controller, tune_command="pytest --tvmperf-tune=64"))]
    assert "tvmperf: peer torch not timed: no torch" in shown
    assert "tvmperf: compiled artifacts cannot be exported here, a/b timing is off (no cc)" in shown
    assert "tuning line of a" in shown
    assert any("1 tuned test(s) skipped" in line and "a_tuned" in line for line in shown)
