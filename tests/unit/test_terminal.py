"""report/terminal.py: every end-of-run terminal line, made from the run's values (pure);
the hooks only write them."""

from __future__ import annotations

from pathlib import Path

from _factories import record

from pytest_tvmperf.judge.verdict import PeerCell, Verdict
from pytest_tvmperf.result.entry import ResultEntry, TimeCell
from pytest_tvmperf.report.terminal import EndOfRun, Line, end_of_run, upgrade_lines
from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.run_notes import Note
from pytest_tvmperf.result.text import SummaryRow, peer_table, summary_legend, summary_table

TORCH = PeerCell("torch", 2.0, 1.9, 2.1, Verdict.EXCEEDED, 1.2, 2e-3, 1e-3)


def entries() -> list[ResultEntry]:
    return [
        ResultEntry(
            "t.py::test_a[llvm-prim]",
            Verdict.REGRESSED,
            test_id="test_a[llvm-prim]",
            executor="prim",
            target="llvm",
            note="a note",
            time=TimeCell(1.2e-3, 1e-3, 1.2, 1.1, 1.3, 0.95, "a/b"),
            record=record(),
            peers=(TORCH,),
        ),
        ResultEntry(
            "t.py::test_b[llvm-prim]",
            Verdict.RECORDED,
            test_id="test_b[llvm-prim]",
            executor="prim",
            target="llvm",
            time=TimeCell(1e-3),
            record=record(),
        ),
    ]


def report_of(tests: list[ResultEntry] | None = None, **notes: tuple[str, ...]) -> RunReport:
    """A run report of ``tests`` (as an xdist worker hands them over) with ``notes``,
    named by their kind (``TUNING=("a line",)``)."""
    report = RunReport(worker_entries=list(tests or []))
    for kind, lines in notes.items():
        for line in lines:
            report.note(line, Note[kind])
    return report


def texts(lines: list[Line]) -> list[str]:
    return [f"--- {line.text}" if line.sep else line.text for line in lines]


def test_the_end_of_run_lines_come_in_order_with_their_markup():
    report = report_of(
        entries(),
        TUNING=("tuning line", "tuning line"),
        EXPORT=("cannot export",),
        ANNOTATION=("::error file=t.py::x",),
        NOT_MEASURED=("torch is missing",),
        REPORT_FILE=("results JSON: out.json",),
    )
    run = EndOfRun(report, write_errors=("reports not written: disk full",), left_out="tvmperf: not generated, ...")
    lines = end_of_run(run)
    rows = [SummaryRow.of(e) for e in entries()]
    assert texts(lines) == [
        "tvmperf: reports not written: disk full",
        "tuning line",  # each once
        "tvmperf: cannot export",
        "::error file=t.py::x",
        "--- tvmperf summary",
        *summary_table(rows),
        *summary_legend(rows),  # rows marked a/b: what median and baseline are
        "1 test(s): a note",
        "tvmperf: not generated, ...",
        "--- tvmperf: TVM time / peer framework time, side by side (below 1: TVM is faster)",
        *peer_table(rows),
        "tvmperf: torch is missing",
        "tvmperf results JSON: out.json",
    ]
    assert lines[0].markup == ("red",) and lines[1].markup == lines[2].markup == ("yellow",)
    assert lines[-2].markup == ("yellow",) and lines[-1].markup == ()
    assert summary_legend(rows) and len(peer_table(rows)) == 2


def test_without_a_tvmperf_test_only_the_problems_are_shown():
    run = EndOfRun(
        report_of(UNTUNED=("t.py::x[llvm-vm-bytecode]",), EXPORT=("not shown",), REPORT_FILE=("not shown",)),
        write_errors=("baselines not written",),
        tune_command="pytest --tvmperf-tune=64 --tvmperf-update",
    )
    lines = end_of_run(run)
    assert texts(lines)[0] == "tvmperf: baselines not written"
    assert texts(lines)[1].startswith("tvmperf: 1 tuned test(s) skipped") and lines[1].markup == ("yellow",)
    assert texts(lines)[1].endswith("pytest --tvmperf-tune=64 --tvmperf-update 't.py::x[llvm-vm-bytecode]'")
    assert len(lines) == 2


def test_unused_baselines_and_the_update_line():
    root = Path("/r")
    run = EndOfRun(
        report_of(entries()),
        rootpath=root,
        unused={root / "baselines" / "t.json": ["old[llvm-prim]"]},
        prune_command="pytest --tvmperf-update --tvmperf-prune",
        update=True,
        baseline_dir=Path("baselines"),
        unwritten=0,
    )
    got = texts(end_of_run(run))
    assert got[-3:] == [
        "tvmperf: 1 baseline(s) no test used (remove them with pytest --tvmperf-update --tvmperf-prune):",
        "  baselines/t.json: old[llvm-prim]",
        "baselines written for 1 test(s) under baselines",
    ]
    failed = end_of_run(EndOfRun(report_of(entries()), update=True, baseline_dir=Path("b"), unwritten=1))[-1]
    assert failed == Line("baselines written for 0 test(s) under b; NOT written for 1 test(s) (see above)", ("red",))
    stopped = end_of_run(EndOfRun(report_of(entries()), update=True, run_interrupted=True))[-1]
    assert stopped == Line("run interrupted: no baseline file was changed")
    pruned = texts(
        end_of_run(
            EndOfRun(report_of(entries()), pruned=("t.json::old",), orphans_pruned=("a.so",), unused={root: ["x"]})
        )
    )
    assert pruned[-2:] == [
        "tvmperf: pruned 1 artifact file(s) no baseline named: a.so",
        "tvmperf: pruned 1 unused baseline(s): t.json::old",
    ]


def test_the_upgrade_section_and_how_a_line_is_written():
    assert upgrade_lines("0.27.0", "0.26.0", (), report_only=True) == []
    lines = upgrade_lines("0.27.0", "0.26.0", ("2 tests: 1 faster", "  test_a: faster"), report_only=True)
    assert lines == [
        Line("tvmperf: upgrade TVM 0.26.0 -> 0.27.0", sep=True),
        Line("2 tests: 1 faster", ("bold",)),
        Line("  test_a: faster"),
        Line("(--tvmperf-against-tvm-report-only: reported, no test failed for it)"),
    ]

    class Reporter:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def write_sep(self, sep: str, title: str) -> None:
            self.calls.append(("sep", sep, title))

        def write_line(self, text: str, **markup: bool) -> None:
            self.calls.append(("line", text, markup))

    reporter = Reporter()
    for line in lines[:3]:
        line.write_to(reporter)
    assert reporter.calls == [
        ("sep", "-", "tvmperf: upgrade TVM 0.26.0 -> 0.27.0"),
        ("line", "2 tests: 1 faster", {"bold": True}),
        ("line", "  test_a: faster", {}),
    ]
