"""The baseline's stored IR rebuilt for this machine (code generation only: no Relax or
TIR pipeline runs again), and the compiled library kept in the plugin's cache.

The cache is ``<cache>/builds/ab/<machine fingerprint>/<executor>-<IR sha256>.so``
(``<cache>``: store/user_cache.py, outside every project, so nothing a pull request
commits can stand in for a build): keyed by the IR's hash and the host (CPU, cores,
threads, TVM and LLVM versions, full target), with the library's own sha256 beside it.
Written under a temporary name and renamed into place, so a reader sees a whole
library or none, and bounded in size. A cached library is only a shortcut: whatever is
wrong with it (its hash does not match, it fails to load, crashes the child that runs
it first), it is deleted and rebuilt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from pytest_tvmperf.store import user_cache
from pytest_tvmperf.store.files import file_mode


def lowered_module(compiled: Any) -> Any | None:
    """The module a compiled program was generated from: a Relax module after its
    pipeline (``relax.build(..., relax_pipeline=None)`` takes it), or a scheduled
    PrimFunc module (``tvm.compile`` takes it). None for a loaded library."""
    compiled = getattr(compiled, "local", None) or compiled  # an RPC device's program: its host build
    module = getattr(compiled, "lowered", None)
    return module if module is not None else getattr(compiled, "program", None)


def generate(module: Any, executor: str, target: Any) -> Any:
    """Generate code for ``module`` on ``target`` (a TargetSpec): the library in memory
    (what compile_s times side by side, check/compile_gate.py)."""
    import tvm
    from tvm import relax

    tvm_target = target.tvm_target()
    if executor == "prim":
        return tvm.compile(module, target=tvm_target)
    return relax.build(module, tvm_target, relax_pipeline=None, exec_mode=executor.removeprefix("vm-"))


def build_library(module: Any, executor: str, target: Any, path: Path) -> None:
    """Generate code for ``module`` on ``target`` (a TargetSpec) and export it to ``path``."""
    from pytest_tvmperf.builder.executors import _quiet_native_stderr

    lib = generate(module, executor, target)
    with _quiet_native_stderr():
        lib.export_library(str(path))


def cache_path(fingerprint: str, executor: str, ir_sha256: str) -> Path:
    return user_cache.builds_dir() / "ab" / fingerprint / f"{executor}-{ir_sha256[:32]}.so"


class RebuildError(Exception):
    """The stored IR could not be built here: code generation failed, or the build
    crashed or ran past its time in the child process."""


def build_in_child(sandbox: Any, ir_path: Path, executor: str, target: Any, ref: Any = None) -> Callable[[Path], None]:
    """A builder for :func:`cached_library` that rebuilds the IR file in the session's
    child process (sandbox/child.py), bounded by ``--tvmperf-child-timeout``: a stored
    IR is data, and one that takes minutes to build (or crashes TVM) must not hold or end
    the session. ``ref`` (the entry's IRRef) names the weights stored apart from the IR,
    put back in the child. Raises IRLoadError (this TVM cannot read it) or RebuildError."""
    from pytest_tvmperf.builder.targets import _plain
    from pytest_tvmperf.store.lowered_ir import IRLoadError

    def build(temp: Path) -> None:
        reply = sandbox.build(
            ir_path,
            executor,
            _plain(dict(target.config)),
            target.device_type,
            temp,
            ref.as_json() if ref is not None else None,
        )
        if "load_error" in reply:
            raise IRLoadError(reply["load_error"])
        if not reply.get("ok"):
            raise RebuildError(reply.get("error") or f"the build {reply.get('crash')}")

    return build


def cached_library(
    fingerprint: str,
    executor: str,
    ir_sha256: str,
    load_module,
    target: Any,
    fresh: bool = False,
    builder: Callable[[Path], None] | None = None,
) -> tuple[Path, bool]:
    """The compiled library of the IR with ``ir_sha256`` for this host: from the cache
    (whole and unaltered), or built now and cached (``fresh``: always built): by
    ``builder(path)`` (:func:`build_in_child`), else here from ``load_module()``.
    Returns the path and whether it came from the cache. Raises what the load or the
    build raises."""
    path = cache_path(fingerprint, executor, ir_sha256)
    if not fresh and user_cache.lookup(path):
        return path, True
    from pytest_tvmperf.store.disk import room_problem

    no_room = room_problem(path.parent.parent)  # LLVM ends the process on a failed write: checked first
    if no_room is not None:
        raise OSError(no_room)
    if builder is None:
        module = load_module()
        builder = lambda temp: build_library(module, executor, target, temp)  # noqa: E731
    user_cache.store(path, builder, user_cache.builds_dir(), file_mode())
    return path, False


def drop(path: Path) -> None:
    """Remove a cached library that did not work (it is rebuilt next time)."""
    user_cache.drop(path)
