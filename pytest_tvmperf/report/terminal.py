"""Pure: every line tvmperf writes to the terminal at the end of a run, in order, from the
run's values (:class:`EndOfRun`); the ``pytest_terminal_summary`` hooks only write them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.run_notes import Note
from pytest_tvmperf.result.text import SummaryRow, hot_lines, inconclusive_line, peer_table, safe, summary_legend
from pytest_tvmperf.result.text import summary_notes, summary_table, untuned_line
from pytest_tvmperf.values.node_ids import display_path

if TYPE_CHECKING:
    from pytest_tvmperf.session import TvmperfSession


@dataclass(frozen=True)
class Line:
    """One terminal line: its text and pytest's markup (``red``, ...), or a separator (``sep``)."""

    text: str
    markup: tuple[str, ...] = ()
    sep: bool = False

    def write_to(self, terminalreporter: Any) -> None:
        """Write it with pytest's terminal reporter (the hooks' one line of work)."""
        if self.sep:
            terminalreporter.write_sep("-", self.text)
        else:
            terminalreporter.write_line(self.text, **dict.fromkeys(self.markup, True))


def _plain(lines: Sequence[str], *markup: str) -> list[Line]:
    return [Line(text, tuple(markup)) for text in lines]


@dataclass(frozen=True)
class EndOfRun:
    """What the end-of-run lines are made of: the run's report, and the session's (:meth:`of`)."""

    report: RunReport = field(default_factory=RunReport)
    #: baseline or report files not written (each a red line, first)
    write_errors: Sequence[str] = ()
    #: the command that tunes the tuned tests skipped here (without their node ids)
    tune_command: str = ""
    invocation_dir: Path | None = None
    rootpath: Path | None = None
    #: inconclusive tests are shown as warnings (``-v``): where the inconclusive line points
    verbosity: int = 0
    #: ``--tvmperf-inconclusive``
    inconclusive: str = "warn"
    #: combinations left out as they can never run (never_run.py), "" none
    left_out: str = ""
    orphans_pruned: Sequence[str] = ()
    pruned: Sequence[str] = ()
    #: baseline file -> names of its entries no test used
    unused: Mapping[Path, Sequence[str]] = field(default_factory=dict)
    prune_command: str = ""
    #: --tvmperf-baselines-ref: the ref's baseline file (as shown) -> its entries whose tests did not run
    not_run_at_ref: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: ``--tvmperf-update``: where the baselines go, and what became of them
    update: bool = False
    baseline_dir: Path | None = None
    writing_interrupted: bool = False
    run_interrupted: bool = False
    unwritten: int = 0
    kept: int = 0

    @classmethod
    def of(
        cls,
        session: "TvmperfSession",
        left_out: str = "",
        run_interrupted: bool = False,
        not_run: Mapping | None = None,
    ) -> "EndOfRun":
        """The end of ``session``'s run: its report, baseline store and settings."""
        report, store, settings = session.report, session.store, session.settings
        untuned = report.notes(Note.UNTUNED)
        return cls(
            report,
            write_errors=tuple(session.write_errors),
            tune_command=session.accept_command(None, first=("--tvmperf-tune=64",)) if untuned else "",
            invocation_dir=session.invocation_dir,
            rootpath=session.rootpath,
            verbosity=int(session.warns_inconclusive),
            left_out=left_out,
            **{key: getattr(store, key) for key in ("orphans_pruned", "pruned", "unused", "unwritten", "kept")},
            prune_command=session.accept_command(None, extra=("--tvmperf-prune",)) if store.unused else "",
            not_run_at_ref={
                display_path(path, session.rootpath, store.ref_view): names for path, names in (not_run or {}).items()
            },
            **{key: getattr(settings, key) for key in ("inconclusive", "update", "baseline_dir")},
            writing_interrupted=store.interrupted,
            run_interrupted=run_interrupted,
        )


#: the most entry names shown per file in the not-gated listing (then a count)
SHOWN_NAMES = 20


def not_run_lines(not_run: Mapping[str, Sequence[str]]) -> list[Line]:
    """``--tvmperf-baselines-ref``: the base's entries whose tests did not run in this job (deselected,
    filtered, skipped, no longer collected): nothing judged them, so the gate let them through unseen."""
    if not not_run:
        return []
    count = sum(len(names) for names in not_run.values())
    lines = [
        Line(
            f"tvmperf: {count} baseline entr{'y' if count == 1 else 'ies'} of the base not gated: their tests "
            "did not run in this job (deselected, filtered by -k/-m or the configuration, skipped, or no longer "
            "collected):",
            ("yellow",),
        )
    ]
    for shown, names in not_run.items():
        more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
        lines.append(Line(f"  {safe(shown)}: {safe(', '.join(names[:SHOWN_NAMES]))}{more}", ("yellow",)))
    return lines


def end_of_run(run: EndOfRun) -> list[Line]:
    """Every line of tvmperf's part of the terminal summary, in order."""
    report = run.report
    lines = _plain([f"tvmperf: {error}" for error in run.write_errors], "red")
    untuned = report.notes(Note.UNTUNED)
    if untuned:
        lines.append(Line(untuned_line(untuned, run.tune_command, run.invocation_dir, run.rootpath), ("yellow",)))
    lines += _plain(report.notes(Note.TUNING), "yellow")
    lines += not_run_lines(run.not_run_at_ref)
    entries = report.result_entries()
    rows = [SummaryRow.of(e) for e in entries]
    if not rows:
        return lines
    lines += _plain([f"tvmperf: {problem}" for problem in report.notes(Note.EXPORT)], "yellow")
    lines += _plain(report.notes(Note.ANNOTATION))
    lines += [Line("tvmperf summary", sep=True), *_plain(summary_table(rows))]
    lines += _plain(summary_legend(rows) + summary_notes(rows) + hot_lines(rows))
    lines += _plain(inconclusive_line(rows, run.verbosity, run.inconclusive), "yellow")
    if run.left_out:
        lines.append(Line(run.left_out))
    peers = peer_table(rows)  # TVM time over each peer framework's, when some test timed peers
    if peers:
        lines.append(Line("tvmperf: TVM time / peer framework time, side by side (below 1: TVM is faster)", sep=True))
        lines += _plain(peers)
    from pytest_tvmperf.result.layers_text import summary_lines

    lines += _plain(summary_lines((e.test_id or e.nodeid, e.layers) for e in entries))
    not_measured = sorted({*report.notes(Note.NOT_MEASURED), *report.notes(Note.CONFIG)})
    lines += _plain([f"tvmperf: {problem}" for problem in not_measured], "yellow")
    lines += _plain([f"tvmperf {line}" for line in report.notes(Note.REPORT_FILE)])
    # what was pruned from the baseline files, or which entries no test used
    if run.orphans_pruned:
        pruned = ", ".join(run.orphans_pruned)
        lines.append(Line(f"tvmperf: pruned {len(run.orphans_pruned)} artifact file(s) no baseline named: {pruned}"))
    if run.pruned:
        lines.append(Line(f"tvmperf: pruned {len(run.pruned)} unused baseline(s): {safe(', '.join(run.pruned))}"))
    elif run.unused:
        count = sum(len(v) for v in run.unused.values())
        lines.append(Line(f"tvmperf: {count} baseline(s) no test used (remove them with {run.prune_command}):"))
        for path, names in run.unused.items():
            shown = display_path(path, run.rootpath) if run.rootpath is not None else str(path)
            lines.append(Line(f"  {shown}: {safe(', '.join(names))}"))
    if not run.update:
        return lines
    # --tvmperf-update: for how many of the recorded tests baselines were written, and where
    written = sum(r.verdict == "recorded" for r in rows) - run.unwritten
    not_written = f"NOT written for {run.unwritten} test(s) (see above)"
    if run.writing_interrupted:
        text = f"run interrupted while writing the baselines: written for {written} test(s), {not_written}"
        return [*lines, Line(text, ("red",))]
    if run.run_interrupted:
        return [*lines, Line("run interrupted: no baseline file was changed")]
    text = f"baselines written for {written} test(s) under {run.baseline_dir}"
    if run.kept:  # of which unchanged: their entries stay byte for byte
        rewritten = written - run.kept
        text += (
            f" ({rewritten} rewritten, {run.kept} kept as they were: same program and metrics, "
            f"only their measurements moved)"
        )
    return [*lines, Line(text + (f"; {not_written}" if run.unwritten else ""), ("red",) if run.unwritten else ())]


def upgrade_lines(today: str, other: str, summary_lines: Sequence[str], report_only: bool) -> list[Line]:
    """``--tvmperf-against-tvm``'s section (``UpgradeSummary.lines``), none when no test was compared."""
    if not summary_lines:
        return []
    lines = [
        Line(f"tvmperf: upgrade TVM {other} -> {today}", sep=True),
        *(Line(text, ("bold",) if i == 0 else ()) for i, text in enumerate(summary_lines)),
    ]
    if report_only:
        lines.append(Line("(--tvmperf-against-tvm-report-only: reported, no test failed for it)"))
    return lines
