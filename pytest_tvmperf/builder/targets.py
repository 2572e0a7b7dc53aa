"""Target names -> full TVM target dicts, and whether this machine can run them.

A :class:`TargetKind` in :data:`TARGET_KINDS` turns a name from ``--tvmperf-targets`` into
the :class:`TargetSpec` executors see; a new target is a new kind plus its name in
``config/parsing.TARGETS``."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from pytest_tvmperf.builder import host_cpu
from pytest_tvmperf.values.builtin_types import NOT_SCALAR, builtin_scalar


@dataclass(frozen=True)
class TargetSpec:
    """A resolved target: the short name in test ids and the full dict given to TVM."""

    name: str
    config: Mapping[str, Any]
    skip_reason: str | None = None
    #: the TVM device type the compiled program runs on (``tvm.device(device_type, 0)``)
    device_type: str = "cpu"
    #: the RPC device it runs on (farm/remote.py), None for this machine
    remote: Any = None
    #: why this target is built and gated on its exact metrics but not run here (no GPU)
    not_run: str | None = None

    @property
    def runnable(self) -> bool:
        return self.not_run is None

    def tvm_target(self):
        import tvm

        return tvm.target.Target(dict(self.config))

    def device(self):
        import tvm

        return tvm.device(self.device_type, 0)

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
    return [_plain(v) for v in value] if hasattr(value, "__iter__") else str(value)


def host_llvm_config(override: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The host CPU as an llvm target (plain 'llvm' is generic x86-64 and runs rgb2yuv 4x
    slower than with the host mcpu): the model LLVM names, less every feature the OS does
    not enable (builder/host_cpu.py). ``override`` (``--tvmperf-llvm-target``) replaces it;
    ``num-cores`` is filled in where it does not say."""
    if override is not None:
        return {"kind": "llvm", "num-cores": os.cpu_count() or 1, **dict(override)}
    import tvm

    model = str(tvm.target.codegen.llvm_get_system_cpu())
    triple = str(tvm.target.codegen.llvm_get_system_triple())
    cpu = host_cpu.resolve_host_cpu(
        model, host_cpu.model_features(model), host_cpu.read_host(), x86=host_cpu.is_x86(triple)
    )
    return {"kind": "llvm", **cpu.fields(), "num-cores": os.cpu_count() or 1}


class TargetKind(Protocol):
    """Resolves one kind of target name on this machine."""

    def resolve(self, name: str, llvm: Mapping[str, Any] | None = None) -> TargetSpec:
        """The full target for ``name``; ``llvm``: the host llvm target the user set, if any."""


@dataclass(frozen=True)
class LlvmKind:
    """The host CPU, with its own ``mcpu`` (see :func:`host_llvm_config`)."""

    def resolve(self, name: str, llvm: Mapping[str, Any] | None = None) -> TargetSpec:
        return TargetSpec(name, host_llvm_config(llvm))


#: the CUDA ``arch`` built for where no GPU says which (``TVMPERF_CUDA_ARCH`` overrides it)
DEFAULT_CUDA_ARCH = "sm_80"
CUDA_ARCH_ENV = "TVMPERF_CUDA_ARCH"


@dataclass(frozen=True)
class CudaKind:
    """An NVIDIA GPU. Without one, the workload is still built for ``arch``
    (``$TVMPERF_CUDA_ARCH``, default :data:`DEFAULT_CUDA_ARCH`) and gated on its exact
    metrics, but not run; with one, ``arch`` is the GPU's unless the variable says
    otherwise. Only ``tvm.cuda(0).exist`` is asked of the driver."""

    def resolve(self, name: str, llvm: Mapping[str, Any] | None = None) -> TargetSpec:
        import tvm

        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain

        override = os.environ.get(CUDA_ARCH_ENV, "").strip()
        if override and not override.startswith("sm_"):
            raise ValueError(f"${CUDA_ARCH_ENV}={override!r}: give a CUDA arch such as sm_80 or sm_90a")
        dev = tvm.cuda(0)
        if dev.exist:
            import tvm.support.nvcc  # noqa: F401  (registers TVM's CUDA compile callback)

            arch = override or "sm_" + str(dev.compute_version).replace(".", "")
            config = {"kind": "cuda", "arch": arch, "host": host_llvm_config(llvm)}
            return TargetSpec(name, config, device_type="cuda", skip_reason=tvm_cuda_compiler_missing(find_toolchain()))
        config = {"kind": "cuda", "arch": override or DEFAULT_CUDA_ARCH, "host": host_llvm_config(llvm)}
        missing = find_toolchain().missing
        why = f"target cuda: no GPU on this machine, and {missing}: the CUDA kernels cannot be built to check them"
        return TargetSpec(name, config, device_type="cuda", not_run="no GPU", skip_reason=why if missing else None)


def tvm_cuda_compiler_missing(toolchain) -> str | None:
    """Why TVM cannot compile CUDA kernels here: NVRTC (``cuda-bindings``) unless ``TVM_CUDA_COMPILE_MODE=nvcc``."""
    mode = os.environ.get("TVM_CUDA_COMPILE_MODE", "nvrtc").lower()
    if mode == "nvcc":
        return None if toolchain.nvcc else f"target cuda: TVM_CUDA_COMPILE_MODE=nvcc but {toolchain.missing}"
    try:
        have_nvrtc = importlib.util.find_spec("cuda.bindings") is not None
    except (ImportError, ValueError):
        have_nvrtc = False
    if have_nvrtc:
        return None
    return (
        "target cuda: TVM compiles CUDA kernels with NVRTC from the cuda-bindings package, which is not installed: "
        "pip install 'pytest-tvmperf[cuda]'" + (", or set TVM_CUDA_COMPILE_MODE=nvcc" if toolchain.nvcc else "")
    )


#: every target kind, by the name used in ``--tvmperf-targets`` and test ids
TARGET_KINDS: Mapping[str, TargetKind] = {"llvm": LlvmKind(), "cuda": CudaKind()}


def resolve_target(name: str, llvm: Mapping[str, Any] | None = None) -> TargetSpec:
    """The target ``name`` on this machine; ``llvm``: ``--tvmperf-llvm-target``, for this CPU."""
    kind = TARGET_KINDS.get(name)
    if kind is None:
        raise ValueError(f"unknown target {name!r}; choose from {', '.join(TARGET_KINDS)}")
    return kind.resolve(name, llvm)
