"""The record of one test: what ran, its exact metrics, and its timings by machine
fingerprint (one for the current run; a baseline's may hold several)."""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, Mapping

from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.ir_function import FunctionRef
from pytest_tvmperf.values.seeded_weight import SeededWeight


def _round(x: float) -> float:
    return float(f"{x:.6g}")


@dataclass(frozen=True)
class WeightRef:
    """A weight taken out of the IR (store/weights.py): the index of its tensor node in
    the IR's graph, its file relative to the baseline directory, the sha256 of its bytes."""

    node: int
    path: str
    sha256: str

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "path": self.path, "sha256": self.sha256}


@dataclass(frozen=True)
class IRRef:
    """The IR file of a baseline entry (path relative to the baseline directory, sha256 of its
    bytes), the weights stored apart from it, and those stored as descriptions (``seeded``)."""

    path: str
    sha256: str
    weights: tuple[WeightRef, ...] = ()
    seeded: tuple[SeededWeight, ...] = ()
    #: the kernels stored in files of their own (``ir.functions``; the IR holds a stub of each)
    functions: tuple[FunctionRef, ...] = ()

    #: the rule the seeded values follow (store/seeded.py): part of the program's key
    SEED_RULE = "seeded-v1"

    @property
    def program_key(self) -> str:
        """What determines the program: the IR's sha256, with its weights' (the IR alone
        holds zeros in their place, the same for every set of weights), and for seeded
        weights the seeding rule with their descriptions."""
        if not self.weights and not self.seeded and not self.functions:
            return self.sha256
        text = self.sha256 + "".join(f";{w.node}:{w.sha256}" for w in self.weights)
        if self.seeded:
            text += f";{self.SEED_RULE}:" + ";".join(w.describe() for w in self.seeded)
        if self.functions:
            text += ";functions:" + ";".join(f.as_text() for f in self.functions)
        return hashlib.sha256(text.encode()).hexdigest()

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "sha256": self.sha256}
        if self.weights:
            data["weights"] = [w.as_json() for w in self.weights]
        if self.seeded:
            data["seeded"] = [w.as_text() for w in self.seeded]
        if self.functions:
            data["functions"] = [f.as_text() for f in self.functions]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> "IRRef | None":
        if data is None:
            return None
        weights = tuple(WeightRef(int(w["node"]), str(w["path"]), str(w["sha256"])) for w in data.get("weights") or ())
        seeded = tuple(SeededWeight.parse(w) for w in data.get("seeded") or ())
        functions = tuple(FunctionRef.parse(f) for f in data.get("functions") or ())
        return cls(str(data["path"]), str(data["sha256"]), weights, seeded, functions)


@dataclass(frozen=True)
class Timing:
    """Time samples of one machine, with the reference kernel's, and the baseline's
    compiled artifact (path relative to the baseline directory, and its hash) when
    one was saved for a/b timing."""

    machine: Machine
    samples: TimeSamples
    artifact: str | None = None
    artifact_sha256: str | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "machine": self.machine.as_json(),
            "samples_s": [_round(s) for s in self.samples.samples],
            "median_s": _round(self.samples.median),
            "stats": {k: (_round(v) if isinstance(v, float) else v) for k, v in self.samples.stats().items()},
        }
        if self.samples.reference is not None:
            data["reference"] = {
                "name": self.samples.reference_name,
                "samples_s": [_round(s) for s in self.samples.reference],
            }
        if self.artifact is not None:
            data["artifact"] = {"path": self.artifact, "sha256": self.artifact_sha256}
        if self.samples.peers:
            data["peers"] = {
                name: {"samples_s": [_round(s) for s in values], "median_s": _round(float(statistics.median(values)))}
                for name, values in self.samples.peers
            }
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Timing":
        ref = data.get("reference")
        samples = TimeSamples(
            tuple(float(s) for s in data["samples_s"]),
            tuple(float(s) for s in ref["samples_s"]) if ref else None,
            None if not ref or ref.get("name") is None else str(ref["name"]),
            peers=tuple(
                (str(name), tuple(float(s) for s in peer["samples_s"]))
                for name, peer in sorted((data.get("peers") or {}).items())
            ),
        )
        art = data.get("artifact") or {}
        return cls(Machine.from_json(data["machine"]), samples, art.get("path"), art.get("sha256"))


@dataclass(frozen=True)
class Record:
    workload: str
    executor: str
    target: Mapping[str, Any]
    tvm_version: str
    exact: ExactMetrics
    timings: Mapping[str, Timing] = field(default_factory=dict)
    compile_s: float | None = None
    bytecode: Mapping[str, str] | None = None
    kernel_time_s: Mapping[str, float] | None = None
    #: the compile pipeline (see pipelines.py), and for ``tuned`` the tuning database
    #: state it was built with (``builder/tuning_state.TuningState.as_json()``)
    pipeline: str = "default"
    tuning: Mapping[str, Any] | None = None
    #: the program as IR before code generation (``--tvmperf-update``), rebuilt at gate time
    ir: IRRef | None = None
    #: {kernel name: what it is} (values/kernel_id.py): kernels are matched with the
    #: baseline's by structure, not by TVM's numbering; None in a baseline recorded before
    kernels: Mapping[str, KernelId] | None = None

    @property
    def timing(self) -> Timing | None:
        """The single timing of a current measurement."""
        return next(iter(self.timings.values()), None)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in RECORD_FIELDS:
            value = getattr(self, f.key)
            if f.written is Written.ALWAYS or (value is not None if f.written is Written.IF_SET else bool(value)):
                out[f.key] = f.write(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Record":
        """The record from JSON that store/schema.py checked, field by field of :data:`RECORD_FIELDS`."""
        return cls(**{f.key: f.read(data) for f in RECORD_FIELDS})

    def merged_over(self, old: "Record | None") -> "Record":
        """This record as the new baseline, keeping ``old``'s timings from other
        machines while the exact metrics (the code that was timed) are unchanged."""
        if (
            old is None
            or old.exact.without_resources() != self.exact.without_resources()
            or old.workload != self.workload
            or old.pipeline != self.pipeline
            or (  # each target has its own tuning records
                dict(old.target) == dict(self.target)
                and (old.tuning or {}).get("records_hash") != (self.tuning or {}).get("records_hash")
            )
        ):
            return self
        others = {fp: t for fp, t in old.timings.items() if fp not in self.timings}
        return replace(self, timings={**others, **self.timings})


class Presence(Enum):
    """Whether a record's JSON must hold a field: ``REQUIRED``, ``NULLABLE`` (missing or
    null reads as unset) or ``OPTIONAL`` (may be missing; when present, never null)."""

    REQUIRED = "required"
    NULLABLE = "nullable"
    OPTIONAL = "optional"


class Written(Enum):
    """When :meth:`Record.as_json` writes a field: ``ALWAYS`` (null where unset),
    ``IF_SET`` (not None) or ``IF_ANY`` (not None and not empty)."""

    ALWAYS = "always"
    IF_SET = "if set"
    IF_ANY = "if any"


class FieldCheck(str, Enum):
    """The shape store/schema.py checks a field's JSON value against."""

    TEXT = "a string"
    OBJECT = "an object"
    EXACT = "exact metrics"
    TIMINGS = "timings by machine fingerprint"
    SECONDS = "a number of seconds"
    LINES = "{name: [line, ...]}"
    TIMES = "{name: seconds}"
    IR = "an IR file"
    KERNELS = "{kernel name: identity}"


@dataclass(frozen=True)
class RecordField:
    """One field of a :class:`Record`: its key (the dataclass field and the JSON key alike),
    how its JSON is checked (store/schema.py), read and written."""

    key: str
    check: FieldCheck
    presence: Presence
    written: Written
    read: Callable[[Mapping[str, Any]], Any]
    write: Callable[[Any], Any]


def _maybe(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else convert(value)


def _json(value: Any) -> Any:
    return value.as_json()


def _optional_map(key: str, value: Callable[[Any], Any]) -> Callable[[Mapping[str, Any]], dict[str, Any] | None]:
    """The reader of a map that may be missing or null (None)."""
    return lambda data: None if data.get(key) is None else {k: value(v) for k, v in data[key].items()}


def _each(value: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The writer of a map that may be None: its values converted, in key order."""
    return _maybe(lambda m: {k: value(v) for k, v in sorted(m.items())})


def _same(value: Any) -> Any:
    return value


_REQUIRED, _NULLABLE, _OPTIONAL = Presence.REQUIRED, Presence.NULLABLE, Presence.OPTIONAL
_ALWAYS, _IF_SET, _IF_ANY = Written.ALWAYS, Written.IF_SET, Written.IF_ANY

#: The one table of a record's fields, in the order store/schema.py checks them (the first
#: wrong field is the one named); files are written with sorted keys.
RECORD_FIELDS: tuple[RecordField, ...] = (
    RecordField("workload", FieldCheck.TEXT, _REQUIRED, _ALWAYS, lambda d: str(d["workload"]), _same),
    RecordField("executor", FieldCheck.TEXT, _REQUIRED, _ALWAYS, lambda d: str(d["executor"]), _same),
    RecordField("tvm_version", FieldCheck.TEXT, _REQUIRED, _ALWAYS, lambda d: str(d["tvm_version"]), _same),
    RecordField("target", FieldCheck.OBJECT, _REQUIRED, _ALWAYS, lambda d: dict(d["target"]), dict),
    RecordField("exact", FieldCheck.EXACT, _REQUIRED, _ALWAYS, lambda d: ExactMetrics.from_json(d["exact"]), _json),
    RecordField(
        "timings",
        FieldCheck.TIMINGS,
        _REQUIRED,
        _ALWAYS,
        lambda d: {fp: Timing.from_json(t) for fp, t in d.get("timings", {}).items()},
        lambda v: {fp: t.as_json() for fp, t in sorted(v.items())},
    ),
    RecordField("compile_s", FieldCheck.SECONDS, _NULLABLE, _ALWAYS, lambda d: d.get("compile_s"), _maybe(_round)),
    RecordField(
        "bytecode", FieldCheck.LINES, _NULLABLE, _ALWAYS, _optional_map("bytecode", "\n".join), _each(str.splitlines)
    ),
    RecordField(
        "kernel_time_s", FieldCheck.TIMES, _NULLABLE, _ALWAYS, _optional_map("kernel_time_s", float), _each(_round)
    ),
    RecordField("pipeline", FieldCheck.TEXT, _OPTIONAL, _ALWAYS, lambda d: str(d.get("pipeline", "default")), _same),
    RecordField("tuning", FieldCheck.OBJECT, _NULLABLE, _IF_SET, lambda d: _maybe(dict)(d.get("tuning")), dict),
    RecordField("ir", FieldCheck.IR, _NULLABLE, _IF_SET, lambda d: IRRef.from_json(d.get("ir")), _json),
    RecordField(
        "kernels",
        FieldCheck.KERNELS,
        _NULLABLE,
        _IF_ANY,
        lambda d: None if not d.get("kernels") else {str(k): KernelId.from_json(v) for k, v in d["kernels"].items()},
        lambda v: {k: ident.as_json() for k, ident in sorted(v.items())},
    ),
)
