"""The baseline's stored IR rebuilt for this machine (code generation only: no pipeline
runs again), and the compiled library kept in the plugin's cache,
``<cache>/builds/ab/<machine fingerprint>/<executor>-<IR sha256>.so`` (store/user_cache.py:
outside every project, so nothing a pull request commits can stand in for a build;
written whole or not at all, bounded in size). A cached library is only a shortcut:
whatever is wrong with it (its hash, it fails to load or crashes the child), it is
deleted and rebuilt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from pytest_tvmperf.builder.executors import _quiet_native_stderr
from pytest_tvmperf.builder.targets import _plain
from pytest_tvmperf.store import user_cache
from pytest_tvmperf.store.disk import room_problem
from pytest_tvmperf.store.files import file_mode
from pytest_tvmperf.store.lowered_ir import IRLoadError
from pytest_tvmperf.values.executor_rows import is_prim


def lowered_module(compiled: Any) -> Any | None:
    """The module a compiled program was generated from: a Relax module after its
    pipeline (``relax.build(..., relax_pipeline=None)`` takes it), or a scheduled
    PrimFunc module (``tvm.compile`` takes it). None for a loaded library."""
    compiled = getattr(compiled, "local", None) or compiled  # an RPC device's program: its host build
    module = getattr(compiled, "lowered", None)
    return module if module is not None else getattr(compiled, "program", None)


def generate(module: Any, executor: str, target: Any) -> Any:
    """The library for ``module`` on ``target``, in memory (what compile_s times side by side)."""
    import tvm
    from tvm import relax

    tvm_target = target.tvm_target()
    if is_prim(executor):
        return tvm.compile(module, target=tvm_target)
    return relax.build(module, tvm_target, relax_pipeline=None, exec_mode=executor.removeprefix("vm-"))


def build_library(module: Any, executor: str, target: Any, path: Path) -> None:
    """Generate code for ``module`` on ``target`` (a TargetSpec) and export it to ``path``."""
    lib = generate(module, executor, target)
    with _quiet_native_stderr():
        lib.export_library(str(path))


class RebuildError(Exception):
    """The stored IR could not be built here: code generation failed, crashed or timed out."""


def build_in_child(sandbox: Any, ir_path: Path, executor: str, target: Any, ref: Any = None) -> Callable[[Path], None]:
    """A builder for :func:`cached_library` that rebuilds the IR file in the session's
    child process, bounded by ``--tvmperf-child-timeout``: a stored IR is data, and one
    that takes minutes to build (or crashes TVM) must not hold or end the session.
    ``ref``: the entry's IRRef (weights stored apart). Raises IRLoadError or RebuildError."""

    def build(temp: Path) -> None:
        weights = ref.as_json() if ref is not None else None
        reply = sandbox.build(ir_path, executor, _plain(dict(target.config)), target.device_type, temp, weights)
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
    """The compiled library of the IR with ``ir_sha256`` for this host, and whether it came
    from the cache; else (``fresh``: always) built by ``builder(path)``
    (:func:`build_in_child`) or here from ``load_module()``, and cached."""
    path = user_cache.builds_dir() / "ab" / fingerprint / f"{executor}-{ir_sha256[:32]}.so"
    if not fresh and user_cache.lookup(path):
        return path, True
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
