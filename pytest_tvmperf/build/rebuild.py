"""The baseline's stored IR rebuilt for this machine (code generation only: no Relax or
TIR pipeline runs again), and the compiled library kept in a local cache.

The cache is ``<rootdir>/.tvmperf-cache/ab/<machine fingerprint>/<executor>-<IR
sha256>.so``: keyed by the IR's hash and the host (CPU, cores, threads, TVM and LLVM
versions, full target), never committed (the directory holds a ``.gitignore`` of
``*``). Written under a temporary name and renamed into place, so a reader sees a
whole library or none. A cached library is only a shortcut: whatever is wrong with it
(it fails to load, crashes the child that runs it first), it is deleted and rebuilt.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from pytest_tvmperf.store.files import file_mode, temp_prefix

CACHE_DIR = ".tvmperf-cache"
GITIGNORE = "# pytest-tvmperf's local cache of baselines rebuilt from their IR: never commit it\n*\n"


def lowered_module(compiled: Any) -> Any | None:
    """The module a compiled program was generated from: a Relax module after its
    pipeline (``relax.build(..., relax_pipeline=None)`` takes it), or a scheduled
    PrimFunc module (``tvm.compile`` takes it). None for a loaded library."""
    compiled = getattr(compiled, "local", None) or compiled  # an RPC device's program: its host build
    module = getattr(compiled, "lowered", None)
    return module if module is not None else getattr(compiled, "program", None)


def build_library(module: Any, executor: str, target: Any, path: Path) -> None:
    """Generate code for ``module`` on ``target`` (a TargetSpec) and export it to ``path``."""
    import tvm
    from tvm import relax

    from pytest_tvmperf.build.executors import _quiet_native_stderr

    tvm_target = target.tvm_target()
    if executor == "prim":
        lib = tvm.compile(module, target=tvm_target)
    else:
        lib = relax.build(module, tvm_target, relax_pipeline=None, exec_mode=executor.removeprefix("vm-"))
    with _quiet_native_stderr():
        lib.export_library(str(path))


def cache_path(root: Path, fingerprint: str, executor: str, ir_sha256: str) -> Path:
    return root / CACHE_DIR / "ab" / fingerprint / f"{executor}-{ir_sha256[:32]}.so"


def _ensure_gitignore(root: Path) -> None:
    cache = root / CACHE_DIR
    ignore = cache / ".gitignore"
    if not ignore.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            ignore.write_text(GITIGNORE)


def cached_library(root: Path, fingerprint: str, executor: str, ir_sha256: str, load_module,
                   target: Any, fresh: bool = False) -> tuple[Path, bool]:
    """The compiled library of the IR with ``ir_sha256`` for this host: from the cache,
    or built now from ``load_module()`` and cached (``fresh``: always built). Returns
    the path and whether it came from the cache. Raises what the load or the build
    raises."""
    path = cache_path(root, fingerprint, executor, ir_sha256)
    if not fresh and path.is_file():
        return path, True
    module = load_module()
    _ensure_gitignore(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=temp_prefix(path.stem), suffix=".tmp.so", dir=path.parent)
    os.close(fd)
    try:
        build_library(module, executor, target, Path(temp))
        os.chmod(temp, file_mode())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return path, False


def drop(path: Path) -> None:
    """Remove a cached library that did not work (it is rebuilt next time)."""
    with contextlib.suppress(OSError):
        path.unlink()
