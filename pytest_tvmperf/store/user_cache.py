"""The plugin's cache directory, outside every project: builds it can make again (the
baseline's IR rebuilt for this machine, the simulated cost's pinned build) and the
environments of other TVM versions (``--tvmperf-against-tvm``).

``$TVMPERF_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-tvmperf``, else
``~/.cache/pytest-tvmperf``. Outside the repository on purpose: a pull request can
commit files into a project, never into this directory, so no planted library can
match a cache key there; and nothing in it is ever committed. Safe to delete at any
time (what is missing is built again); CI can keep it between runs (docs, "In CI").
The build cache is bounded: past ``$TVMPERF_CACHE_MAX_MB`` (default 2048) the least
recently used builds are removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Mapping

ENV_CACHE_DIR = "TVMPERF_CACHE_DIR"
ENV_MAX_MB = "TVMPERF_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048
#: a note for whoever points the cache into a repository
GITIGNORE = "# pytest-tvmperf's cache of builds it can make again: never commit it\n*\n"


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The cache directory (see the module's docstring)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE_DIR):
        return Path(env[ENV_CACHE_DIR]).expanduser()
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-tvmperf"


def max_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The build cache's bound; a value that is not a positive number is the default."""
    env = os.environ if environ is None else environ
    try:
        mb = float(env.get(ENV_MAX_MB, DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int((mb if mb > 0 else DEFAULT_MAX_MB) * 2**20)


def builds_dir(environ: Mapping[str, str] | None = None) -> Path:
    folder = cache_root(environ) / "builds"
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder.parent / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text(GITIGNORE)
    return folder


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def lookup(path: Path) -> bool:
    """Is a whole, unaltered build cached at ``path``? Its sha256 must match the one
    written beside it when it was built (a truncated or replaced file does not); a hit
    is marked used (the bound removes the least recently used first)."""
    try:
        recorded = _sidecar(path).read_text().strip()
        if not path.is_file() or sha256_of(path) != recorded:
            return False
        os.utime(path)
        return True
    except OSError:
        return False


def store(path: Path, build: Callable[[Path], None], root: Path, file_mode: int = 0o644) -> None:
    """Build into a temporary file beside ``path`` and rename it into place, with its
    sha256 beside it (written first: a library without its hash is never used), then
    trim the builds under ``root`` to the cache's bound."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    try:
        build(Path(temp))
        os.chmod(temp, file_mode)
        _write_atomic(_sidecar(path), sha256_of(Path(temp)) + "\n")
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    trim(root, max_bytes(), keep=path)


def _write_atomic(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def drop(path: Path) -> None:
    """Remove a cached build that did not work (it is built again next time)."""
    for p in (path, _sidecar(path)):
        with contextlib.suppress(OSError):
            p.unlink()


def trim(folder: Path, limit: int, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used builds under ``folder`` until they take at most
    ``limit`` bytes (never ``keep``, the build just made). Returns what was removed."""
    builds = []
    for p in folder.rglob("*"):
        if p.is_file() and not p.name.endswith((".sha256", ".tmp")) and ".tmp." not in p.name:
            with contextlib.suppress(OSError):
                st = p.stat()
                builds.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in builds)
    removed = []
    for _, size, p in sorted(builds, key=lambda b: b[0]):
        if total <= limit:
            break
        if keep is not None and p == keep:
            continue
        drop(p)
        total -= size
        removed.append(p)
    return removed
