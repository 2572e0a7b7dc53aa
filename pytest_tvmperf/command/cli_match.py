"""Pure parts of the ``tvmperf`` command: which tests of two files are compared (the
matching rule in cli.py's docstring), the records gated for each, and the rows shown."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Sequence

from pytest_tvmperf.judge.metric_verdict import Comparison
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.result.text import SummaryRow, fmt_number, fmt_time, text_table
from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.result.entry import ResultEntry, ResultsError
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.compile_text import stored_compile_cell
from pytest_tvmperf.values.compile_times import fmt_seconds
from pytest_tvmperf.values.resources import RESOURCE_NAMES


class CliError(Exception):
    """A file the CLI cannot use, with the fix (one line)."""


@dataclass
class Loaded:
    """One input file: baseline records keyed by test id, or a results file's records
    keyed by node id (``entries`` holds its test entries, with or without a record)."""

    path: Path
    kind: str  # "baseline" or "results"
    records: dict[str, Record]
    entries: list[ResultEntry] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.kind} file {self.path}"


def results_records(entries: Sequence[ResultEntry], path: Path) -> dict[str, Record]:
    """A results file's records keyed by node id; two records under one node id are a
    ResultsError (a relation shares its test's node id, but has no record)."""
    records: dict[str, Record] = {}
    for number, entry in enumerate(entries):
        if entry.record is None:
            continue
        if entry.nodeid in records:
            raise ResultsError(
                f"results file {path}: test entry {number} ({safe(entry.nodeid)}) is malformed: its node id "
                f"appears twice; re-create it with `pytest --tvmperf-json={path}`"
            )
        records[entry.nodeid] = entry.record
    return records


#: the resource metrics a row shows, each in its own column
_RESOURCES = RESOURCE_NAMES


def _show_rows(
    test: str,
    executor: str,
    target: str,
    record: Record | None,
    extra: Sequence[str],
    judged: ResultEntry | None = None,
) -> list[list[str]]:
    """``judged``: a results entry whose run timed it: its median is the one the run judged (own run
    time on a busy machine, labelled so), as its summary, JSON and HTML show it."""
    if record is None:
        return [[test, executor, target, *["-"] * 13, *extra]]
    exact = record.exact
    compile_s = fmt_seconds(record.compile_s) if record.compile_s is not None else "-"  # its whole build, as recorded
    counts = [fmt_number(exact.scalar(metric)) for metric in ("instructions", "kernels", "storage_bytes")]
    resources = [_resource_cell(exact, metric) for metric in _RESOURCES]
    first = [test, executor, target, record.workload, compile_s, *counts, *resources]
    blank = [""] * len(first)
    timings = sorted(record.timings.items())
    if not timings:
        return [first + ["-", "-", "-", "-", *extra]]
    time = judged.time if judged is not None else None
    if time is not None and time.median_s is not None and len(timings) == 1:
        fp, timing = timings[0]
        label = f" ({time.estimate})" if time.estimate and time.estimate != "wall time" else ""
        count = str(len(time.samples_s)) if time.samples_s else str(len(timing.samples.samples))
        return [first + [fmt_time(time.median_s) + label, count, fp, timing.machine.cpu_model, *extra]]
    return [
        (first if i == 0 else blank)
        + [fmt_time(timing.samples.median), str(len(timing.samples.samples)), fp, timing.machine.cpu_model]
        + (list(extra) if i == 0 else [""] * len(extra))
        for i, (fp, timing) in enumerate(timings)
    ]


def _resource_cell(exact, metric: str) -> str:
    """A resource metric's value; ``n/a`` where it could not be read, ``-`` in a record
    from before it existed."""
    value = exact.scalar(metric)
    if value is not None:
        return fmt_number(value)
    return "-" if metric in exact.predates else "n/a"


def show_lines(loaded: Loaded) -> list[str]:
    """``tvmperf show``: a line naming the file, then its table (one row per test and machine),
    then a results file's per-layer tables (``--tvmperf-layers``, a failed ``vs_<peer>``):
    per test, the 5 layers where TVM loses the most to the peer."""
    from pytest_tvmperf.result.layers_text import table_lines

    header = [
        *("test", "executor", "target", "workload", "compile_s", "instructions", "kernels", "storage_bytes"),
        *_RESOURCES,
        *("median", "samples", "machine", "cpu"),
    ]
    rows: list[list[str]] = []
    layers: list[str] = []
    if loaded.kind == "baseline":
        for test_id, record in sorted(loaded.records.items()):
            rows.extend(_show_rows(test_id, record.executor, str(record.target.get("kind", "?")), record, ()))
        head = f"{loaded.label}: {len(loaded.records)} test(s)"
    else:
        header.append("verdict")
        for entry in sorted(loaded.entries, key=lambda e: e.nodeid):
            record = loaded.records.get(entry.nodeid)
            executor, verdict = entry.executor or (record.executor if record else "-"), str(entry.verdict or "-")
            target = entry.target or (str(record.target.get("kind", "?")) if record is not None else "-")
            rows.extend(_show_rows(entry.nodeid, executor, target, record, (verdict,), judged=entry))
            for table in entry.layers:
                layers += ["", f"{entry.nodeid}:", *table_lines(table, 5)]
        head = f"{loaded.label}: {len(loaded.entries)} test(s), {len(loaded.records)} with measurements"
    return [head, *text_table(header, rows), *layers]


def module_match(baseline_path: Path, module: str) -> int:
    """How many path parts of ``module`` (``tests/perf/test_mlp.py``, without ``.py``)
    end ``baseline_path`` (without ``.json``); 0 when it does not."""
    mod = PurePosixPath(module.replace("\\", "/"))
    mod_parts = mod.with_suffix("").parts if mod.suffix == ".py" else mod.parts
    base_parts = PurePosixPath(baseline_path.resolve().with_suffix("").as_posix()).parts
    if mod_parts and len(mod_parts) <= len(base_parts) and tuple(base_parts[-len(mod_parts) :]) == tuple(mod_parts):
        return len(mod_parts)
    return 0


def _by_test_id(results: Loaded, baseline: Loaded) -> tuple[dict[str, Record], str]:
    """The results file's records keyed by test id, restricted to the modules that match
    the baseline file's path when any does; and a note saying what was left out."""
    modules: dict[str, list[str]] = {}
    for nodeid in results.records:
        modules.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    scores = {m: module_match(baseline.path, m) for m in modules}
    best = max(scores.values(), default=0)
    chosen = [m for m in modules if best == 0 or scores[m] == best]
    note = ""
    if best and len(chosen) < len(modules):
        left = sum(len(modules[m]) for m in modules if m not in chosen)
        note = (
            f"{results.path}: comparing module(s) {', '.join(sorted(chosen))} with {baseline.path}; "
            f"{left} test(s) of other modules left out"
        )
    keyed: dict[str, Record] = {}
    where: dict[str, str] = {}
    for module in chosen:
        for nodeid in modules[module]:
            test_id = nodeid.split("::", 1)[-1]
            if test_id in keyed:
                raise CliError(
                    f"results file {results.path} holds test id {test_id!r} in several modules ({safe(where[test_id])}, {safe(nodeid)}) "
                    f"and none matches the baseline file {baseline.path}; compare the baseline file at its place "
                    f"baselines/<module path>.json, or compare two results files"
                )
            keyed[test_id] = results.records[nodeid]
            where[test_id] = nodeid
    return keyed, note


def keyed(a: Loaded, b: Loaded) -> tuple[dict[str, Record], dict[str, Record], list[str]]:
    """The records of A and B under the keys they are matched by, and notes on what was left out."""
    if a.kind == b.kind:
        return a.records, b.records, []
    if a.kind == "results":
        a_records, note = _by_test_id(a, b)
        b_records = b.records
    else:
        b_records, note = _by_test_id(b, a)
        a_records = a.records
    return a_records, b_records, [note] if note else []


def nodeids(a: Loaded, b: Loaded) -> dict[str, str]:
    """Compared key -> node id, where a results file gives it."""
    if a.kind == b.kind:
        return {k: k for k in a.records} if a.kind == "results" else {}
    results = a if a.kind == "results" else b
    out: dict[str, str] = {}
    for nodeid in results.records:
        out.setdefault(nodeid.split("::", 1)[-1], nodeid)
    return out


def run_verdicts(a_records: dict[str, Record], b: Loaded, node_of: dict[str, str]) -> dict[str, ResultEntry]:
    """Compared key -> B's results entry, for the tests whose run judged the very record A holds
    for them (its stored ``baseline`` is A's record): the diff shows the run's own verdict there."""
    if b.kind != "results":
        return {}
    by_nodeid = {e.nodeid: e for e in b.entries if e.record is not None and e.relation is None}
    out: dict[str, ResultEntry] = {}
    for key, record in a_records.items():
        entry = by_nodeid.get(node_of.get(key, key))
        if entry is not None and entry.baseline is not None and entry.baseline.as_json() == record.as_json():
            out[key] = entry
    return out


def variants(record: Record) -> list[tuple[str | None, Record]]:
    """The records to gate for one test of B: itself when it has at most one timing,
    else one per machine (each holding only that machine's timing)."""
    if len(record.timings) <= 1:
        return [(None, record)]
    return [(fp, replace(record, timings={fp: t})) for fp, t in sorted(record.timings.items())]


def diff_row(test: str, current: Record, baseline: Record, comparison: Comparison) -> SummaryRow:
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
        **({key: getattr(decision, key) for key in ("ratio", "low", "high", "mode")} if decision else {}),
        resources={metric: current.exact.scalar(metric) for metric in _RESOURCES},
        compile=stored_compile_cell(baseline.compile_s, current.compile_s),
    )
