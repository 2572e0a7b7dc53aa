"""The one mutable object of a run: outcomes by test, cached baselines, queued updates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .compare import Comparison
from .options import Settings
from .record import Record
from .report import SummaryRow
from .store import BaselineError, load_baselines, save_updates
from .targets import TargetSpec, resolve_target


@dataclass(frozen=True)
class Outcome:
    """What one tvmperf test measured and decided."""

    nodeid: str
    test_id: str
    executor: str
    target: str
    verdict: str
    record: Record | None = None
    baseline: Record | None = None
    comparison: Comparison | None = None
    note: str = ""

    def summary_row(self) -> SummaryRow:
        time_now = self.record.timing.samples.median if self.record and self.record.timing else None
        time_base = None
        if self.comparison is not None and (tv := self.comparison.get("time")) is not None:
            time_base = tv.baseline
        return SummaryRow(
            test=self.test_id,
            executor=self.executor,
            target=self.target,
            median_s=time_now,
            baseline_s=time_base,
            instructions=self.record.exact.scalar("instructions") if self.record else None,
            baseline_instructions=self.baseline.exact.scalar("instructions") if self.baseline else None,
            verdict=self.verdict,
            note=self.note,
        )


@dataclass
class TvmperfSession:
    settings: Settings
    rootpath: Path
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    updates: dict[Path, dict[str, Record]] = field(default_factory=dict)
    _baselines: dict[Path, dict[str, Record] | BaselineError] = field(default_factory=dict)
    _targets: dict[str, TargetSpec] = field(default_factory=dict)
    write_errors: list[str] = field(default_factory=list)

    def target(self, name: str) -> TargetSpec:
        if name not in self._targets:
            self._targets[name] = resolve_target(name)
        return self._targets[name]

    def baselines(self, path: Path) -> dict[str, Record]:
        """Records of one baseline file, read once per run; raises BaselineError."""
        if path not in self._baselines:
            try:
                self._baselines[path] = load_baselines(path)
            except BaselineError as exc:
                self._baselines[path] = exc
        cached = self._baselines[path]
        if isinstance(cached, BaselineError):
            raise cached
        return cached

    def add(self, outcome: Outcome) -> None:
        self.outcomes[outcome.nodeid] = outcome

    def queue_update(self, path: Path, test_id: str, record: Record) -> None:
        self.updates.setdefault(path, {})[test_id] = record

    def flush_updates(self) -> list[Path]:
        """Write queued baselines (once, at session end); returns the files written."""
        written = []
        for path, records in sorted(self.updates.items()):
            try:
                save_updates(path, records)
            except (BaselineError, OSError) as exc:
                self.write_errors.append(f"baselines not written to {path}: {exc}")
                continue
            written.append(path)
        self.updates.clear()
        return written
