"""What a tuning database holds for one program (:class:`TuningState`, stored with the
baseline), and one test's view of a shared database (:class:`TuningView`: the records its
baseline was measured with). Pure values."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


@dataclass(frozen=True)
class TuningState:
    """What a tuning database holds for one program.

    db_dir
        The database directory, as given (for display).
    records_hash
        sha256 (first 16 hex digits) over the canonical JSON (sorted keys) of the
        record :func:`apply` uses for each task, in task order: the kernel's
        structural hash, and the record's trace, run times, target and argument
        shapes. The run times are in on purpose: a re-tune that re-measures or
        replaces a schedule gives another hash, so the hash names the database a
        measurement was taken with; the same files always give the same hash. None
        when no task has a record.
    tasks
        The tunable kernels (PrimFunc names), sorted.
    missing
        Tasks without a successful record for the target (never tuned, tuned for
        another target, or the workload changed since); they are compiled untuned.
    untunable
        Kernels MetaSchedule cannot tune (symbolic shapes, already scheduled); they
        are always compiled untuned and never count as missing.
    """

    db_dir: str
    records_hash: str | None
    tasks: tuple[str, ...]
    missing: tuple[str, ...]
    untunable: tuple[str, ...] = ()
    #: the targets (as their JSON) that the missing tasks do have records for: tuned
    #: on another machine or for another target, rather than never tuned or changed
    other_targets: tuple[str, ...] = ()
    #: the tasks without a record of this exact target that do have records for one of
    #: ``other_targets`` (applied here when they can be, else missing)
    elsewhere: tuple[str, ...] = ()
    #: the tasks scheduled with another target's records (tuning_choice.py)
    portable: tuple[str, ...] = ()
    #: where the schedules came from, e.g. ``schedules tuned on znver4, applied on
    #: znver3: 31 of 31 kernels`` ("" when every record is this target's own)
    source: str = ""
    #: the records of other targets that cannot apply here, one line each
    #: (``fused_dense (tuned on cascadelake: tensorizes with dot_16x4_vnni, ...)``)
    left_out: tuple[str, ...] = ()
    #: this run's target as a user names it (``znver3``)
    here: str = ""
    #: the record each task uses, by its digest (tuning_choice.record_digest): what a
    #: later run keeps using while the database holds it (``TuningView.pinned``)
    records: Mapping[str, str] | None = None

    @property
    def complete(self) -> bool:
        """True when every tunable task has a record."""
        return not self.missing

    def as_json(self) -> dict[str, Any]:
        return {
            "db_dir": self.db_dir,
            "records_hash": self.records_hash,
            "tasks": list(self.tasks),
            "missing": list(self.missing),
            "untunable": list(self.untunable),
            "other_targets": list(self.other_targets),
            "elsewhere": list(self.elsewhere),
            "portable": list(self.portable),
            "source": self.source,
            "left_out": list(self.left_out),
            "here": self.here,
            **({"records": dict(self.records)} if self.records else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TuningState":
        try:
            return cls(
                db_dir=str(data["db_dir"]),
                records_hash=None if data.get("records_hash") is None else str(data["records_hash"]),
                tasks=tuple(str(t) for t in data.get("tasks", ())),
                missing=tuple(str(t) for t in data.get("missing", ())),
                untunable=tuple(str(t) for t in data.get("untunable", ())),
                other_targets=tuple(str(t) for t in data.get("other_targets", ())),
                elsewhere=tuple(str(t) for t in data.get("elsewhere", ())),
                portable=tuple(str(t) for t in data.get("portable", ())),
                source=str(data.get("source", "")),
                left_out=tuple(str(t) for t in data.get("left_out", ())),
                here=str(data.get("here", "")),
                records={str(k): str(v) for k, v in data["records"].items()} if data.get("records") else None,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a tuning state: {data!r} ({exc})") from exc


@dataclass(frozen=True)
class TuningView:
    """One test's view of a shared tuning database: the directory, the records the
    test's baseline was measured with (task -> record digest; kept while the database
    holds them) and the mode (``--tvmperf-tuned``). The pipelines pass it to
    :func:`apply` where they would pass the directory."""

    path: Path
    pinned: Mapping[str, str] | None = None
    mode: str = "any"

    def __fspath__(self) -> str:
        return str(self.path)


def view_of(db_dir: Any, mode: str, pinned: Mapping[str, str] | None) -> tuple[Path, str, Mapping[str, str] | None]:
    if isinstance(db_dir, TuningView):
        return Path(db_dir.path), db_dir.mode, db_dir.pinned
    return Path(db_dir), mode, pinned
