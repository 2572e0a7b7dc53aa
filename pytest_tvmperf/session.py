"""The one mutable object of a run: outcomes by test, cached baselines, queued updates."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from . import artifacts
from .compare import TimePolicy
from .isolation import Sandbox
from .options import Settings
from .outcome import Outcome

if TYPE_CHECKING:
    from .results import ResultEntry
from .record import Record
from .report import SummaryRow
from .store import BaselineError, file_lock, load_baselines
from .targets import TargetSpec, resolve_target


@dataclass
class TvmperfSession:
    settings: Settings
    rootpath: Path
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    updates: dict[Path, dict[str, Record]] = field(default_factory=dict)
    _baselines: dict[Path, dict[str, Record] | BaselineError] = field(default_factory=dict)
    _targets: dict[str, TargetSpec] = field(default_factory=dict)
    write_errors: list[str] = field(default_factory=list)
    #: queued updates that could not be written (their file is named in write_errors)
    unwritten: int = 0
    pending_artifacts: list[artifacts.PendingArtifact] = field(default_factory=list)
    exported: list[artifacts.PendingArtifact] = field(default_factory=list)
    timed_tests: int = 1
    _references: dict[str, Callable[[], float]] = field(default_factory=dict)
    _scratch: Path | None = None
    export_problem: str = ""
    worker_rows: list[SummaryRow] = field(default_factory=list)
    worker_entries: list = field(default_factory=list)  # ResultEntry
    history: list[dict] = field(default_factory=list)
    report_lines: list[str] = field(default_factory=list)
    annotation_lines: list[str] = field(default_factory=list)
    collected: dict[Path, set[str]] = field(default_factory=dict)
    partial_run: bool = False
    unused: dict[Path, list[str]] = field(default_factory=dict)
    pruned: list[str] = field(default_factory=list)
    #: why a peer framework asked for was not timed (missing package), once per reason
    peer_problems: set[str] = field(default_factory=set)
    _tuning_markers: list[Path] = field(default_factory=list)
    #: this run's id, shared by its xdist workers (their ``testrunuid``)
    run_id: str = ""
    _sandbox: Sandbox | None = None
    #: options of this run that an accept command must repeat (``--tvmperf-baselines=DIR``, ...)
    update_options: tuple[str, ...] = ()
    #: where pytest was started: node ids in printed commands are relative to it
    invocation_dir: Path | None = None

    def accept_command(self, nodeid: str | None, first: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> str:
        """The command that records ``nodeid``'s baseline, runnable as printed from
        where this run was started."""
        from .report import update_command

        if nodeid and self.invocation_dir is not None and self.invocation_dir.resolve() != self.rootpath.resolve():
            file, sep, rest = nodeid.partition("::")
            nodeid = os.path.relpath(self.rootpath / file, self.invocation_dir) + sep + rest
        return update_command(nodeid, (*extra, *self.update_options), first)

    def sandbox(self) -> Sandbox:
        """The child process that runs each artifact once before the session does."""
        if self._sandbox is None:
            self._sandbox = Sandbox(self.scratch_dir())
        return self._sandbox

    def find_unused(self) -> dict[Path, list[str]]:
        """Baseline entries no collected test uses: in the files of collected modules,
        and every entry of files whose test module no longer exists. A partial run
        (-k, -m, node ids, deselection) reports nothing."""
        if self.partial_run:
            return {}
        from .store import module_of

        unused: dict[Path, list[str]] = {}
        base_dir = self.settings.baseline_dir
        for path in sorted(base_dir.rglob("*.json")) if base_dir.is_dir() else []:
            if self.settings.artifact_dir is not None and self.settings.artifact_dir in path.parents:
                continue
            module_gone = not module_of(path, base_dir, self.rootpath).exists()
            if path not in self.collected and not module_gone:
                continue
            try:
                records = self.baselines(path)
            except BaselineError:
                continue
            names = sorted(set(records) - self.collected.get(path, set()))
            if names:
                unused[path] = names
        return unused

    def prune(self, unused: dict[Path, list[str]]) -> None:
        """Remove unused entries (``--tvmperf-update --tvmperf-prune``), then their
        artifacts that no entry of any baseline file names any more."""
        from .store import baselines_lock, remove_entries

        base_dir = self.settings.baseline_dir
        candidates: set[str] = set()
        for path, names in unused.items():
            for record in remove_entries(path, set(names), lock_dir=base_dir):
                candidates.update(t.artifact for t in record.timings.values() if t.artifact)
            self.pruned.extend(f"{path.relative_to(self.rootpath) if path.is_relative_to(self.rootpath) else path}::{n}" for n in names)
        with baselines_lock(base_dir):
            artifacts.delete_unnamed(candidates, base_dir, self.settings.artifact_dir, self._not_baselines())

    def _not_baselines(self) -> list[Path]:
        """Directories under the baseline directory that hold no baseline files."""
        return [p for p in (self.settings.artifact_dir, self.settings.tuning_db) if p is not None]

    def remove_leftovers(self) -> list[Path]:
        """At session start: temporary files and scratch directories that crashed or
        killed runs left behind (a live run's are kept)."""
        s = self.settings
        removed = artifacts.remove_leftovers([s.baseline_dir])
        removed += artifacts.remove_leftovers(
            [p.parent for p in (s.json_path, s.html_path, s.history_path) if p is not None], recursive=False)
        for scratch in Path(tempfile.gettempdir()).glob("tvmperf-*-*"):
            pid = scratch.name.split("-")[1]
            if scratch.is_dir() and pid.isdigit() and artifacts.is_leftover(f".x.{pid}.y.tmp", 0.0, 0.0):
                import shutil

                shutil.rmtree(scratch, ignore_errors=True)
                removed.append(scratch)
        return removed

    def result_entries(self) -> list["ResultEntry"]:
        """Results-JSON entries of this process's tests, then those of xdist workers."""
        from .results import ResultEntry

        return [ResultEntry.of(o) for o in self.outcomes.values()] + self.worker_entries

    def summary_rows(self) -> list[SummaryRow]:
        """Rows of this process's tests, then those reported by xdist workers."""
        return [o.summary_row() for o in self.outcomes.values()] + self.worker_rows

    def scratch_dir(self) -> Path:
        """A temporary directory for this run's exported artifacts (removed at the end)."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"tvmperf-{os.getpid()}-"))
        return self._scratch

    def cleanup(self) -> None:
        """Remove the scratch directory and every exported artifact not committed
        (a test that failed after exporting leaves nothing behind)."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        for pending in self.exported:
            artifacts.discard(pending)
        self.exported.clear()
        for marker in self._tuning_markers:
            marker.unlink(missing_ok=True)
        self._tuning_markers.clear()
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def time_policy(self) -> TimePolicy:
        """The time verdict's policy; the run's false-alarm rate is split evenly over its
        timed tests (Bonferroni), so a suite of many cases does not fail by chance."""
        return self.settings.time_policy(self.timed_tests)

    def reference_sampler(self, target: TargetSpec) -> Callable[[], float]:
        """The reference kernel for ``target``, compiled once per run."""
        if target.name not in self._references:
            from .executors import PrimExecutor
            from .reference import reference_workload

            ref = reference_workload()
            inputs = ref.inputs()
            specs = [(e.shape, str(e.dtype)) for e in ref.expected(inputs)]
            compiled = PrimExecutor().compile(ref, target)
            self._references[target.name] = compiled.sampler(inputs, specs, self.settings.min_repeat_ms)
        return self._references[target.name]

    @contextlib.contextmanager
    def timing_lock(self) -> Iterator[None]:
        """Hold the machine's clock for one measurement: pytest-xdist workers (and other
        runs of this project) time one at a time, so they do not disturb each other."""
        key = hashlib.sha256(str(self.rootpath.resolve()).encode()).hexdigest()[:12]
        with file_lock(Path(tempfile.gettempdir()) / f"tvmperf-timing-{key}.lock"):
            yield

    def claim_tuning(self, key: tuple[str, str, str]) -> bool:
        """True the first time this run (any xdist worker) asks to tune ``key`` (workload,
        target, database), so a workload under several executors is tuned once. Call
        with the timing lock held."""
        digest = hashlib.sha256(repr((self.run_id, key)).encode()).hexdigest()[:20]
        marker = Path(tempfile.gettempdir()) / f"tvmperf-tuned-{digest}"
        if marker.exists():
            return False
        marker.touch()
        self._tuning_markers.append(marker)
        return True

    def queue_artifact(self, pending: artifacts.PendingArtifact) -> None:
        self.pending_artifacts.append(pending)

    def discard_pending(self) -> None:
        for pending in self.pending_artifacts:
            artifacts.discard(pending)
        self.pending_artifacts.clear()
        self.updates.clear()

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
        self.outcomes[f"{outcome.nodeid}\0{outcome.test_id}"] = outcome

    def queue_update(self, path: Path, test_id: str, record: Record) -> None:
        self.updates.setdefault(path, {})[test_id] = record

    def flush_updates(self) -> list[Path]:
        """Write queued baselines (once, at session end); returns the files written.

        Per baseline file, under the baseline directory's lock: the file is read and
        checked, the new entries' artifacts (named by their content hash) are renamed
        into place, the file is replaced, and the artifacts the new entries superseded
        are deleted once no baseline file names them. Interrupted anywhere, each file
        still names artifacts that exist and match its sha256."""
        from .store import baselines_lock, merge_updates

        base_dir = self.settings.baseline_dir
        by_relpath = {str(p.final.relative_to(base_dir)): p for p in self.pending_artifacts}
        written = []
        for path, records in sorted(self.updates.items()):
            mine = [by_relpath.pop(t.artifact) for r in records.values() for t in r.timings.values()
                    if t.artifact in by_relpath]

            def place(mine=mine) -> None:
                for pending in mine:
                    artifacts.commit(pending)

            try:
                with baselines_lock(base_dir):
                    before = merge_updates(path, records, place)
                    superseded = {t.artifact for test_id in records for t in
                                  (before[test_id].timings.values() if test_id in before else ()) if t.artifact}
                    superseded -= {t.artifact for r in records.values() for t in r.timings.values() if t.artifact}
                    artifacts.delete_unnamed(superseded, base_dir, self.settings.artifact_dir, self._not_baselines())
            except (BaselineError, OSError) as exc:
                self.write_errors.append(f"baselines not written to {path} ({len(records)} test(s)): {exc}")
                self.unwritten += len(records)
                for pending in mine:
                    artifacts.discard(pending)
                continue
            written.append(path)
        for pending in by_relpath.values():  # no queued entry names it
            artifacts.discard(pending)
        self.pending_artifacts.clear()
        self.updates.clear()
        return written
