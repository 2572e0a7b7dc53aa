"""``--tvmperf-baselines-ref=origin/main``: the baseline directory as it is at a git
revision, copied into a temporary directory, so a pull request is judged against the base
branch's baselines, whatever it changes in ``baselines/`` itself. Only git's object store
is read (``git archive``), written as plain files and directories (no links, no devices).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tvmperf.store.sweep import make_owned

#: seconds one git command may take (a local repository answers in well under one)
GIT_TIMEOUT_S = 120


class RefError(ValueError):
    """The baselines cannot be read from the revision (a usage error)."""


@dataclass(frozen=True)
class RefBaselines:
    """The baseline directory of ``ref`` (commit ``commit``), copied to ``directory``;
    ``inside``: its path in the repository (``baselines``); ``found``: False when the
    revision has no such directory (no test has a baseline); ``root``: the repository's."""

    ref: str
    commit: str
    directory: Path
    inside: str
    found: bool
    root: Path
    #: the run's hold on ``directory`` (store/sweep.py ``OwnedDir``)
    owner: Any = field(compare=False, repr=False)

    def remove(self) -> None:
        self.owner.remove()

    def summary(self) -> str:
        where = f"{self.inside}/ at {self.ref} (commit {self.commit[:12]})"
        if not self.found:
            return f"baselines read from {where}: that revision has no such directory, so no test has a baseline"
        return f"baselines read from {where}, not from the work tree (--tvmperf-baselines-ref)"


def _git(root: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            text=not binary,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except FileNotFoundError:
        raise RefError("--tvmperf-baselines-ref needs git, and git is not installed (not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise RefError(
            f"--tvmperf-baselines-ref: git {' '.join(args[:2])} did not answer within {GIT_TIMEOUT_S} s"
        ) from None


def _first_line(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return next((line.strip() for line in text.splitlines() if line.strip()), "no message")


def read_baselines(ref: str, baseline_dir: Path) -> RefBaselines:
    """Copy ``baseline_dir`` as it is at ``ref`` into a new temporary directory;
    :class:`RefError` outside a git work tree, for a ``ref`` naming no commit, or when git fails."""
    baseline_dir = Path(os.path.realpath(baseline_dir))
    probe = baseline_dir
    while not probe.is_dir() and probe != probe.parent:  # the directory may not exist in the work tree
        probe = probe.parent
    top = _git(probe, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise RefError(
            f"--tvmperf-baselines-ref={ref}: the baseline directory {baseline_dir} is not inside a git "
            f"repository ({_first_line(top.stderr)})"
        )
    root = Path(os.path.realpath(top.stdout.strip()))
    try:
        inside = baseline_dir.relative_to(root).as_posix()
    except ValueError:
        raise RefError(
            f"--tvmperf-baselines-ref={ref}: the baseline directory {baseline_dir} is outside the git repository {root}"
        ) from None
    commit = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit.returncode != 0 or not commit.stdout.strip():
        raise RefError(
            f"--tvmperf-baselines-ref={ref}: no such git revision in {root} (for a branch of another "
            f"clone, fetch it first, e.g. git fetch origin main; a CI checkout may need fetch-depth: 0)"
        )
    sha = commit.stdout.strip()
    owner = make_owned("ref")
    directory = owner.path / "baselines"
    try:
        directory.mkdir(exist_ok=True)
        found = _extract(root, sha, inside, directory)
    except BaseException:
        owner.remove()
        raise
    return RefBaselines(ref, sha, directory, inside or ".", found, root, owner)


def text_at(ref: RefBaselines, path: Path) -> str | None:
    """The text of the work tree's file ``path`` at the ref's commit (None: no such file there)."""
    try:
        rel = Path(os.path.realpath(path)).relative_to(ref.root).as_posix()
    except ValueError:
        return None
    blob = _git(ref.root, "cat-file", "blob", f"{ref.commit}:{rel}", binary=True)
    return blob.stdout.decode("utf-8", "replace") if blob.returncode == 0 else None


def _extract(root: Path, sha: str, inside: str, directory: Path) -> bool:
    """Write the tree ``sha:inside`` into ``directory``; False when there is none."""
    tree = f"{sha}:{inside}" if inside else sha
    if (kind := _git(root, "cat-file", "-t", tree)).returncode != 0:
        return False
    if kind.stdout.strip() != "tree":
        raise RefError(f"--tvmperf-baselines-ref: {inside} at {sha[:12]} is a {kind.stdout.strip()}, not a directory")
    archive = _git(root, "archive", "--format=tar", tree, binary=True)
    if archive.returncode != 0:
        raise RefError(f"--tvmperf-baselines-ref: git archive failed: {_first_line(archive.stderr)}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]  # no links: only data
        tar.extractall(directory, members=members, filter="data")
    return True
