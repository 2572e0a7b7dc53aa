"""What compiling and checking a workload (prepare.py) asks of the run it is part of:
the :class:`BuildContext` protocol. The run's session (session.py's ``TvmperfSession``)
satisfies it as it is; the builder, below the session, names only this."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ContextManager, Protocol, Sequence

from pytest_tvmperf.builder.targets import TargetSpec
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.values.run_notes import Note


class ChildCrash(Protocol):
    """How the isolation child died running an artifact (sandbox/child.py's ``ChildCrash``)."""

    @property
    def what(self) -> str: ...
    @property
    def how(self) -> str: ...
    @property
    def stderr(self) -> str: ...


class ChildRunner(Protocol):
    """The isolation child (sandbox/child.py's ``Sandbox``): runs an exported artifact
    once in another process; None when it ran, else how it crashed."""

    def run(
        self,
        artifact: Path,
        executor: str,
        entry: str,
        device_type: str,
        args: Sequence[Any],
        out_specs: Sequence[tuple[Sequence[int], str]],
    ) -> ChildCrash | None: ...


class RunNotes(Protocol):
    """The run's report (result/run_report.py's ``RunReport``), as far as building adds
    to it: one note at a time (values/run_notes.py says the kinds)."""

    def note(self, line: str, kind: Note = ...) -> None: ...


class BuildContext(Protocol):
    """The run a :class:`~pytest_tvmperf.builder.prepare.Preparer` compiles for: its
    settings and targets, scratch directory, isolation child and timing lock, the accept
    command it prints, and the tuning it claims once per run."""

    @property
    def settings(self) -> Settings: ...
    @property
    def rootpath(self) -> Path: ...
    @property
    def report(self) -> RunNotes: ...

    def target(self, name: str) -> TargetSpec: ...
    def timing_lock(self, target: str | None = None) -> ContextManager[None]: ...
    def scratch_dir(self) -> Path: ...
    def shown(self, path: Path) -> str: ...
    def sandbox(self) -> ChildRunner: ...
    def accept_command(self, nodeid: str | None, first: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> str: ...
    def claim_tuning(self, key: tuple[str, str, str]) -> bool: ...
    def release_device(self, name: str) -> None: ...
