"""The plugin's cache directory, outside every project: builds it can make again (the
baseline's IR rebuilt for this machine, the simulated cost's pinned build) and the
environments of other TVM versions (``--tvmperf-against-tvm``).

``$TVMPERF_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-tvmperf``, else ``~/.cache/pytest-tvmperf``.
Outside the repository on purpose: a pull request can commit files into a project, never
into this directory, so no planted library can match a cache key there. Safe to delete at
any time; CI can keep it between runs (docs, "In CI"). Past ``$TVMPERF_CACHE_MAX_MB``
(default 2048) the least recently used builds are removed.

On a shared runner another user or job may write here, so a cached build is used only when
(docs/ci.md, "Threat model") every directory from the cache down to it is this user's and
not writable by group or others (as ssh checks ``~/.ssh``), and the seal beside it, an
HMAC-SHA256 of the library's bytes under a key kept outside the cache (``$TVMPERF_CACHE_KEY``,
else a 0600 file in the user's config directory, made on first use), matches: a writer
who cannot read that key cannot make a library pass. Otherwise the build is made again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Callable, Mapping

ENV_CACHE_DIR = "TVMPERF_CACHE_DIR"
#: the cache's key as a secret (CI: a repository secret, which forks' pull requests do not get)
ENV_CACHE_KEY = "TVMPERF_CACHE_KEY"
#: the key file's name in the user's config directory
KEY_FILE = "cache-key"
SEAL = "hmac-sha256:"
ENV_MAX_MB = "TVMPERF_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048
#: a note for whoever points the cache into a repository
GITIGNORE = "# pytest-tvmperf's cache of builds it can make again: never commit it\n*\n"


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE_DIR):
        return Path(env[ENV_CACHE_DIR]).expanduser()
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-tvmperf"


def max_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The build cache's bound; a value that is not a positive finite number is the
    default (a run refuses such a value at its start: store/inflate.check_size_variables)."""
    env = os.environ if environ is None else environ
    try:
        mb = float(env.get(ENV_MAX_MB, DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int((mb if math.isfinite(mb) and mb > 0 else DEFAULT_MAX_MB) * 2**20)


def root_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the cache directory cannot be made here (a read-only or missing home, as in
    many CI containers), or None when it can (or is unsafe: :func:`cache_problem`)."""
    root = cache_root(environ)
    try:
        _private_dirs(root, root)
    except UnsafeCache:
        return None
    except OSError as exc:
        return f"the cache directory {root} cannot be made ({type(exc).__name__}: {exc.strerror or exc})"
    return None


class UnsafeCache(Exception):
    """The cache directory (or one below it) can be written by someone else."""


def dir_problem(path: Path) -> str | None:
    """Why a directory of the cache cannot be trusted (a link, another user's, writable by
    group or others), with the fix; None when it is this user's own or does not exist."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # missing (a file where a directory above it should be)
        return None
    except OSError as exc:
        return f"the cache directory {path} cannot be checked ({exc.strerror or exc})"
    fix = (
        f"set ${ENV_CACHE_DIR} to a directory of your own (e.g. mkdir -m 700 ~/.cache/pytest-tvmperf), "
        f"or remove {path} so that it is made again"
    )
    if stat.S_ISLNK(st.st_mode):
        return f"the cache directory {path} is a symbolic link; {fix}"
    if not stat.S_ISDIR(st.st_mode):
        return f"the cache directory {path} is not a directory; {fix}"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return (
            f"the cache directory {path} belongs to another user (uid {st.st_uid}), who could plant a "
            f"library there; {fix}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"the cache directory {path} is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'} "
            f"(mode {stat.S_IMODE(st.st_mode):o}), who could plant a library there; run chmod go-w {path}, or {fix}"
        )
    return None


def cache_problem(environ: Mapping[str, str] | None = None) -> str | None:
    return dir_problem(cache_root(environ))


def _private_dirs(folder: Path, root: Path) -> None:
    """Make ``folder`` (below ``root``, or ``root`` itself) and its missing parents up to
    ``root`` with mode 0700, whatever the umask; raise UnsafeCache when one of them, made
    now or before, is not this user's own."""
    chain = [folder, *[p for p in folder.parents if p == root or root in p.parents]]
    chain[-1].parent.mkdir(parents=True, exist_ok=True)  # above the cache: the user's own (~/.cache)
    for directory in reversed(chain):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
            os.chmod(directory, 0o700)
        if (problem := dir_problem(directory)) is not None:
            raise UnsafeCache(problem)


def cache_key(environ: Mapping[str, str] | None = None) -> bytes:
    """The seals' key: ``$TVMPERF_CACHE_KEY``, else the key file in the user's config
    directory (``$XDG_CONFIG_HOME`` or ``~/.config``, made 0600 on first use). Where neither
    can be had safely, a random key of this process: the cache misses, never trusted blindly."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE_KEY):
        return env[ENV_CACHE_KEY].encode()
    config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = Path(config) / "pytest-tvmperf" / KEY_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd) as f:
            st = os.fstat(f.fileno())
            if (hasattr(os, "getuid") and st.st_uid != os.getuid()) or st.st_mode & 0o077:
                return secrets.token_bytes(32)
            key = f.read().strip()
    except OSError:
        return secrets.token_bytes(32)
    return key.encode() if len(key) >= 32 else secrets.token_bytes(32)


def seal_of(path: Path, key: bytes) -> str:
    """``hmac-sha256:<hex>`` of the file's bytes under ``key``."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            mac.update(block)
    return SEAL + mac.hexdigest()


def builds_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The builds' directory, made private (0700) if missing; raises UnsafeCache when the
    cache directory or it belongs to someone else or is writable by others."""
    root = cache_root(environ)
    _private_dirs(root / "builds", root)
    if not (ignore := root / ".gitignore").exists():
        with contextlib.suppress(OSError):
            ignore.write_text(GITIGNORE)
    return root / "builds"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def lookup(path: Path, root: Path | None = None) -> bool:
    """Is a whole build this user made cached at ``path``? Every directory from ``root``
    (default: the cache directory) down to it must be this user's own, and its seal must
    match the file under the cache's key (a truncated, replaced or planted file does not);
    a hit is marked used (the bound removes the least recently used first)."""
    root = cache_root() if root is None else root
    chain = [p for p in path.parents if p == root or root in p.parents] or [path.parent]
    if any(dir_problem(d) is not None for d in chain):
        return False
    try:
        recorded = _sidecar(path).read_text().strip()
        if path.is_symlink() or not path.is_file() or not hmac.compare_digest(seal_of(path, cache_key()), recorded):
            return False
        os.utime(path)
        return True
    except OSError:
        return False


def store(
    path: Path, build: Callable[[Path], None], root: Path, file_mode: int = 0o644, trim_root: Path | None = None
) -> None:
    """Build into a temporary file beside ``path`` and rename it into place, its seal
    written first (a library without its seal is never used), then trim the builds under
    ``trim_root`` (default ``root``) to the bound. Every directory from ``root`` down is
    made private (0700); UnsafeCache when one is not this user's own."""
    _private_dirs(path.parent, root)
    fd, temp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    try:
        build(Path(temp))
        os.chmod(temp, file_mode)
        _write_atomic(_sidecar(path), seal_of(Path(temp), cache_key()) + "\n")
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    trim(trim_root or root, max_bytes(), keep=path)


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


def trim(folder: Path, limit: int, keep: Path) -> None:
    """Remove the least recently used builds under ``folder`` until they take at most
    ``limit`` bytes (never ``keep``, the build just made)."""
    builds = []
    for p in folder.rglob("*"):
        if p.is_file() and not p.name.endswith((".sha256", ".tmp")) and ".tmp." not in p.name:
            with contextlib.suppress(OSError):
                st = p.stat()
                builds.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in builds)
    for _, size, p in sorted(builds, key=lambda b: b[0]):
        if total <= limit:
            break
        if p != keep:
            drop(p)
            total -= size
