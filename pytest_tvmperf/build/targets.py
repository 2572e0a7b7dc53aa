"""Target names -> full TVM target dicts, and whether this machine can run them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from pytest_tvmperf.report.workers import NOT_SCALAR, builtin_scalar


@dataclass(frozen=True)
class TargetSpec:
    """A resolved target: the short name in test ids and the full dict given to TVM."""

    name: str
    config: Mapping[str, Any]
    skip_reason: str | None = None
    #: the RPC device it runs on (build/remote.py), None for this machine
    remote: Any = None

    def tvm_target(self):
        import tvm

        return tvm.target.Target(dict(self.config))

    def device(self):
        import tvm

        return tvm.cuda(0) if self.name == "cuda" else tvm.cpu(0)

    def as_json(self) -> dict[str, Any]:
        """The full target, as stored in baselines (tuples become lists)."""
        return _plain(self.tvm_target().export())


def _plain(value: Any) -> Any:
    """TVM containers (Map, Array) and scalars -> plain Python dicts, lists and
    builtin scalars. TVM hands back subclasses such as ``tvm_ffi.core.String`` (on
    some CPUs the detected ``mcpu`` is one) which pickle and pytest-xdist's execnet
    cannot send, so every scalar is rebuilt as its builtin type."""
    scalar = builtin_scalar(value)
    if scalar is not NOT_SCALAR:
        return scalar
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return str(value)


def host_llvm_config() -> dict[str, Any]:
    """The host CPU as an llvm target: plain 'llvm' is generic x86-64 and runs rgb2yuv
    4x slower than with the host mcpu."""
    import tvm

    return {"kind": "llvm", "mcpu": str(tvm.target.codegen.llvm_get_system_cpu()), "num-cores": os.cpu_count() or 1}


def resolve_target(name: str) -> TargetSpec:
    import tvm

    if name == "llvm":
        return TargetSpec(name, host_llvm_config())
    if name == "cuda":
        dev = tvm.cuda(0)
        if not dev.exist:
            return TargetSpec(name, {"kind": "cuda", "host": host_llvm_config()},
                              skip_reason="target cuda: no CUDA GPU on this machine (tvm.cuda(0).exist is False)")
        arch = "sm_" + str(dev.compute_version).replace(".", "")
        return TargetSpec(name, {"kind": "cuda", "arch": arch, "host": host_llvm_config()})
    raise ValueError(f"unknown target {name!r}; choose from llvm, cuda")
