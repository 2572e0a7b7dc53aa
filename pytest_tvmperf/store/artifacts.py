"""Compiled artifacts kept next to the baselines, so a later run can time the baseline's
own program side by side with the current one (a/b timing).

An artifact belongs to one machine fingerprint (native code for that CPU and target) and
is checked against the sha256 stored in the baseline before it is loaded. Its name ends
with its content's hash, so a file an entry names is never overwritten: a new one is
written under a temporary name, renamed into place under the baseline lock right before
the baseline file naming it is replaced, and the one it supersedes deleted once no
baseline file names it. An interrupt or crash at any point leaves every baseline file
with the artifact it names.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pytest_tvmperf.store.files import file_mode, fsync_dir, read_regular_text, temp_prefix


@dataclass(frozen=True)
class PendingArtifact:
    temp: Path
    final: Path
    sha256: str


def artifact_relpath(fingerprint: str, module_key: str, test_id: str) -> str:
    """``<fingerprint>/<module>-<hash of test id>.so``: stable and filesystem-safe (the
    content hash is added to the name when the artifact is exported)."""
    digest = hashlib.sha256(test_id.encode()).hexdigest()[:16]
    safe_module = module_key.replace("/", "__").replace("\\", "__")
    return f"{fingerprint}/{safe_module}-{digest}.so"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export_pending(compiled, final: Path, source: Path | None = None) -> PendingArtifact:
    """Export ``compiled`` (or copy the export ``source`` of it) under a temporary name
    beside ``final``; the pending artifact's final name carries its content hash."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=temp_prefix(final.stem), suffix=".tmp.so", dir=final.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, temp) if source is not None else compiled.export(temp)
        os.chmod(temp, file_mode())
        with open(temp, "rb") as f:
            os.fsync(f.fileno())
        sha = file_sha256(Path(temp))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return PendingArtifact(Path(temp), final.with_name(f"{final.stem}-{sha[:16]}{final.suffix}"), sha)


def commit(pending: PendingArtifact) -> None:
    """Rename into place (hold the baseline lock). An existing file of that name has the
    same content (the name is its hash), so replacing it changes nothing a reader sees."""
    os.replace(pending.temp, pending.final)
    fsync_dir(pending.final.parent)


def discard(pending: PendingArtifact) -> None:
    with contextlib.suppress(OSError):
        os.unlink(pending.temp)


def problem(path: Path, sha256: str | None, shown: str | None = None) -> str | None:
    """Why the artifact at ``path`` cannot be used, or None when it matches."""
    name = shown or str(path)
    if not path.exists():
        return f"baseline artifact {name} is missing (re-record with --tvmperf-update to get a/b timing)"
    if not stat.S_ISREG(path.stat().st_mode):
        return f"baseline artifact {name} is not a regular file; ignored"
    if sha256 is None or file_sha256(path) != sha256:
        return f"baseline artifact {name} does not match the baseline's sha256 (stale); ignored"
    return None


def _named(data: Any) -> Iterable[str]:
    """Every string in ``data``, and the kernel files an entry's ``ir`` names by its ``functions``
    lines (values/ir_function.py): ``<the IR file's directory>/<24 hex digits of the sha256>.json.gz``."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        functions, path = data.get("functions"), data.get("path")
        if isinstance(functions, list) and isinstance(path, str):
            folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
            for line in functions:
                if isinstance(line, str) and " " in line:
                    yield f"{folder}{line.rsplit(' ', 1)[1][:24]}.json.gz"
        for value in data.values():
            yield from _named(value)
    elif isinstance(data, list):
        for value in data:
            yield from _named(value)


def delete_unnamed(
    candidates: set[str], baseline_dir: Path, artifact_dir: Path | None, skip: Iterable[Path] = ()
) -> list[str]:
    """Delete the ``candidates`` (artifact paths relative to ``baseline_dir``) that no JSON
    file under ``baseline_dir`` names any more (hold the baseline lock): a candidate is kept
    when an entry names it (a kernel file by its ``ir.functions`` line), or the text of a file
    that cannot be parsed holds it; a file that cannot be read at all keeps every candidate.
    Only files inside ``artifact_dir`` are ever deleted. Returns them."""
    if artifact_dir is None or not candidates:
        return []
    root = artifact_dir.resolve()
    inside = {c for c in candidates if root in (baseline_dir / c).resolve().parents}
    skip = [Path(p).resolve() for p in skip]
    named: set[str] = set()
    for path in sorted(baseline_dir.rglob("*.json")) if baseline_dir.is_dir() else []:
        resolved = path.resolve()
        if any(resolved == s or s in resolved.parents for s in skip):
            continue
        try:
            text = read_regular_text(path)
        except (OSError, UnicodeDecodeError):
            return []
        try:
            named |= inside & set(_named(json.loads(text)))
        except (ValueError, RecursionError):  # kept where its name or its content hash appears at all
            stems = {c: c.rsplit("/", 1)[-1].split(".", 1)[0] for c in inside}
            named |= {c for c in inside if c in text or json.dumps(c)[1:-1] in text or stems[c] in text}
    deleted = []
    for rel in sorted(inside - named):
        with contextlib.suppress(FileNotFoundError):
            (baseline_dir / rel).unlink()
            deleted.append(rel)
    return deleted
