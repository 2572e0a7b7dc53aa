"""``tvmperf history FILE``: each test's trend over the runs a ``--tvmperf-history`` file
keeps, with each run's date and commit (:func:`history_lines`: pure text)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from pytest_tvmperf.report.history import HistoryRun
from pytest_tvmperf.result.entry import ResultsError
from pytest_tvmperf.result.text import fmt_time, safe, text_table


def history_lines(runs: Sequence[HistoryRun], match: str = "", last: int | None = None) -> list[str]:
    """Per test (node id, containing ``match``), one line per run it ran in, oldest
    first: run number, date, commit, median, change against the test's previous run,
    verdict; then the trend from its first to its last timed run."""
    numbered = list(enumerate(runs, 1))
    if last is not None:
        numbered = numbered[-last:]
    names = sorted({name for _, run in numbered for name in run.tests if match in name})
    if not names:
        what = f"no test matching {match!r}" if match else "no test"
        return [f"{what} in {len(numbered)} run(s)"]
    lines: list[str] = []
    for name in names:
        body = []
        timed: list[float] = []
        for number, run in numbered:
            if name not in run.tests:
                continue
            median, verdict = run.tests[name]
            change = f"{(median / timed[-1] - 1) * 100:+.1f}%" if median is not None and timed else ""
            if median is not None:
                timed.append(median)
            date = (run.created or "-").replace("T", " ")[:16]  # '2026-11-23 16:40' from ISO-8601, as written
            body.append((str(number), date, run.commit or "-", fmt_time(median), change, verdict or "-"))
        lines.append(name)
        lines.extend(
            f"  {line}" for line in text_table(("run", "date", "commit", "median", "vs previous", "verdict"), body)
        )
        if len(timed) >= 2:
            lines.append(
                f"  trend: {fmt_time(timed[0])} -> {fmt_time(timed[-1])} "
                f"({(timed[-1] / timed[0] - 1) * 100:+.1f}%) over {len(timed)} timed runs, "
                f"min {fmt_time(min(timed))}, max {fmt_time(max(timed))}"
            )
        lines.append("")
    return lines[:-1]


def cmd_history(args: argparse.Namespace) -> int:
    from pytest_tvmperf.report.outputs import read_history

    path = args.file
    if not Path(path).exists():
        raise ResultsError(f"history file {path} does not exist; keep one with `pytest --tvmperf-history={path}`")
    try:
        raw = read_history(Path(path))
    except ValueError as exc:  # e.g. a number too long for int() (not a JSONDecodeError)
        raise ResultsError(
            f"history file {path} cannot be read ({exc}); remove the bad line, or point --tvmperf-history at a new file"
        ) from None
    runs = [HistoryRun.read(run) for run in raw]
    print(f"tvmperf history: {args.file}: {len(runs)} run(s)")
    for line in history_lines(runs, args.k or "", args.last):
        print(safe(line))
    return 0


def add_parser(sub) -> None:
    history = sub.add_parser(
        "history",
        help="print each test's trend over the runs of a --tvmperf-history file",
        description="Print, per test, its median and verdict in each run a --tvmperf-history file keeps "
        "(oldest first, with the run's date and git commit) and its trend.",
    )
    history.add_argument("file", metavar="FILE", help="a history file (pytest --tvmperf-history=FILE)")
    history.add_argument("-k", default="", metavar="TEXT", help="only tests whose node id contains TEXT")
    history.add_argument("--last", type=int, default=None, metavar="N", help="only the last N runs")
    history.set_defaults(func=cmd_history)
