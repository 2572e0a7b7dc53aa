"""The typed outcome values: Verdict words, PeerCell, ResultEntry (read once, named
errors, old files), and the xdist hand-over (each outcome once, as its entry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _factories import record

from pytest_tvmperf.judge.compare import compare_exact
from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.judge.ratios import ratio_verdict
from pytest_tvmperf.config.limits import Limit
from pytest_tvmperf.result.junit import junit_properties, summary_row
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.entry import (  # noqa: I001
    MetricCell,
    KernelTime,
    ResultEntry,
    ResultsError,
    TimeCell,
    parse_results,
    results_json,
)
from pytest_tvmperf.report.history import history_line
from pytest_tvmperf.values.json_fields import SchemaProblem
from pytest_tvmperf.judge.timestats import decide
from pytest_tvmperf.judge.verdict import FAILING, TEST_VERDICTS, PeerCell, Verdict
from pytest_tvmperf.report.workers import received
from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.run_notes import Note

PATH = Path("out/results.json")
TORCH = PeerCell("torch", 2.0, 1.9, 2.1, Verdict.EXCEEDED, 1.2, 2e-3, 1e-3)
NUMPY = PeerCell("numpy", 0.5, 0.45, 0.55, Verdict.NOT_GATED, None, 2e-3, 4e-3)


def full_entry() -> ResultEntry:
    return ResultEntry(
        nodeid="tests/t.py::test_a[llvm-vm-bytecode]",
        verdict=Verdict.REGRESSED,
        test_id="test_a[llvm-vm-bytecode]",
        executor="vm-bytecode",
        target="llvm",
        note="a note",
        time=TimeCell(1.1e-3, 1e-3, 1.1, 1.05, 1.15, 0.95, "a/b", (1.1e-3, 1.2e-3), (1e-3, 1e-3)),
        kernels=(KernelTime("fused_add", 2e-4, 1e-4), KernelTime("new_kernel", 1e-4, None)),
        message="tvmperf: time regressed",
        location=("tests/t.py", 12),
        record=record(),
        baseline=record((1e-3, 1e-3, 1e-3)),
        peers=(TORCH, NUMPY),
        relation=PeerCell("a / b", 1.2, 1.1, 1.3, Verdict.PASS, 1.5, 1.2e-3, 1e-3),
        metrics=(
            MetricCell("time", "inconclusive", 1.1e-3, 1e-3, "5%"),
            MetricCell("cpu_instructions", "regressed", 5170, 4985, "1%"),
        ),
        failed=("cpu_instructions",),
    )


def document(*tests: dict) -> str:
    return json.dumps({"schema_version": 1, "kind": "pytest-tvmperf-results", "created": "x", "tests": list(tests)})


# ---------------------------------------------------------------- one vocabulary


def test_verdicts_are_the_plain_words_everywhere_they_are_written():
    assert Verdict.SLOWER_THAN_PEER == "slower than peer" and f"{Verdict.NOT_GATED}" == "not gated"
    assert json.dumps({"v": Verdict.NA}) == '{"v": "n/a"}'
    assert type(full_entry().to_json()["verdict"]) is str
    assert set(FAILING) <= set(Verdict) and set(TEST_VERDICTS) <= set(Verdict)


def test_every_status_the_gate_gives_is_a_verdict_member():
    statuses = [
        compare_exact("kernels", 3, 4, Limit(absolute=0)).status,
        compare_exact("kernels", None, 4, Limit(absolute=0)).status,
        decide([1.0] * 10, [1.0] * 10, 0.05, 0.05, 0.01, "raw").status,
        ratio_verdict("torch", (2.0,) * 10, 2e-3, 1e-3, 1.2, 0.05, 0.02).status,
        ratio_verdict("numpy", (2.0,) * 10, 2e-3, 1e-3, None, 0.05, 0.02).status,
        Comparison(()).status,
    ]
    assert all(type(s) is Verdict for s in statuses), statuses
    assert statuses == ["regressed", "n/a", "pass", "exceeded", "not gated", "pass"]


def test_an_outcome_takes_a_plain_word_as_its_member_and_junit_shows_the_word():
    outcome = Outcome("t.py::a", "a", "prim", "llvm", "slower than peer")
    assert outcome.verdict is Verdict.SLOWER_THAN_PEER
    assert ("tvmperf_verdict", "slower than peer") in junit_properties(outcome)
    assert type(dict(junit_properties(outcome))["tvmperf_verdict"]) is str
    with pytest.raises(ValueError):
        Outcome("t.py::a", "a", "prim", "llvm", "fine")


# ---------------------------------------------------------------- PeerCell


def test_peer_cell_round_trip_and_of_a_ratio_verdict():
    assert PeerCell.from_dict(json.loads(json.dumps(TORCH.to_dict()))) == TORCH
    v = ratio_verdict("torch", (2.0,) * 10, 2e-3, 1e-3, 1.2, 0.05, 0.02)
    cell = PeerCell.of(v)
    assert (cell.name, cell.ratio, cell.low, cell.high, cell.status, cell.limit) == (
        v.name,
        v.ratio,
        v.low,
        v.high,
        Verdict.EXCEEDED,
        1.2,
    )
    assert cell.to_dict()["status"] == "exceeded"


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.pop("ratio"), "peer.ratio: missing"),
        (lambda d: d.update(low="0.4"), "peer.low: expected a number, got the string '0.4'"),
        (lambda d: d.update(status="slow"), "peer.status: expected a verdict"),
        (lambda d: d.update(limit=True), "peer.limit: expected a number, got a boolean"),
    ],
)
def test_a_bad_peer_cell_names_its_field(edit, field):
    data = TORCH.to_dict()
    edit(data)
    with pytest.raises(SchemaProblem, match=f"field {field}"):
        PeerCell.from_dict(data)


# ---------------------------------------------------------------- ResultEntry


def test_result_entry_round_trips_through_json():
    entry = full_entry()
    data = json.loads(json.dumps(entry.to_json()))
    assert ResultEntry.from_json(data) == entry
    assert set(data) == {
        "nodeid",
        "test_id",
        "executor",
        "target",
        "verdict",
        "note",
        "time",
        "kernels",
        "message",
        "location",
        "record",
        "baseline",
        "peers",
        "relation",
        "metrics",
        "failed",
    }
    assert data["location"] == ["tests/t.py", 12] and data["peers"][0]["status"] == "exceeded"
    assert data["kernels"][1] == {"name": "new_kernel", "time_s": 1e-4, "baseline_time_s": None}


def test_result_entry_of_an_outcome():
    rec, base = record(), record((1e-3, 1e-3, 1e-3))
    outcome = Outcome(
        "t.py::a",
        "a",
        "vm-bytecode",
        "llvm",
        Verdict.PASS,
        record=rec,
        baseline=base,
        comparison=Comparison((MetricVerdict("instructions", Verdict.PASS, 10, 10, "no increase"),)),
        peers=(ratio_verdict("torch", (0.5,) * 10, 1e-3, 2e-3, None, 0.05, 0.02),),
        location=("t.py", 3),
    )
    entry = ResultEntry.of(outcome)
    assert entry.verdict is Verdict.PASS and entry.record == rec and entry.location == ("t.py", 3)
    assert entry.time.median_s == rec.timing.samples.median and entry.time.baseline_samples_s == (1e-3,) * 3
    assert entry.peers == (PeerCell.of(outcome.peers[0]),) and entry.relation is None
    assert ResultEntry.from_json(json.loads(json.dumps(entry.to_json()))) == entry


def test_files_from_before_peers_and_locations_still_read():
    old = {
        "nodeid": "t.py::a",
        "test_id": "a",
        "executor": "prim",
        "target": "llvm",
        "verdict": "pass",
        "note": "",
        "time": None,
        "kernels": [],
        "record": record().as_json(),
        "baseline": None,
    }
    (entry,) = parse_results(document(old), PATH)
    assert entry.verdict is Verdict.PASS and entry.peers == () and entry.location == ("", 0) and entry.message == ""
    assert entry.record == record()


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda e: e["time"].update(ratio="fast"), "field time.ratio: expected a number, got the string 'fast'"),
        (lambda e: e["kernels"][0].pop("name"), "field kernels[0].name: missing"),
        (lambda e: e["peers"][0].update(high=None), "field peers[0].high: expected a number, got null"),
        (lambda e: e.update(verdict="fine"), "field verdict: expected a verdict"),
        (lambda e: e.update(location="t.py:12"), "field location: expected [path, line]"),
        (lambda e: e["record"].pop("executor"), "record field executor: missing"),
        (lambda e: e["baseline"]["exact"].update(kernels=-1), "baseline field exact.kernels: expected a whole number"),
    ],
)
def test_a_bad_field_is_named_with_the_file_and_the_entry(edit, named):
    data = full_entry().to_json()
    edit(data)
    with pytest.raises(ResultsError) as exc:
        parse_results(document(data), PATH)
    message = str(exc.value)
    assert message.startswith(
        f"results file {PATH}: test entry 0 (tests/t.py::test_a[llvm-vm-bytecode]) is malformed: "
    )
    assert named in message and message.endswith(f"re-create it with `pytest --tvmperf-json={PATH}`")


def test_an_entry_without_a_node_id_is_named_by_its_number():
    with pytest.raises(ResultsError, match=r"test entry 1 is malformed: field nodeid: missing"):
        parse_results(document(full_entry().to_json(), {"verdict": "pass"}), PATH)


def test_lenient_reading_keeps_what_it_can():
    entry = ResultEntry.from_json(
        {
            "nodeid": "x",
            "verdict": "odd",
            "time": {"ratio": "1.2", "median_s": 1e-3},
            "record": {"exact": {}},
            "peers": ["junk", {"name": "torch"}],
            "location": 5,
        },
        strict=False,
    )
    assert entry.verdict == "odd" and entry.time == TimeCell(median_s=1e-3) and entry.record is None
    assert [p.name for p in entry.peers] == ["torch"] and entry.location == ("", 0)
    assert ResultEntry.from_json("junk", strict=False) == ResultEntry("", "")


def test_results_document_and_history_line():
    entry = full_entry()
    doc = results_json([entry, ResultEntry("a.py::b", Verdict.ERROR)], "now")
    assert [t["nodeid"] for t in doc["tests"]] == ["a.py::b", entry.nodeid]
    assert parse_results(json.dumps(doc), PATH)[1] == entry
    assert history_line([entry], "now")["tests"] == {}  # a relation's entry has no time of its own
    plain = ResultEntry("a.py::b", Verdict.PASS, time=TimeCell(median_s=2e-3))
    assert history_line([plain], "now")["tests"] == {"a.py::b": {"median_s": 2e-3, "verdict": "pass"}}


# ---------------------------------------------------------------- the xdist hand-over: one serialized outcome


class _Node:
    gateway = type("G", (), {"id": "gw0"})()

    def __init__(self, payload: dict) -> None:
        self.workeroutput = {"tvmperf": payload}


def test_the_results_entry_crosses_the_xdist_boundary_as_builtin_types_and_comes_back_typed():
    worker = RunReport(worker_entries=[full_entry()])
    for line, kind in [
        ("torch is missing", Note.NOT_MEASURED),
        ("a tuning line", Note.TUNING),
        ("a tuning line", Note.TUNING),
        ("t.py::x", Note.UNTUNED),
    ]:
        worker.note(line, kind)
    payload = worker.to_payload()
    assert json.loads(json.dumps(payload)) == payload
    assert payload["results"][0]["peers"][0] == TORCH.to_dict() and type(payload["results"][0]["verdict"]) is str
    got, lost = received(_Node(payload), None)
    assert lost is None
    assert (got["tuning_lines"], got["untuned_here"]) == (["a tuning line"], ["t.py::x"])
    controller = RunReport()
    controller.merge(got)
    assert controller.result_entries() == [full_entry()]
    assert controller.notes(Note.NOT_MEASURED) == ("torch is missing",)


def test_a_worker_hands_each_outcome_over_once_and_the_controller_derives_its_summary_and_json():
    from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS
    from pytest_tvmperf.judge.compare import compare
    from pytest_tvmperf.result.text import summary_table

    from _factories import exact

    now = record((1.2e-3, 1.3e-3, 1.2e-3), metrics=exact(instructions=12))
    base = record((1e-3, 1e-3, 1e-3))
    torch = ratio_verdict("torch", (2.0,) * 10, 2e-3, 1e-3, 1.2, 0.05, 0.02)
    outcomes = [
        Outcome(
            "t.py::a[llvm-prim]",
            "a[llvm-prim]",
            "prim",
            "llvm",
            "regressed",
            record=now,
            baseline=base,
            comparison=compare(now, base, DEFAULT_THRESHOLDS),
            note="a note",
            message="tvmperf: regressed",
            location=("t.py", 3),
            peers=(torch,),
        ),
        Outcome(
            "t.py::a[llvm-prim]",
            "a[llvm-prim] a / b",
            "prim",
            "llvm",
            "pass",
            relation=ratio_verdict("a / b", (1.2,) * 10, 1.2e-3, 1e-3, 1.5, 0.05, 0.02),
        ),
        Outcome("t.py::b[llvm-prim]", "b[llvm-prim]", "prim", "llvm", "recorded", record=record(samples=None)),
    ]
    worker = RunReport()
    for o in outcomes:
        worker.add(o)
    payload = worker.to_payload()
    # one serialized form: each outcome once, as its results entry (no summary rows beside them)
    assert sorted(payload) == ["not_measured", "results", "tuning_lines", "untuned_here"]
    assert [(t["nodeid"], t["test_id"]) for t in payload["results"]] == [(o.nodeid, o.test_id) for o in outcomes]
    got, lost = received(_Node(json.loads(json.dumps(payload))), None)
    assert lost is None
    controller = RunReport()
    controller.merge(got)
    # the controller's summary rows and results JSON are derived from those entries: the worker's own
    rows = controller.summary_rows()
    assert rows == worker.summary_rows() == [summary_row(o) for o in outcomes]
    assert summary_table(rows) == summary_table(worker.summary_rows())
    assert rows[0].failed == ("instructions",) and rows[0].peers == (PeerCell.of(torch),)
    assert rows[1].mode == "<= 1.5x" and rows[2].median_s is None
    assert results_json(controller.result_entries(), "now") == results_json(worker.result_entries(), "now")


def test_the_benchmark_json_says_which_metric_failed_the_test():
    from pytest_tvmperf.report.benchmark_json import benchmark_entry

    from dataclasses import replace

    extra = benchmark_entry(replace(full_entry(), relation=None))["extra_info"]
    assert extra["tvmperf_failed_metrics"] == ["cpu_instructions"] and extra["tvmperf_verdict"] == "regressed"
