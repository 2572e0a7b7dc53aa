"""Compiled artifacts kept next to the baselines, so a later run can time the
baseline's own program side by side with the current one (a/b timing).

An artifact belongs to one machine fingerprint (it is native code for that CPU and
target) and is checked against the sha256 stored in the baseline before it is loaded.
New artifacts are written to a temporary name and renamed at session end, with the
baseline file, so an interrupted run leaves the old ones in place.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PendingArtifact:
    temp: Path
    final: Path
    sha256: str


def artifact_relpath(fingerprint: str, module_key: str, test_id: str) -> str:
    """``<fingerprint>/<module>-<hash of test id>.so``: stable and filesystem-safe."""
    digest = hashlib.sha256(test_id.encode()).hexdigest()[:16]
    safe_module = module_key.replace("/", "__").replace("\\", "__")
    return f"{fingerprint}/{safe_module}-{digest}.so"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export_pending(compiled, final: Path) -> PendingArtifact:
    """Export ``compiled`` under a temporary name beside ``final``."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{final.stem}.", suffix=".tmp.so", dir=final.parent)
    os.close(fd)
    compiled.export(temp)
    return PendingArtifact(Path(temp), final, file_sha256(Path(temp)))


def commit(pending: PendingArtifact) -> None:
    os.replace(pending.temp, pending.final)


def discard(pending: PendingArtifact) -> None:
    try:
        os.unlink(pending.temp)
    except OSError:
        pass


def verified(path: Path, sha256: str | None, shown: str | None = None) -> str | None:
    """Why the artifact at ``path`` cannot be used, or None when it matches."""
    name = shown or str(path)
    if not path.exists():
        return f"baseline artifact {name} is missing (re-record with --tvmperf-update to get a/b timing)"
    if sha256 is None or file_sha256(path) != sha256:
        return f"baseline artifact {name} does not match the baseline's sha256 (stale); ignored"
    return None
