"""The kinds of a run's notes (pure): the lines a run report (result/run_report.py)
keeps besides its tests' outcomes, each kind shown in its place at the end of the run."""

from __future__ import annotations

from enum import Enum


class Note(Enum):
    """What kind of line a run-level note is, and so where the end of the run shows it."""

    #: why something asked for was not measured here (a peer framework whose package is
    #: missing, a metric source without its tool): one summary line per reason, sorted
    NOT_MEASURED = "not_measured"
    #: a setting of this run that weakens the gate (against the trusted ref's, or a/b timing
    #: switched off by the configuration): shown with the above and in the report files
    CONFIG = "config"
    #: about tuning records (left out here, none applies): in order, each once
    TUNING = "tuning_lines"
    #: the node id of a tuned test skipped: its tuning database has records for other CPUs only
    UNTUNED = "untuned_here"
    #: why compiled artifacts could not be exported here (a/b timing off): the last one
    EXPORT = "export_problem"
    #: a report file written ("results JSON: PATH"), in order
    REPORT_FILE = "report_lines"
    #: a CI annotation, in order
    ANNOTATION = "annotation_lines"
