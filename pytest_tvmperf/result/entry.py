"""The machine-readable results of a run (``--tvmperf-json``): each test's entry as a
typed :class:`ResultEntry`, its JSON, and reading such a file back with clear errors
(pure, but for :func:`load_results`).

Schema (``schema_version`` 1, ``kind`` "pytest-tvmperf-results"):

    {"schema_version": 1, "kind": "pytest-tvmperf-results", "created": ISO-8601 UTC,
     "tests": [{"nodeid", "test_id", "executor", "target", "verdict", "note", "message",
                "location": [path, line],
                "time": {"median_s", "baseline_s" (mode a/b: the side-by-side median of the baseline's
                         artifact in this run; else the stored median), "ratio", "low", "high", "mode",
                         "confidence", "samples_s", "baseline_samples_s", "estimate" ("wall time" or "own run
                         time": each side's wall time less its own threads' CPU wait, on a busy machine)} | null,
                "kernels": [{"name", "time_s", "baseline_time_s"}] (per-kernel time, may be empty),
                "record": <baseline-entry JSON of this run> | null,
                "baseline": <baseline-entry JSON it was compared with> | null,
                "peers": [<peer cell>], "relation": <peer cell> | null,
                "metrics": [{"metric", "status", "current", "baseline", "limit"}] (every gated metric's
                            verdict: time, instructions, cpu_instructions, ...; compile_s's with
                            "note": how its builds were timed side by side, or why not),
                "failed": [metric] (those that regressed: which metric failed the test),
                "layers": [{"peer", "tvm_total_s", "peer_total_s", "notes", "rows": [{"label", "tvm": [call],
                            "peer": [call], "flops", "tvm_s", "peer_s", "lost_s", ...}]}] (optional: per
                            layer against each peer, judge/layer_match.py)}]}

    peer cell: {"name", "ratio", "low", "high", "limit", "status", "numerator_s", "denominator_s"}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable

from pytest_tvmperf.judge.layer_match import LayerTable
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.store.schema import check_record
from pytest_tvmperf.values.json_fields import Fields, SchemaProblem, check_schema_version, dotted, find_long_int
from pytest_tvmperf.values.json_fields import is_int, loads, long_int_problem
from pytest_tvmperf.store.files import read_regular_text
from pytest_tvmperf.judge.compare import same_program_cell
from pytest_tvmperf.judge.metric_verdict import MetricVerdict
from pytest_tvmperf.judge.confirmation import Settling
from pytest_tvmperf.judge.verdict import PeerCell, Verdict, read_verdict
from pytest_tvmperf.result.kernel_match import match_kernels
from pytest_tvmperf.result.kernel_names import renamed
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.values.resources import COMPILE_S

RESULTS_SCHEMA_VERSION = 1
RESULTS_KIND = "pytest-tvmperf-results"


class ResultsError(Exception):
    """A results file that cannot be read, with what to do."""


@dataclass(frozen=True)
class TimeCell:
    """A test's time now against its baseline's, with the verdict's evidence."""

    median_s: float | None = None
    baseline_s: float | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    mode: str | None = None
    samples_s: tuple[float, ...] | None = None
    baseline_samples_s: tuple[float, ...] | None = None
    #: what median_s, baseline_s and the ratio measured: "wall time", or "own run time" (each
    #: side's wall time less its own threads' CPU wait, on a busy machine)
    estimate: str | None = None
    #: a borderline verdict measured on until decided: the rounds, batches, looks and wall-clock
    #: seconds it added, and why it stopped ("decided", or the budget spent)
    settled: Settling | None = None

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("samples_s", "baseline_samples_s"):
            data[key] = None if data[key] is None else list(data[key])
        data["settled"] = None if self.settled is None else self.settled.to_json()
        return data

    @classmethod
    def read(cls, f: Fields) -> TimeCell:
        return cls(
            **{k: f.number(k) for k in ("median_s", "baseline_s", "ratio", "low", "high", "confidence")},
            mode=f.text("mode", None, nullable=True),
            samples_s=f.numbers("samples_s"),
            baseline_samples_s=f.numbers("baseline_samples_s"),
            estimate=f.text("estimate", None, nullable=True),
            settled=read_settling(f.obj("settled")),
        )


def read_settling(f: Fields | None) -> Settling | None:
    if f is None:
        return None
    numbers = {k: f.number(k, required=True) for k in ("looks", "rounds", "batches", "seconds")}
    if any(v is None for v in numbers.values()):  # read leniently: a bad field already named
        return None
    counts = {k: int(v) for k, v in numbers.items() if k != "seconds"}
    return Settling(
        **counts, seconds=float(numbers["seconds"]), stopped=f.text("stopped", required=True), budget=f.text("budget")
    )


@dataclass(frozen=True)
class KernelTime:
    """One kernel's time now and in the baseline (None where it has none)."""

    name: str
    time_s: float | None
    baseline_time_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "time_s": self.time_s, "baseline_time_s": self.baseline_time_s}

    @classmethod
    def read(cls, f: Fields) -> KernelTime:
        return cls(f.text("name", required=True), f.number("time_s"), f.number("baseline_time_s"))


@dataclass(frozen=True)
class MetricCell:
    """One gated metric's verdict: ``cpu_instructions`` regressed 4985 -> 5170 past ``1%``."""

    metric: str
    status: str
    current: float | None = None
    baseline: float | None = None
    limit: str = ""
    #: how it was measured, or why it was not (written where there is one: compile_s's)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "note" or self.note}

    @classmethod
    def of(cls, v: MetricVerdict) -> MetricCell:
        return cls(
            v.metric, str(v.status), v.current, v.baseline, str(v.limit), v.note if v.metric == COMPILE_S else ""
        )

    @classmethod
    def read(cls, f: Fields) -> MetricCell:
        return cls(
            f.text("metric", required=True),
            f.text("status", required=True),
            f.number("current"),
            f.number("baseline"),
            f.text("limit", nullable=True),
            f.text("note", nullable=True) or "",
        )


@dataclass(frozen=True)
class ResultEntry:
    """One test's entry of a results file (the schema above), typed: :meth:`of` an outcome,
    :meth:`from_json` (every field checked, once), :meth:`to_json`."""

    nodeid: str
    #: read leniently, a word that is no Verdict stays a str
    verdict: Verdict
    test_id: str = ""
    executor: str = ""
    target: str = ""
    note: str = ""
    time: TimeCell | None = None
    kernels: tuple[KernelTime, ...] = ()
    message: str = ""
    #: where the test is defined: (path, line)
    location: tuple[str, int] = ("", 0)
    record: Record | None = None
    baseline: Record | None = None
    #: TVM over each peer framework, timed side by side
    peers: tuple[PeerCell, ...] = ()
    #: the verdict of a ``tvmperf.assert_ratio`` (the entry is that relation's)
    relation: PeerCell | None = None
    #: every gated metric's verdict, and the names of those that regressed
    metrics: tuple[MetricCell, ...] = ()
    failed: tuple[str, ...] = ()
    #: per layer, TVM against each peer (judge/layer_match.py)
    layers: tuple[LayerTable, ...] = ()

    @classmethod
    def of(cls, outcome: Outcome) -> ResultEntry:
        """The entry of one test's outcome."""
        time = None
        record, baseline = outcome.record, outcome.baseline
        if record is not None and record.timing is not None:
            verdict = outcome.comparison.get("time") if outcome.comparison is not None else None
            decision = verdict.decision if verdict is not None else None
            base_timing = baseline.timings.get(record.timing.machine.fingerprint) if baseline is not None else None
            time = TimeCell(
                # the median the verdict's ratio was judged with (under load: today's own run time)
                median_s=verdict.current if verdict and verdict.current is not None else record.timing.samples.median,
                baseline_s=verdict.baseline if verdict is not None else None,
                **{k: getattr(decision, k, None) for k in ("ratio", "low", "high", "confidence", "estimate")},
                mode=decision.mode if decision else (same_program_cell(outcome.comparison) or None),
                # the samples the medians above are of (own run time where the verdict judged that)
                samples_s=(verdict.current_samples if verdict and verdict.current_samples else None)
                or tuple(record.timing.samples.samples),
                baseline_samples_s=(verdict.baseline_samples if verdict and verdict.baseline_samples else None)
                or (tuple(base_timing.samples.samples) if base_timing else None),
                settled=verdict.settled if verdict is not None else None,
            )
        return cls(
            **{key: getattr(outcome, key) for key in ("nodeid", "verdict", "test_id", "executor", "target", "note")},
            time=time,
            kernels=kernel_rows(record, baseline),
            message=outcome.message,
            location=(outcome.location[0], outcome.location[1]),
            record=record,
            baseline=baseline,
            peers=tuple(PeerCell.of(v) for v in outcome.peers),
            relation=PeerCell.of(outcome.relation) if outcome.relation is not None else None,
            metrics=tuple(
                MetricCell.of(v) for v in (outcome.comparison.verdicts if outcome.comparison is not None else ())
            ),
            failed=outcome.failed_metrics,
            layers=outcome.layers,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **{key: getattr(self, key) for key in ("nodeid", "test_id", "executor", "target")},
            "verdict": str(self.verdict),
            "note": self.note,
            "time": self.time.to_json() if self.time is not None else None,
            "kernels": [k.to_json() for k in self.kernels],
            "message": self.message,
            "location": list(self.location),
            "record": self.record.as_json() if self.record is not None else None,
            "baseline": self.baseline.as_json() if self.baseline is not None else None,
            "peers": [p.to_dict() for p in self.peers],
            "relation": self.relation.to_dict() if self.relation is not None else None,
            "metrics": [m.to_json() for m in self.metrics],
            "failed": list(self.failed),
            **({"layers": [t.to_json() for t in self.layers]} if self.layers else {}),
        }

    @classmethod
    def from_json(cls, data: Any, strict: bool = True) -> ResultEntry:
        """Read one entry. Strict, the first missing or wrong field raises SchemaProblem naming it
        (``time.ratio``), but for those the first results files lacked (``message``, ``location``,
        ``peers``, ``relation``); lenient (a page), what is missing or wrong reads as nothing."""
        f = Fields(data, "", strict)
        nodeid = f.text("nodeid", required=True)
        if strict and not nodeid:
            raise SchemaProblem("nodeid", "expected a non-empty string, got ''")
        time, relation = f.obj("time"), f.obj("relation")
        metrics = tuple(MetricCell.read(m) for m in f.objects("metrics"))
        return cls(
            nodeid=nodeid,
            verdict=read_verdict(f, "verdict"),
            **{key: f.text(key, nullable=True) for key in ("test_id", "executor", "target", "note", "message")},
            time=TimeCell.read(time) if time is not None else None,
            kernels=tuple(KernelTime.read(k) for k in f.objects("kernels")),
            location=_location(f),
            record=_record(f, "record"),
            baseline=_record(f, "baseline"),
            peers=tuple(PeerCell.from_dict(p) for p in f.objects("peers")),
            relation=PeerCell.from_dict(relation) if relation is not None else None,
            metrics=metrics,
            failed=tuple(m.metric for m in metrics if m.status == Verdict.REGRESSED),
            layers=_layers(f),
        )


def _layers(f: Fields) -> tuple[LayerTable, ...]:
    """The per-layer tables (optional): a wrong one names the field, or reads as none (lenient)."""
    raw = f.raw("layers")
    if raw is None:
        return ()
    try:
        return tuple(LayerTable.from_json(t) for t in raw)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if f.strict:
            raise SchemaProblem(f.path("layers"), f"expected the per-layer tables tvmperf writes ({exc!r})") from None
        return ()


def _location(f: Fields) -> tuple[str, int]:
    value = f.raw("location")
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and is_int(value[1]):
        return (value[0], value[1])
    if f.strict and value is not None:
        raise SchemaProblem(f.path("location"), "expected [path, line]")
    return ("", 0)


def _record(f: Fields, key: str) -> Record | None:
    """A record (a baseline entry's JSON), checked field by field; lenient, a bad one is None."""
    value = f.raw(key)
    if value is None:
        return None
    try:
        check_record(value)
    except SchemaProblem as exc:
        if f.strict:
            raise SchemaProblem(exc.field, exc.problem, within=key) from None
        return None
    return Record.from_json(value)


def kernel_rows(record: Record | None, baseline: Record | None) -> tuple[KernelTime, ...]:
    """Per-kernel time now and in the baseline, slowest added time first."""
    if record is None or record.kernel_time_s is None:
        return ()
    before = (baseline.kernel_time_s if baseline is not None else None) or {}
    if baseline is not None and baseline.kernels and record.kernels:  # by structure (result/kernel_match.py)
        match = match_kernels(baseline.kernels, record.kernels)
        # the counterpart's time: a builtin by name, a kernel by structure (a new one has none)
        old = {n: n if match.status.get(n) is None else match.old_of.get(n) for n in record.kernel_time_s}
        rows = [KernelTime(_kernel_label(match, n), t, before.get(old[n])) for n, t in record.kernel_time_s.items()]
    else:
        old_of = renamed(before, record.kernel_time_s)  # a renamed kernel is compared with its old self
        rows = [KernelTime(n, t, before.get(n, before.get(old_of.get(n, "")))) for n, t in record.kernel_time_s.items()]
    return tuple(sorted(rows, key=lambda r: -(r.time_s - (r.baseline_time_s or 0.0))))


def _kernel_label(match, name: str) -> str:
    """A kernel's bar label: what it is, its name, and (new) or (changed) since the baseline."""
    status = match.status.get(name)
    if status is None:
        return name
    tag = f" ({status})" if str(status) in ("new", "changed") else ""
    old = match.old_of.get(name)
    was = f" (was {old})" if old and old != name else ""
    ident = match.after.get(name)
    # the name and the tag first (a bar's label is cut at 40 characters; its tooltip has it all)
    return f"{name}{tag}{was}" + (f" · {ident.describe()}" if ident is not None else "")


def results_json(entries: Iterable[ResultEntry], created: str) -> dict[str, Any]:
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": RESULTS_KIND,
        "created": created,
        "tests": [e.to_json() for e in sorted(entries, key=lambda e: e.nodeid)],
    }


def no_long_int(data: Any, where: str, fix: str) -> None:
    """ResultsError naming ``where`` and the field of a whole number too long to be a value."""
    found = find_long_int(data)
    if found is not None:
        field_path, long_int = found
        raise ResultsError(
            f"{where}: field {dotted(field_path) or '(the whole line)'}: {long_int_problem(long_int)}; {fix}"
        )


def parse_results(text: str, path: Path) -> list[ResultEntry]:
    """A results file's entries; ResultsError names the file, the entry, the field and the fix."""
    hint = f"re-create it with `pytest --tvmperf-json={path}`"
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(
            f"results file {path} is not valid JSON ({exc.msg} at line {exc.lineno}); it may be truncated: {hint}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise ResultsError(f"results file {path} cannot be read as JSON ({exc}); {hint}") from None
    no_long_int(data, f"results file {path}", hint)
    if not isinstance(data, dict) or data.get("kind") != RESULTS_KIND or not isinstance(data.get("tests"), list):
        raise ResultsError(f"results file {path} is not a pytest-tvmperf results file; {hint}")
    if not check_schema_version(data.get("schema_version"), RESULTS_SCHEMA_VERSION):
        raise ResultsError(
            f"results file {path} has schema version {data.get('schema_version')!r}, this pytest-tvmperf reads "
            f"version {RESULTS_SCHEMA_VERSION}; {hint}"
        )
    entries = []
    for number, raw in enumerate(data["tests"]):
        nodeid = raw.get("nodeid") if isinstance(raw, dict) else None
        entry = f"test entry {number}" + (f" ({nodeid})" if isinstance(nodeid, str) and nodeid else "")
        try:
            entries.append(ResultEntry.from_json(raw))
        except SchemaProblem as exc:
            raise ResultsError(f"results file {path}: {entry} is malformed: {exc}; {hint}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsError(
                f"results file {path}: {entry} is malformed ({type(exc).__name__}: {exc}); {hint}"
            ) from None
    return entries


def load_results(path: Path) -> list[ResultEntry]:
    try:
        text = read_regular_text(Path(path))
    except FileNotFoundError:
        raise ResultsError(
            f"results file {path} does not exist; create it with `pytest --tvmperf-json={path}`"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"results file {path} cannot be read ({exc})") from None
    return parse_results(text, Path(path))
