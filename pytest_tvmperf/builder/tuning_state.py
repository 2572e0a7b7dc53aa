"""What a tuning database holds for one program (:class:`TuningState`, stored with the
baseline), and one test's view of a shared database (:class:`TuningView`: the records its
baseline was measured with). Pure values."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping


@dataclass(frozen=True)
class TuningState:
    """What a tuning database holds for one program."""

    #: the database directory, as given (for display)
    db_dir: str
    #: sha256 (first 16 hex digits) of the canonical JSON of the record :func:`apply` uses
    #: for each task, in task order (tuning_choice.record_entry); None when no task has one.
    #: The run times are in on purpose: a re-tune that re-measures or replaces a schedule
    #: gives another hash, so the hash names the database a measurement was taken with
    records_hash: str | None
    #: the tunable kernels (PrimFunc names), sorted
    tasks: tuple[str, ...]
    #: tasks without a successful record for the target (never tuned, or changed): compiled untuned
    missing: tuple[str, ...]
    #: kernels MetaSchedule cannot tune (symbolic shapes, already scheduled): never missing
    untunable: tuple[str, ...] = ()
    #: the targets (as their JSON) that the missing tasks have records for
    other_targets: tuple[str, ...] = ()
    #: the tasks without a record of this exact target that have one of ``other_targets``
    elsewhere: tuple[str, ...] = ()
    #: the tasks scheduled with another target's records (tuning_choice.py)
    portable: tuple[str, ...] = ()
    #: where the schedules came from (tuning_choice.source_note; "" when all are this target's)
    source: str = ""
    #: the records of other targets that cannot apply here, one line each (LeftOut.describe)
    left_out: tuple[str, ...] = ()
    #: this run's target as a user names it (``znver3``)
    here: str = ""
    #: the record each task uses, by digest: kept by later runs while held (``TuningView.pinned``)
    records: Mapping[str, str] | None = None

    @property
    def complete(self) -> bool:
        """True when every tunable task has a record."""
        return not self.missing

    def as_json(self) -> dict[str, Any]:
        out = {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}
        out.pop("records")
        return {**out, **({"records": dict(self.records)} if self.records else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TuningState":
        try:
            return cls(
                db_dir=str(data["db_dir"]),
                records_hash=None if data.get("records_hash") is None else str(data["records_hash"]),
                **{name: tuple(str(t) for t in data.get(name, ())) for name in _LISTS},
                source=str(data.get("source", "")),
                here=str(data.get("here", "")),
                records={str(k): str(v) for k, v in data["records"].items()} if data.get("records") else None,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a tuning state: {data!r} ({exc})") from exc


#: the fields of a :class:`TuningState` that are lists in its JSON
_LISTS = ("tasks", "missing", "untunable", "other_targets", "elsewhere", "portable", "left_out")


@dataclass(frozen=True)
class TuningView:
    """One test's view of a shared tuning database, passed to :func:`apply` as the
    directory: the records its baseline was measured with (task -> digest), the mode."""

    path: Path
    pinned: Mapping[str, str] | None = None
    mode: str = "any"

    def __fspath__(self) -> str:
        return str(self.path)


def view_of(db_dir: Any, mode: str, pinned: Mapping[str, str] | None) -> tuple[Path, str, Mapping[str, str] | None]:
    if isinstance(db_dir, TuningView):
        return Path(db_dir.path), db_dir.mode, db_dir.pinned
    return Path(db_dir), mode, pinned
