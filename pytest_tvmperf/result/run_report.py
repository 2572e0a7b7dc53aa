"""What a run measured and decided, test by test (this process's and its xdist workers')."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.text import SummaryRow
from pytest_tvmperf.values.builtin_types import plain
from pytest_tvmperf.values.run_notes import Note


@dataclass(frozen=True)
class ReportSection:
    """What another part of the run (``--tvmperf-against-tvm``'s upgrade summary) adds to the
    report files, so that :func:`write_reports` (report/outputs.py) writes each once, whole."""

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


#: the notes an xdist worker hands over (the others are the controller's own)
_HANDED_OVER = (Note.NOT_MEASURED, Note.TUNING, Note.UNTUNED, Note.EXPORT)


@dataclass
class RunReport:
    """The one collector of what a run measured and decided: each test's outcome (:meth:`add`)
    and the run's notes (:meth:`note`); an xdist worker's crosses as one payload (:meth:`merge`)."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    #: the results entries xdist workers handed over: each of their tests' outcome, once
    worker_entries: list[ResultEntry] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    #: what other parts of the run add to the report files, from the run's entries (the
    #: upgrade summary of ``--tvmperf-against-tvm``): asked before the files are written, once
    section_makers: list[Callable[[Sequence[ResultEntry]], ReportSection | None]] = field(default_factory=list)
    _notes: dict[Note, list[str]] = field(default_factory=dict, repr=False)

    def report_sections(self, entries: Sequence[ResultEntry]) -> list[ReportSection]:
        return [s for make in self.section_makers if (s := make(entries)) is not None]

    def add(self, outcome: Outcome, notes: Iterable[str] = ()) -> None:
        """Keep a test's outcome, and the notes it produced (:attr:`Note.NOT_MEASURED`)."""
        self.outcomes[f"{outcome.nodeid}\0{outcome.test_id}"] = outcome
        for line in notes:
            self.note(line)

    def note(self, line: str, kind: Note = Note.NOT_MEASURED) -> None:
        self._notes.setdefault(kind, []).append(str(line))

    def notes(self, kind: Note) -> tuple[str, ...]:
        """The notes of ``kind`` as shown: reasons sorted, tuning lines in order (each once), the
        last export problem, the rest in order."""
        lines = self._notes.get(kind, [])
        if kind in (Note.NOT_MEASURED, Note.CONFIG):
            return tuple(sorted(set(lines)))
        if kind is Note.TUNING:
            return tuple(dict.fromkeys(lines))
        if kind is Note.EXPORT:
            return tuple(lines[-1:])
        return tuple(lines)

    def result_entries(self) -> list[ResultEntry]:
        """Results-JSON entries of this process's tests, then those of xdist workers."""
        return [ResultEntry.of(o) for o in self.outcomes.values()] + self.worker_entries

    def summary_rows(self, entries: "Sequence[ResultEntry] | None" = None) -> list[SummaryRow]:
        """Rows of this process's tests, then the xdist workers': each of its results entry."""
        return [SummaryRow.of(e) for e in (self.result_entries() if entries is None else entries)]

    def to_payload(self) -> dict:
        """An xdist worker's hand-over, of builtin types only (``PayloadError`` names one that is not):
        each test's results entry, and the notes the controller shows."""
        payload = {"results": [e.to_json() for e in self.result_entries()]}
        payload |= {kind.value: list(self.notes(kind)) for kind in _HANDED_OVER if kind is not Note.EXPORT}
        if self.notes(Note.EXPORT):
            payload[Note.EXPORT.value] = self.notes(Note.EXPORT)[0]
        payload = plain(payload)
        json.dumps(payload)  # non-finite floats are fine for JSON here; anything else raises
        return payload

    def merge(self, payload: Mapping[str, Any]) -> None:
        """Take in an xdist worker's hand-over (:meth:`to_payload`): its entries and notes."""
        self.worker_entries.extend(ResultEntry.from_json(entry) for entry in payload.get("results", ()))
        for kind in _HANDED_OVER:
            lines = payload.get(kind.value, ())
            for line in [lines] if isinstance(lines, str) else lines:
                self.note(str(line), kind)
