"""The baseline files of one run: read once and cached, updates queued and written at
the end (atomically, with their artifacts), unused entries found and pruned on request."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pytest_tvmperf.store import artifacts
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.store.files import BaselineError, baselines_lock, load_baselines
from pytest_tvmperf.store.files import keeps, merge_updates, module_of, remove_entries, stored_form, write_advice
from pytest_tvmperf.store.links import symlink_problem
from pytest_tvmperf.store.locks import LockError, LockTimeout
from pytest_tvmperf.values.node_ids import RefView, display_path
from pytest_tvmperf.values.remote_names import local_test_id


@dataclass
class BaselineStore:
    settings: Settings
    rootpath: Path
    #: problems writing files, shared with the run (each fails the run)
    write_errors: list[str] = field(default_factory=list)
    #: queued updates that could not be written (their file is named in write_errors)
    unwritten: int = 0
    #: queued updates whose old entry was kept as it was (nothing the gate judges changed)
    kept: int = 0
    updates: dict[Path, dict[str, Record]] = field(default_factory=dict)
    pending_artifacts: list[artifacts.PendingArtifact] = field(default_factory=list)
    #: the test ids each baseline file's collected tests can write (for unused entries)
    collected: dict[Path, set[str]] = field(default_factory=dict)
    #: -k, -m, node ids or deselection: unused entries are not listed
    partial_run: bool = False
    unused: dict[Path, list[str]] = field(default_factory=dict)
    pruned: list[str] = field(default_factory=list)
    #: the baseline files flush_updates has replaced so far
    written: list[Path] = field(default_factory=list)
    #: Ctrl-C came while the baselines were written (see :meth:`stop_writing`)
    interrupted: bool = False
    #: artifact files (IR, compiled libraries) that no entry named, removed by --tvmperf-prune
    orphans_pruned: list[str] = field(default_factory=list)
    _baselines: dict[Path, dict[str, Record] | BaselineError] = field(default_factory=dict)
    #: --tvmperf-baselines-ref: how the files of the revision's copy are named
    ref_view: RefView | None = None
    #: writes one line to the terminal (outside pytest's capture): the wait for a busy lock
    notify: Callable[[str], None] | None = None

    def lock(self):
        """The baseline directory's lock, bounded by --tvmperf-lock-timeout."""
        return baselines_lock(self.settings.baseline_dir, float(self.settings.lock_timeout), self.say)

    def say(self, line: str) -> None:
        if self.notify is not None:
            self.notify(line)
        else:
            print(line, file=sys.stderr, flush=True)

    def baselines(self, path: Path) -> dict[str, Record]:
        """Records of one baseline file, read once per run; raises BaselineError."""
        if path not in self._baselines:
            try:
                self._baselines[path] = load_baselines(path)
            except BaselineError as exc:  # a git revision's copy: named as that revision's file
                shown = display_path(path, self.rootpath, self.ref_view)
                if shown != display_path(path, self.rootpath):
                    exc = BaselineError(str(exc).replace(str(path), shown))
                self._baselines[path] = exc
        cached = self._baselines[path]
        if isinstance(cached, BaselineError):
            raise cached
        return cached

    def queue_update(self, path: Path, test_id: str, record: Record) -> None:
        self.updates.setdefault(path, {})[test_id] = record

    def queue_artifact(self, pending: artifacts.PendingArtifact) -> None:
        self.pending_artifacts.append(pending)

    def discard_pending(self) -> None:
        for pending in self.pending_artifacts:
            artifacts.discard(pending)
        self.pending_artifacts.clear()
        self.updates.clear()

    def would_keep(self, path: Path, test_id: str, record: Record) -> bool:
        """Will the update of ``test_id`` with ``record`` keep its entry in ``path`` as it is
        (store/files.py ``keeps``; never with --tvmperf-retime), as the file read this run says."""
        if self.settings.retime:
            return False
        try:
            old = self.baselines(path).get(test_id)
        except BaselineError:
            return False
        return keeps(old, stored_form(record, old), self._intact)

    def _intact(self, record: Record) -> bool:
        """Every artifact ``record`` names is in place and matches its sha256 (a kept entry
        must name files that exist: else it is rewritten with this run's)."""
        base_dir = self.settings.baseline_dir
        return all(artifacts.problem(base_dir / rel, sha) is None for rel, sha in _files_with_sha(record))

    def flush_updates(self) -> None:
        """Write queued baselines (once, at session end): per file, under the lock, read
        and check it, put the new entries' artifacts in place, replace it, and delete the
        superseded artifacts no file names. Interrupted anywhere, each file still names
        artifacts that exist and match its sha256."""
        base_dir = self.settings.baseline_dir
        # pending files by the path an entry will name; an IR file is named by its content,
        # so entries of several files (vm-bytecode and vm-compiled) may name the same one
        by_relpath: dict[str, list[artifacts.PendingArtifact]] = {}
        for p in self.pending_artifacts:
            by_relpath.setdefault(str(p.final.relative_to(base_dir)), []).append(p)
        for path, records in sorted(self.updates.items()):
            named = sorted(set(_named_files(records.values())))
            mine = [by_relpath[rel].pop() for rel in named if by_relpath.get(rel)]

            def place(mine=mine) -> None:
                for pending in mine:
                    artifacts.commit(pending)

            try:
                with self.lock():
                    if (linked := symlink_problem(base_dir)) is not None:  # made during the run: never written through
                        raise BaselineError(linked)
                    merged = merge_updates(
                        path, records, place, keep_unchanged=not self.settings.retime, intact=self._intact
                    )
                    self.written.append(path)
                    self.kept += len(merged.kept)
                    if not merged.written:  # every entry kept: this run's copies of its artifacts go
                        for pending in mine:
                            artifacts.discard(pending)
                    before = merged.before
                    superseded = set(_named_files(before[t] for t in records if t in before)) - set(named)
                    artifacts.delete_unnamed(superseded, base_dir, self.settings.artifact_dir, self._not_baselines())
            except (BaselineError, LockError, OSError) as exc:
                self.write_errors.append(
                    f"baselines not written to {path} ({len(records)} test(s)): {lock_error_text(exc)}"
                )
                self.unwritten += len(records)
                for pending in mine:  # another file's entries may name the same IR
                    by_relpath.setdefault(str(pending.final.relative_to(base_dir)), []).append(pending)
        # the rest: no queued entry names them (or another copy was committed)
        self.pending_artifacts = [p for left in by_relpath.values() for p in left]
        self.discard_pending()

    def stop_writing(self) -> None:
        """After Ctrl-C inside :meth:`flush_updates` or a prune: remove this run's temporary
        files and say which files were written (each is whole; an artifact put in place for
        a file not written is named by no entry: --tvmperf-prune removes it)."""
        self.interrupted = True
        left = {path: records for path, records in self.updates.items() if path not in self.written}
        self.unwritten += sum(len(records) for records in left.values())
        self.discard_pending()

        def names(paths) -> str:
            shown = [display_path(p, self.rootpath, self.ref_view) for p in paths]
            return ", ".join(shown) or "none"

        self.write_errors.append(
            f"interrupted (Ctrl-C) while writing the baselines: written: {names(self.written)}; not written: "
            f"{names(sorted(left))}. Each file is whole, as it was before or as this run recorded it; run the "
            f"update again to record the rest"
        )

    def _baseline_files(self) -> list[Path]:
        """The baseline directory's JSON files, sorted, its artifacts' directory left out."""
        base_dir, artifact_dir = self.settings.baseline_dir, self.settings.artifact_dir
        found = sorted(base_dir.rglob("*.json")) if base_dir.is_dir() else []
        return [p for p in found if artifact_dir is None or artifact_dir not in p.parents]

    def find_unused(self) -> dict[Path, list[str]]:
        """Baseline entries no collected test uses: in the files of collected modules,
        and every entry of files whose test module no longer exists. A partial run
        (-k, -m, node ids, deselection) reports nothing."""
        if self.partial_run:
            return {}
        unused: dict[Path, list[str]] = {}
        base_dir = self.settings.baseline_dir
        for path in self._baseline_files():
            module_gone = not module_of(path, base_dir, self.rootpath).exists()
            if path not in self.collected and not module_gone:
                continue
            try:
                records = self.baselines(path)
            except BaselineError:
                continue
            used = self.collected.get(path, set())  # a remote device's entry: any key the test may run on
            if names := sorted(n for n in records if n not in used and local_test_id(n) not in used):
                unused[path] = names
        return unused

    def not_judged(self, judged: dict[Path, set[str]]) -> dict[Path, list[str]]:
        """Every entry of every baseline file (the ref's copy under ``--tvmperf-baselines-ref``)
        that no test of this run judged: ``judged`` maps a baseline file to the test ids that
        have a result. Unlike :meth:`find_unused` it reads a partial run too (a ``--deselect`` in
        the pull request's addopts, a changed ``testpaths``): these entries were not gated."""
        out: dict[Path, list[str]] = {}
        for path in self._baseline_files():
            if path.is_symlink():
                continue
            try:
                records = self.baselines(path)
            except BaselineError:
                continue
            if names := sorted(n for n in records if n not in judged.get(path, set())):
                out[path] = names
        return out

    def prune(self, unused: dict[Path, list[str]]) -> None:
        """Remove unused entries (``--tvmperf-update --tvmperf-prune``), then their
        artifacts that no entry of any baseline file names any more."""
        base_dir = self.settings.baseline_dir
        candidates: set[str] = set()
        for path, names in unused.items():
            with self.lock():
                candidates.update(_named_files(remove_entries(path, set(names))))
            self.pruned.extend(f"{display_path(path, self.rootpath)}::{n}" for n in names)
        with self.lock():
            artifacts.delete_unnamed(candidates, base_dir, self.settings.artifact_dir, self._not_baselines())

    def prune_orphans(self) -> None:
        """Remove the artifact files no baseline entry names (left by a run killed before it
        replaced the baseline file, or by a hand edit; ``--tvmperf-update --tvmperf-prune``).
        A live writer's temporary files are not candidates."""
        base_dir, artifact_dir = self.settings.baseline_dir, self.settings.artifact_dir
        if artifact_dir is None or not artifact_dir.is_dir():
            return
        with self.lock():
            candidates = {
                str(p.relative_to(base_dir))
                for p in artifact_dir.rglob("*")
                if not p.name.startswith(".")
                and p.name.endswith((".json.gz", ".so"))
                and p.is_file()
                and not p.is_symlink()
            }
            self.orphans_pruned = artifacts.delete_unnamed(candidates, base_dir, artifact_dir, self._not_baselines())

    def _not_baselines(self) -> list[Path]:
        """Directories under the baseline directory that hold no baseline files."""
        return [p for p in (self.settings.artifact_dir, self.settings.tuning_db) if p is not None]


def lock_error_text(exc: Exception) -> str:
    """A write error's text; a lock still held after the bound says what to do."""
    if isinstance(exc, OSError) and exc.errno is not None:
        where = exc.filename if isinstance(exc.filename, str) else "the baseline directory"
        return f"{exc.strerror or exc}: {write_advice(exc, where)}"
    if not isinstance(exc, LockTimeout):
        return str(exc)
    kill = f"end it (kill {exc.holder.pid}) if it is stopped or hung, " if exc.holder is not None else ""
    return (
        f"waited {exc.timeout_s:g} s (--tvmperf-lock-timeout) for the baselines lock: {exc}; {kill}"
        f"or wait for it to finish, then run the update again (or give a larger --tvmperf-lock-timeout)"
    )


def _files_with_sha(record: Record) -> list[tuple[str, str | None]]:
    """The files (relative to the baseline directory) ``record`` names, each with the sha256
    it records for it."""
    out: list[tuple[str, str | None]] = [(t.artifact, t.artifact_sha256) for t in record.timings.values() if t.artifact]
    if record.ir is not None:
        out.append((record.ir.path, record.ir.sha256))
        out.extend((w.path, w.sha256) for w in record.ir.weights)
        out.extend((f.path(record.ir.path), f.sha256) for f in record.ir.functions)
    return out


def _named_files(records) -> list[str]:
    """The files (relative to the baseline directory) the records name: compiled
    artifacts of their timings, and their IR."""
    return [rel for record in records for rel, _ in _files_with_sha(record)]
