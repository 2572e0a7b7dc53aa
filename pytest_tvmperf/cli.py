"""``tvmperf``: read baseline and results files outside a pytest run.

``tvmperf show FILE``
    Print a baseline file (``baselines/<module>.json``) or a results file
    (``pytest --tvmperf-json=FILE``) as a table: one row per test and machine.

``tvmperf diff A B [--threshold EXPR] [--alpha P] [--noise EXPR]``
    Gate B (the new side) against A (the old side, taken as the baseline) exactly as
    the plugin would: ``compare(B_record, A_record, thresholds, policy)`` per test, the
    same summary table and the same regression messages. Exit 1 when a test regressed,
    0 otherwise, 2 for an unusable file or option.

Which tests are compared (the matching rule):

- a baseline file's tests are keyed by test id (``test_mlp[llvm-vm-bytecode]``, the
  node id without its module part, as stored in the file);
- when A and B are both results files, tests are keyed by their full node id
  (``tests/perf/test_mlp.py::test_mlp[llvm-vm-bytecode]``), since one run may hold
  several modules;
- when one side is a baseline file and the other a results file, the results file's
  tests are keyed by test id (the node id after its first ``::``). If some of its
  modules match the baseline file's path (``tests/perf/test_mlp.py`` matches
  ``baselines/tests/perf/test_mlp.json``), only those modules' tests are compared (the
  longest matching path wins); if none matches, all its tests are, and a test id found
  in two modules is an error (exit 2).

Tests only in A are listed as removed, tests only in B as added; neither fails.

Time: a current record of the gate holds one machine's timing, and
``compare_time`` judges it against the baseline's timing of the same machine
fingerprint, or else another machine's in normalized form. The diff judges every
machine timing of B that way, each on its own: a B record with several machines
(a baseline file) is compared once per machine (``replace(B, timings={fp: timing})``),
so a machine present in both files is compared with itself, and a machine only in B
the way the gate compares a run on that machine. The run's false-alarm rate
``--alpha`` is split (Bonferroni) over all these comparisons, which is the number of
compared tests when each test of B has one timing (always so for a results file).
A results file keeps each test's samples and reference samples, not the baseline
artifact's side-by-side samples, so the diff never uses a/b mode: where the gate
judged a/b, the diff judges normalized (or raw) and may differ from the gate's verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Sequence

from .compare import Comparison, TimePolicy, compare
from .options import (
    DEFAULT_ALPHA,
    DEFAULT_NOISE,
    DEFAULT_THRESHOLDS,
    THRESHOLD_HELP,
    _argparse_type,
    parse_alpha,
    parse_noise,
    parse_thresholds,
)
from .record import Record
from .report import SummaryRow, fmt_number, fmt_time, regression_message, summary_notes, summary_table, update_command
from .results import RESULTS_KIND, ResultsError, parse_results
from .store import BaselineError, parse_baselines, read_regular_text
from .verdict import Verdict

PROG = "tvmperf"

#: the "kind" of pytest-tvmperf's other JSON files (results, history lines), found even in a truncated one
_TVMPERF_KIND_RE = re.compile(r'"kind"\s*:\s*"(pytest-tvmperf-[A-Za-z0-9_-]*)"')
#: a baseline file starts with its "schema_version" key (sorted keys), so even a truncated one shows it
_BASELINE_RE = re.compile(r'"(schema_version|tests)"\s*:')


class CliError(Exception):
    """A file the CLI cannot use, with the fix (one line)."""


@dataclass
class Loaded:
    """One input file: baseline records keyed by test id, or a results file's records
    keyed by node id (``entries`` holds its raw test entries, with or without a record)."""

    path: Path
    kind: str  # "baseline" or "results"
    records: dict[str, Record]
    entries: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.kind} file {self.path}"


def _neither(path: Path, what: str = "") -> CliError:
    return CliError(
        f"{path} {what}is neither a pytest-tvmperf baseline file (a JSON object with 'schema_version' and 'tests', "
        f"written by `pytest --tvmperf-update` under baselines/) nor a results file (\"kind\": \"{RESULTS_KIND}\", "
        f"written by `pytest --tvmperf-json=FILE`); give one of those"
    )


def _results_records(data: Mapping[str, Any], path: Path) -> tuple[dict[str, Record], list[Mapping[str, Any]]]:
    hint = f"re-create it with `pytest --tvmperf-json={path}`"
    records: dict[str, Record] = {}
    entries: list[Mapping[str, Any]] = []
    for i, entry in enumerate(data["tests"]):
        try:
            if not isinstance(entry, Mapping):
                raise TypeError(f"expected an object, got {type(entry).__name__}")
            nodeid = entry["nodeid"]
            if not isinstance(nodeid, str) or not nodeid:
                raise ValueError(f"bad nodeid {nodeid!r}")
            if nodeid in records:
                raise ValueError(f"node id {nodeid!r} appears twice")
            if entry.get("record") is not None:
                records[nodeid] = Record.from_json(entry["record"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsError(f"results file {path}: test entry {i} is malformed ({type(exc).__name__}: {exc}); {hint}") from None
        entries.append(entry)
    return records, entries


def load_file(path: str | Path) -> Loaded:
    """Read a baseline or a results file, telling them apart by content; raise CliError,
    BaselineError or ResultsError (one line naming the file and the fix)."""
    path = Path(path)
    if not path.exists():
        raise CliError(
            f"{path} does not exist; give a baseline file (baselines/<module path>.json, written by "
            f"`pytest --tvmperf-update`) or a results file (written by `pytest --tvmperf-json={path}`)"
        )
    try:
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path} cannot be read ({exc}); give a baseline file or a results file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # truncated or not JSON: report it in the words of the kind of file it was meant to be
        kinds = set(_TVMPERF_KIND_RE.findall(text))
        if RESULTS_KIND in kinds:
            parse_results(text, path)  # raises ResultsError: not valid JSON, may be truncated
        if not kinds and _BASELINE_RE.search(text):
            parse_baselines(text, path)  # raises BaselineError: not valid JSON, how to re-record
        raise _neither(path, "is not JSON and ") from None  # not JSON, and nothing says it was meant to be one of ours
    except RecursionError:
        raise _neither(path, "is nested too deeply and ") from None
    if isinstance(data, dict) and data.get("kind") == RESULTS_KIND:
        records, entries = _results_records(parse_results(text, path), path)
        return Loaded(path, "results", records, entries)
    if isinstance(data, dict) and "kind" not in data and ("schema_version" in data or "tests" in data):
        return Loaded(path, "baseline", parse_baselines(text, path))
    raise _neither(path)


# ---------------------------------------------------------------- show


def _target_name(record: Record | None, entry: Mapping[str, Any] | None = None) -> str:
    if entry is not None and entry.get("target"):
        return str(entry["target"])
    if record is not None:
        return str(record.target.get("kind", "?"))
    return "-"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def _show_rows(test: str, executor: str, target: str, record: Record | None, extra: Sequence[str]) -> list[list[str]]:
    if record is None:
        first = [test, executor, target, "-", "-", "-", "-"]
        return [first + ["-", "-", "-", "-", *extra]]
    exact = record.exact
    first = [test, executor, target, record.workload, fmt_number(exact.scalar("instructions")),
             fmt_number(exact.scalar("kernels")), fmt_number(exact.scalar("storage_bytes"))]
    blank = [""] * len(first)
    timings = sorted(record.timings.items())
    if not timings:
        return [first + ["-", "-", "-", "-", *extra]]
    rows = []
    for i, (fp, timing) in enumerate(timings):
        rows.append((first if i == 0 else blank)
                    + [fmt_time(timing.samples.median), str(len(timing.samples.samples)), fp, timing.machine.cpu_model]
                    + (list(extra) if i == 0 else [""] * len(extra)))
    return rows


def cmd_show(args: argparse.Namespace) -> int:
    loaded = load_file(args.file)
    header = ["test", "executor", "target", "workload", "instructions", "kernels", "storage_bytes",
              "median", "samples", "machine", "cpu"]
    rows: list[list[str]] = []
    if loaded.kind == "baseline":
        for test_id, record in sorted(loaded.records.items()):
            rows.extend(_show_rows(test_id, record.executor, _target_name(record), record, ()))
        print(f"{loaded.label}: {len(loaded.records)} test(s)")
    else:
        header.append("verdict")
        for entry in sorted(loaded.entries, key=lambda e: e["nodeid"]):
            record = loaded.records.get(entry["nodeid"])
            executor = str(entry.get("executor") or (record.executor if record else "-"))
            rows.extend(_show_rows(entry["nodeid"], executor, _target_name(record, entry), record,
                                   (str(entry.get("verdict", "-")),)))
        print(f"{loaded.label}: {len(loaded.entries)} test(s), {len(loaded.records)} with measurements")
    for line in _table(header, rows):
        print(line)
    return 0


# ---------------------------------------------------------------- diff


def _module_match(baseline_path: Path, module: str) -> int:
    """How many path parts of ``module`` (``tests/perf/test_mlp.py``, without ``.py``)
    end ``baseline_path`` (without ``.json``); 0 when it does not."""
    mod = PurePosixPath(module.replace("\\", "/"))
    mod_parts = mod.with_suffix("").parts if mod.suffix == ".py" else mod.parts
    base_parts = PurePosixPath(baseline_path.resolve().with_suffix("").as_posix()).parts
    if mod_parts and len(mod_parts) <= len(base_parts) and tuple(base_parts[-len(mod_parts):]) == tuple(mod_parts):
        return len(mod_parts)
    return 0


def module_of_baseline(path: Path) -> tuple[Path | None, tuple[str, ...]]:
    """The test module a baseline file records, and the ``--tvmperf-baselines`` option a
    pytest run needs to use that file: the first directory above the file whose
    mirrored module exists (``<root>/<dir>/tests/x.json`` -> ``<root>/tests/x.py``),
    else the mirror under a directory named ``baselines``; None when neither is found."""
    resolved = path.resolve()
    for directory in resolved.parents:
        if directory == directory.parent:
            break
        candidate = directory.parent / resolved.relative_to(directory).with_suffix(".py")
        if candidate.is_file():
            return candidate, (() if directory.name == "baselines" else (f"--tvmperf-baselines={directory.name}",))
    for directory in resolved.parents:
        if directory.name == "baselines":
            return directory.parent / resolved.relative_to(directory).with_suffix(".py"), ()
    return None, ()


def accept_command(key: str, baseline_file: Path | None, nodeid: str | None) -> str:
    """``pytest --tvmperf-update 'tests/x.py::test_x[...]'`` for a compared test: its node
    id from a results file, else its module found from the baseline file's path."""
    if nodeid is not None or baseline_file is None:
        return update_command(nodeid or key)
    module, options = module_of_baseline(baseline_file)
    shown = os.path.relpath(module) if module is not None else baseline_file.with_suffix(".py").name
    return update_command(f"{shown}::{key}", options)


def _by_test_id(results: Loaded, baseline: Loaded) -> tuple[dict[str, Record], str]:
    """The results file's records keyed by test id, restricted to the modules that match
    the baseline file's path when any does; and a note saying what was left out."""
    modules: dict[str, list[str]] = {}
    for nodeid in results.records:
        modules.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    scores = {m: _module_match(baseline.path, m) for m in modules}
    best = max(scores.values(), default=0)
    chosen = [m for m in modules if best == 0 or scores[m] == best]
    note = ""
    if best and len(chosen) < len(modules):
        left = sum(len(modules[m]) for m in modules if m not in chosen)
        note = (f"{results.path}: comparing module(s) {', '.join(sorted(chosen))} with {baseline.path}; "
                f"{left} test(s) of other modules left out")
    keyed: dict[str, Record] = {}
    where: dict[str, str] = {}
    for module in chosen:
        for nodeid in modules[module]:
            test_id = nodeid.split("::", 1)[1] if "::" in nodeid else nodeid
            if test_id in keyed:
                raise CliError(
                    f"results file {results.path} holds test id {test_id!r} in several modules ({where[test_id]}, {nodeid}) "
                    f"and none matches the baseline file {baseline.path}; compare the baseline file at its place "
                    f"baselines/<module path>.json, or compare two results files"
                )
            keyed[test_id] = results.records[nodeid]
            where[test_id] = nodeid
    return keyed, note


def _keyed(a: Loaded, b: Loaded) -> tuple[dict[str, Record], dict[str, Record], list[str]]:
    notes: list[str] = []
    if a.kind == b.kind:
        return a.records, b.records, notes
    if a.kind == "results":
        a_records, note = _by_test_id(a, b)
        b_records = b.records
    else:
        b_records, note = _by_test_id(b, a)
        a_records = a.records
    if note:
        notes.append(note)
    return a_records, b_records, notes


def _nodeids(a: Loaded, b: Loaded) -> dict[str, str]:
    """Compared key -> node id, where a results file gives it."""
    if a.kind == b.kind:
        return {k: k for k in a.records} if a.kind == "results" else {}
    results = a if a.kind == "results" else b
    out: dict[str, str] = {}
    for nodeid in results.records:
        out.setdefault(nodeid.split("::", 1)[1] if "::" in nodeid else nodeid, nodeid)
    return out


def _variants(record: Record) -> list[tuple[str | None, Record]]:
    """The records to gate for one test of B: itself when it has at most one timing,
    else one per machine (each holding only that machine's timing)."""
    if len(record.timings) <= 1:
        return [(None, record)]
    return [(fp, replace(record, timings={fp: t})) for fp, t in sorted(record.timings.items())]


def _row(test: str, current: Record, baseline: Record, comparison: Comparison) -> SummaryRow:
    tv = comparison.get("time")
    decision = tv.decision if tv is not None else None
    note = f"time shown, not gated: {tv.note}" if tv is not None and tv.status == Verdict.NOT_GATED and tv.note else ""
    return SummaryRow(
        test=test,
        executor=current.executor,
        target=str(current.target.get("kind", "?")),
        median_s=current.timing.samples.median if current.timing else None,
        baseline_s=tv.baseline if tv is not None else None,
        instructions=current.exact.scalar("instructions"),
        baseline_instructions=baseline.exact.scalar("instructions"),
        verdict=comparison.status,
        note=note,
        ratio=decision.ratio if decision else None,
        low=decision.low if decision else None,
        high=decision.high if decision else None,
        mode=decision.mode if decision else "",
    )


def cmd_diff(args: argparse.Namespace) -> int:
    a, b = load_file(args.a), load_file(args.b)
    a_records, b_records, notes = _keyed(a, b)
    nodeids = _nodeids(a, b)
    common = sorted(set(a_records) & set(b_records))
    removed = sorted(set(a_records) - set(b_records))
    added = sorted(set(b_records) - set(a_records))

    thresholds = dict(DEFAULT_THRESHOLDS)
    thresholds.update(args.threshold or {})
    noise = args.noise if args.noise is not None else dict(DEFAULT_NOISE)
    jobs = [(key, fp, variant) for key in common for fp, variant in _variants(b_records[key])]
    policy = TimePolicy(
        alpha=args.alpha / max(1, len(jobs)),
        noise_ab=noise["ab"],
        noise_normalized=noise["normalized"],
        noise_raw=noise["raw"],
    )

    rows: list[SummaryRow] = []
    messages: list[str] = []
    regressed: set[str] = set()
    counts: dict[str, int] = {}
    for key, fp, current in jobs:
        baseline = a_records[key]
        comparison = compare(current, baseline, thresholds, policy)
        test = key if fp is None else f"{key} @{fp}"
        rows.append(_row(test, current, baseline, comparison))
        counts[comparison.status] = counts.get(comparison.status, 0) + 1
        if comparison.regressions:
            machine_note = [] if fp is None else [f"machine {fp} ({current.timing.machine.cpu_model})"]
            command = accept_command(key, a.path if a.kind == "baseline" else b.path if b.kind == "baseline" else None,
                                     nodeids.get(key))
            messages.append(regression_message(key, str(a.path), current, baseline, comparison, machine_note, command))
            regressed.add(key)

    print(f"tvmperf diff: {a.label} (old) -> {b.label} (new): {len(common)} test(s) compared, "
          f"{len(added)} added, {len(removed)} removed")
    for note in notes:
        print(f"note: {note}")
    if rows:
        print()
        for line in summary_table(rows):
            print(line)
        for line in summary_notes(rows):
            print(line)
        if counts.get(Verdict.INCONCLUSIVE):
            print(f"{counts[Verdict.INCONCLUSIVE]} test(s): time inconclusive, the noise is larger than the threshold "
                  f"(not a failure; more samples or a larger --threshold time=... decide it)")
    if added:
        print()
        print(f"added (only in {b.path}, not compared):")
        for key in added:
            print(f"  {key}")
    if removed:
        print()
        print(f"removed (only in {a.path}, not compared):")
        for key in removed:
            print(f"  {key}")
    for message in messages:
        print()
        print(message)
    print()
    verdicts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing compared"
    print(f"tvmperf diff: {len(regressed)} test(s) regressed ({verdicts})")
    return 1 if regressed else 0


# ---------------------------------------------------------------- tune


def tune_argv(args: argparse.Namespace) -> list[str]:
    """The pytest command line ``tvmperf tune`` runs: the chosen tests with
    ``--tvmperf-tune`` (and ``--tvmperf-update``, so the baselines follow the new
    schedules, unless ``--no-update``)."""
    argv = [*args.pytest_args, f"--tvmperf-tune={args.trials}"]
    if args.db:
        argv.append(f"--tvmperf-tuning-db={args.db}")
    if not args.no_update:
        argv.append("--tvmperf-update")
    return argv


def cmd_tune(args: argparse.Namespace) -> int:
    import pytest

    argv = tune_argv(args)
    print(f"{PROG} tune: pytest {' '.join(argv)}", flush=True)
    return int(pytest.main(argv))


# ---------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show pytest-tvmperf baseline and results files, or gate one against another.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    show = sub.add_parser("show", help="print a baseline or results file as a table",
                          description="Print a baseline file or a results file (told apart by content) as a table.")
    show.add_argument("file", metavar="FILE", help="a baseline file (baselines/<module>.json) or a results file (--tvmperf-json)")
    show.set_defaults(func=cmd_show)
    diff = sub.add_parser(
        "diff", help="gate B (new) against A (old) like the plugin does; exit 1 on a regression",
        description=("Compare B (new) with A (old, the baseline) test by test with the plugin's own gate. "
                     "Each may be a baseline file or a results file. Tests are matched by test id; when both "
                     "are results files, by node id. Exit 1 when a test regressed, else 0; 2 on a bad file or option."),
    )
    diff.add_argument("a", metavar="A", help="the old side: a baseline or results file")
    diff.add_argument("b", metavar="B", help="the new side: a baseline or results file")
    diff.add_argument("--threshold", type=_argparse_type(parse_thresholds), default=None, metavar="EXPR",
                      help=THRESHOLD_HELP.replace("%", "%%"))
    diff.add_argument("--alpha", type=_argparse_type(parse_alpha), default=DEFAULT_ALPHA, metavar="P",
                      help=f"false-alarm rate of all the time verdicts, split over the compared tests (default {DEFAULT_ALPHA})")
    diff.add_argument("--noise", type=_argparse_type(parse_noise), default=None, metavar="EXPR",
                      help="process-to-process noise per mode, e.g. 'normalized=3%%,raw=15%%' (default ab=2%%,normalized=10%%,raw=15%%)")
    diff.set_defaults(func=cmd_diff)
    tune = sub.add_parser(
        "tune", help="tune the kernels of the chosen tests' pipeline='tuned' workloads, then re-record their baselines",
        description=("Run pytest on the chosen tests with --tvmperf-tune=TRIALS: every workload with pipeline='tuned' "
                     "is tuned with MetaSchedule (TRIALS trials per workload, a progress bar each), its records are "
                     "added to the tuning database, and (unless --no-update) its baseline is re-recorded. "
                     "Arguments after the options go to pytest, e.g.: tvmperf tune --trials 64 tests/perf -k dla"),
    )
    tune.add_argument("--trials", type=_argparse_type(_positive_trials), required=True, metavar="N",
                      help="MetaSchedule trials per workload (split over its kernels)")
    tune.add_argument("--db", default=None, metavar="DIR",
                      help="tuning database directory, relative to the baseline directory (default: the ini or 'tuning')")
    tune.add_argument("--no-update", action="store_true", help="tune only; leave the baselines as they are")
    tune.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS",
                      help="tests and options passed to pytest (default: the ini's testpaths)")
    tune.set_defaults(func=cmd_tune)
    return parser


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
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
