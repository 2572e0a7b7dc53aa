"""``tvmperf``: read baseline and results files outside a pytest run: ``show FILE`` (a
table, one row per test and machine), ``history FILE`` (cli_history.py), ``tune``,
``devices`` (cli_devices.py), and ``diff A B``, which gates B (new) against A (old, the
baseline) exactly as the plugin would (``compare(B_record, A_record, thresholds, policy)``
per test, the same summary table and regression messages): exit 1 when a test regressed,
0 otherwise, 2 for an unusable file or option. Matching:

- a baseline file's tests are keyed by test id (the node id without its module part);
- two results files are keyed by full node id, since one run may hold several modules;
- a baseline file against a results file: the results file's tests by test id, only
  those of the modules matching the baseline file's path (``tests/perf/test_mlp.py``
  matches ``baselines/tests/perf/test_mlp.json``; the longest match wins) where any
  does, else all of them, and a test id found in two modules is an error (exit 2).

Tests only in A are listed as removed, only in B as added; neither fails. Each machine
timing of B is judged on its own (``replace(B, timings={fp: timing})``), as the gate
judges one machine's timing against the baseline's of the same fingerprint (else
another's, normalized), and ``--alpha`` is split (Bonferroni) over all these comparisons.
A test of a results file that the run judged against the very record A holds for it (the
baseline file the run read, or a results file of that run) is shown as the run judged it: its
median, ratio, interval and message, the same numbers as the run's summary, JSON and HTML. Any
other pair is judged here from the stored samples (a results file keeps no side-by-side a/b
samples, so where the gate judged a/b this judges normalized or raw, and says so).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import sys

from pytest_tvmperf.command.cli_devices import add_devices_command
from pytest_tvmperf.command.cli_files import accept_command, load_file
from pytest_tvmperf.command.cli_history import add_parser as add_history
from pytest_tvmperf.command.cli_match import CliError, diff_row, keyed, nodeids, run_verdicts, show_lines, variants
from pytest_tvmperf.judge.compare import compare
from pytest_tvmperf.config.parsing import DEFAULT_ALPHA, DEFAULT_NOISE, DURATION_FORMS, argparse_type
from pytest_tvmperf.config.parsing import parse_alpha, parse_duration, parse_noise
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, THRESHOLD_HELP, parse_thresholds
from pytest_tvmperf.config.time_policy import time_policy
from pytest_tvmperf.result.regression import regression_message
from pytest_tvmperf.result.text import SummaryRow, safe, summary_notes, summary_table
from pytest_tvmperf.values.printable import safe_lines
from pytest_tvmperf.result.entry import ResultsError
from pytest_tvmperf.store.files import BaselineError
from pytest_tvmperf.judge.verdict import Verdict

PROG = "tvmperf"


def emit(text: object = "") -> None:
    """Print ``text`` read from files (test ids, workload names): each line through
    :func:`~pytest_tvmperf.result.text.safe`, so no line of a file's becomes a terminal
    control sequence or a GitHub Actions workflow command (``::error``)."""
    for line in str(text).split("\n"):
        print(safe(line))


def cmd_show(args: argparse.Namespace) -> int:
    emit("\n".join(show_lines(load_file(args.file))))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    a, b = load_file(args.a), load_file(args.b)
    a_records, b_records, notes = keyed(a, b)
    node_of = nodeids(a, b)
    a_keys, b_keys = set(a_records), set(b_records)
    common, removed, added = sorted(a_keys & b_keys), sorted(a_keys - b_keys), sorted(b_keys - a_keys)

    thresholds = {**DEFAULT_THRESHOLDS, **(args.threshold or {})}
    noise = args.noise if args.noise is not None else dict(DEFAULT_NOISE)
    jobs = [(key, fp, variant) for key in common for fp, variant in variants(b_records[key])]
    policy = time_policy(args.alpha, noise, other_machine="normalized", comparisons=len(jobs))

    baseline_file = a.path if a.kind == "baseline" else b.path if b.kind == "baseline" else None
    rows: list[SummaryRow] = []
    messages: list[str] = []
    regressed: set[str] = set()
    counts: dict[str, int] = {}
    judged_by_run = run_verdicts(a_records, b, node_of)
    if judged_by_run:
        notes.append(
            f"{len(judged_by_run)} test(s) shown as their run judged them: it read this very baseline "
            "(the same median, ratio and interval as its summary, JSON and HTML)"
        )
    for key, fp, current in jobs:
        baseline = a_records[key]
        entry = judged_by_run.get(key) if fp is None else None
        if entry is not None:  # the run judged this very baseline: its verdict, as the run said it
            rows.append(replace(SummaryRow.of(entry), test=key))
            counts[entry.verdict] = counts.get(entry.verdict, 0) + 1
            if entry.verdict == Verdict.REGRESSED:
                messages.append(entry.message)
                regressed.add(key)
            continue
        comparison = compare(current, baseline, thresholds, policy)
        test = key if fp is None else f"{key} @{fp}"
        rows.append(diff_row(test, current, baseline, comparison))
        counts[comparison.status] = counts.get(comparison.status, 0) + 1
        if comparison.regressions:
            machine_note = [] if fp is None else [f"machine {fp} ({current.timing.machine.cpu_model})"]
            command = accept_command(key, baseline_file, node_of.get(key))
            messages.append(regression_message(key, str(a.path), current, baseline, comparison, machine_note, command))
            regressed.add(key)

    emit(
        f"tvmperf diff: {a.label} (old) -> {b.label} (new): {len(common)} test(s) compared, "
        f"{len(added)} added, {len(removed)} removed"
    )
    for note in notes:
        emit(f"note: {note}")
    if rows:
        emit("\n".join(["", *summary_table(rows), *summary_notes(rows)]))
        if counts.get(Verdict.INCONCLUSIVE):
            emit(
                f"{counts[Verdict.INCONCLUSIVE]} test(s): time inconclusive, the noise is larger than the threshold "
                f"(not a failure; more samples or a larger --threshold time=... decide it)"
            )
    for what, path, keys in (("added", b.path, added), ("removed", a.path, removed)):
        if keys:
            emit("\n".join(["", f"{what} (only in {path}, not compared):", *(f"  {safe(key)}" for key in keys)]))
    for message in messages:
        emit(f"\n{message}")
    emit()
    verdicts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing compared"
    emit(f"tvmperf diff: {len(regressed)} test(s) regressed ({verdicts})")
    return 1 if regressed else 0


def tune_argv(args: argparse.Namespace) -> list[str]:
    """The pytest command line ``tvmperf tune`` runs: the chosen tests with ``--tvmperf-tune``
    (and ``--tvmperf-update``, so the baselines follow the new schedules, unless ``--no-update``)."""
    argv = list(args.pytest_args)
    if args.trials is not None:
        argv.append(f"--tvmperf-tune={args.trials}")
    if getattr(args, "budget", None) is not None:
        argv.append(f"--tvmperf-tune-budget={args.budget}")
    if args.db:
        argv.append(f"--tvmperf-tuning-db={args.db}")
    if not args.no_update:
        argv.append("--tvmperf-update")
    return argv


def cmd_tune(args: argparse.Namespace) -> int:
    import pytest

    if args.trials is None and getattr(args, "budget", None) is None:
        raise CliError("tune needs --trials N, --budget DURATION, or both (e.g. --budget 30m)")
    argv = tune_argv(args)
    print(f"{PROG} tune: pytest {' '.join(argv)}", flush=True)
    return int(pytest.main(argv))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Show pytest-tvmperf baseline and results files, or gate one against another."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    show = sub.add_parser(
        "show",
        help="print a baseline or results file as a table",
        description="Print a baseline file or a results file (told apart by content) as a table.",
    )
    show.add_argument(
        "file", metavar="FILE", help="a baseline file (baselines/<module>.json) or a results file (--tvmperf-json)"
    )
    show.set_defaults(func=cmd_show)
    diff = sub.add_parser(
        "diff",
        help="gate B (new) against A (old) like the plugin does; exit 1 on a regression",
        description="Compare B (new) with A (old, the baseline) test by test with the plugin's own gate. "
        "Each may be a baseline file or a results file. Tests are matched by test id; when both "
        "are results files, by node id. Exit 1 when a test regressed, else 0; 2 on a bad file or option.",
    )
    diff.add_argument("a", metavar="A", help="the old side: a baseline or results file")
    diff.add_argument("b", metavar="B", help="the new side: a baseline or results file")
    diff.add_argument(
        "--threshold", type=argparse_type(parse_thresholds), metavar="EXPR", help=THRESHOLD_HELP.replace("%", "%%")
    )
    diff.add_argument(
        "--alpha",
        type=argparse_type(parse_alpha),
        default=DEFAULT_ALPHA,
        metavar="P",
        help=f"false-alarm rate of all the time verdicts, split over the compared tests (default {DEFAULT_ALPHA})",
    )
    diff.add_argument(
        "--noise",
        type=argparse_type(parse_noise),
        metavar="EXPR",
        help="process-to-process noise per mode, e.g. 'normalized=3%%,raw=15%%' (default ab=2%%,normalized=10%%,raw=15%%)",
    )
    diff.set_defaults(func=cmd_diff)
    tune = sub.add_parser(
        "tune",
        help="tune the kernels of the chosen tests' pipeline='tuned' workloads, then re-record their baselines",
        description="Run pytest on the chosen tests with --tvmperf-tune=TRIALS and/or --tvmperf-tune-budget=DURATION: "
        "every workload with pipeline='tuned' is tuned with MetaSchedule (a progress bar per kernel), "
        "each record is added to the tuning database as it is measured (a killed tuning keeps them; "
        "a re-run resumes), and (unless --no-update) its baseline is re-recorded. "
        "Arguments after the options go to pytest, e.g.: tvmperf tune --budget 30m tests/perf -k dla",
    )
    tune.add_argument(
        "--trials",
        type=argparse_type(_positive_trials),
        metavar="N",
        help="MetaSchedule trials per workload (split over its kernels; trials measured by an earlier "
        "or killed tuning count, so a re-run resumes)",
    )
    tune.add_argument(
        "--budget",
        type=argparse_type(_budget),
        metavar="DURATION",
        help=f"wall-clock time to tune each workload, spread over its kernels by their share of its "
        f"run time ({DURATION_FORMS})",
    )
    tune.add_argument(
        "--db",
        metavar="DIR",
        help="tuning database directory, relative to the baseline directory (default: the ini or 'tuning')",
    )
    tune.add_argument("--no-update", action="store_true", help="tune only; leave the baselines as they are")
    tune.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        metavar="PYTEST_ARGS",
        help="tests and options passed to pytest (default: the ini's testpaths)",
    )
    tune.set_defaults(func=cmd_tune)
    add_devices_command(sub)
    add_history(sub)
    return parser


def _budget(text: str) -> str:
    """A duration as given (pytest parses it again), checked here for a clear usage error."""
    parse_duration(text)
    return text.strip()


def _positive_trials(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"--trials takes a positive number of trials, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (CliError, BaselineError, ResultsError) as exc:  # any unusable input: exit 2, never 1 ("regressed")
        print(f"{PROG}: error: {safe_lines(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - an input no check foresaw: still exit 2, never 1 ("regressed")
        files = [str(f) for f in (getattr(args, "file", None), getattr(args, "a", None), getattr(args, "b", None)) if f]
        print(
            f"{PROG}: error: {args.command} {' '.join(files)}: could not use the input ({type(exc).__name__}: {safe(exc)}); "
            f"if the files are ones pytest-tvmperf wrote, this is a bug: please report it with the files",
            file=sys.stderr,
        )
        return 2
