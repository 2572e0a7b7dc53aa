"""What a run measured and decided, test by test (this process's and its xdist
workers'), and the lines the terminal summary prints at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.text import SummaryRow

if TYPE_CHECKING:
    from pytest_tvmperf.result.entry import ResultEntry


@dataclass(frozen=True)
class ReportSection:
    """What another part of the run (``--tvmperf-against-tvm``'s upgrade summary) adds
    to the report files, handed to report/outputs.py's :func:`write_reports` so that each file is written
    once, whole."""

    #: top-level keys of the results JSON (``--tvmperf-json``)
    json: Mapping[str, Any] = field(default_factory=dict)
    #: HTML put right after the page's header (``--tvmperf-html``)
    html: str = ""
    #: the pytest-benchmark JSON document (``--tvmperf-benchmark-json``) as it is to be written
    benchmark: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    #: Markdown of the section (the baseline changes of a pull request): written to
    #: ``--tvmperf-changes-md``, and appended to the step summary when ``summary_markdown``
    markdown: str = ""
    summary_markdown: bool = False


@dataclass
class RunReport:
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    #: the results entries xdist workers handed over: each of their tests' outcome, once
    worker_entries: list["ResultEntry"] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    #: lines on the report files written (paths), and the CI annotations
    report_lines: list[str] = field(default_factory=list)
    annotation_lines: list[str] = field(default_factory=list)
    #: why something asked for was not measured here (a peer framework whose package is
    #: missing, a metric source without its tool), one summary line per reason
    not_measured: set[str] = field(default_factory=set)
    #: settings of this run that weaken the gate (against the trusted ref's, or a/b timing
    #: switched off by the configuration): shown in the summary and the step summary
    config_notes: set[str] = field(default_factory=set)
    #: why compiled artifacts could not be exported here (a/b timing off)
    export_problem: str = ""
    #: node ids of tuned tests skipped: their tuning database has records for other CPUs only
    untuned_here: list[str] = field(default_factory=list)
    #: summary lines about tuning records (left out here, none applies), each shown once
    tuning_lines: list[str] = field(default_factory=list)
    #: what other parts of the run add to the report files, from the run's entries (the
    #: upgrade summary of ``--tvmperf-against-tvm``): asked before the files are written, once
    section_makers: list[Callable[[Sequence["ResultEntry"]], "ReportSection | None"]] = field(default_factory=list)

    def report_sections(self, entries: Sequence["ResultEntry"]) -> list[ReportSection]:
        return [s for make in self.section_makers if (s := make(entries)) is not None]

    def add(self, outcome: Outcome) -> None:
        self.outcomes[f"{outcome.nodeid}\0{outcome.test_id}"] = outcome

    def result_entries(self) -> list["ResultEntry"]:
        """Results-JSON entries of this process's tests, then those of xdist workers."""
        from pytest_tvmperf.result.entry import ResultEntry

        return [ResultEntry.of(o) for o in self.outcomes.values()] + self.worker_entries

    def summary_rows(self, entries: "Sequence[ResultEntry] | None" = None) -> list[SummaryRow]:
        """Rows of this process's tests, then those reported by xdist workers: each
        derived from its results entry (``entries``, when the caller has them already)."""
        return [SummaryRow.of(e) for e in (self.result_entries() if entries is None else entries)]
