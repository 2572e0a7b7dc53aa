"""The machine fingerprint that time baselines belong to."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict, dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Machine:
    cpu_model: str
    logical_cores: int
    tvm_threads: int
    tvm_version: str
    llvm_version: str
    target: str
    #: the GPU a ``cuda`` target was timed on: name, driver and CUDA versions ("" on CPU
    #: targets, left out of the fingerprint and the JSON so CPU fingerprints are unchanged)
    gpu: str = ""

    def _fields(self) -> dict[str, Any]:
        data = asdict(self)
        if not data["gpu"]:
            del data["gpu"]
        return data

    @property
    def fingerprint(self) -> str:
        """Short stable id: time samples are only comparable between equal fingerprints."""
        blob = json.dumps(self._fields(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def as_json(self) -> dict[str, Any]:
        return self._fields()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Machine":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k != "gpu" or k in data})

    def describe(self) -> str:
        gpu = f", GPU {self.gpu}" if self.gpu else ""
        return f"{self.cpu_model}, {self.logical_cores} cores, {self.tvm_threads} TVM threads, TVM {self.tvm_version}, LLVM {self.llvm_version}{gpu}"


def gpu_description(name: Any, driver: Any, cuda_version: Any) -> str:
    """'NVIDIA H100 80GB HBM3, driver 550.54.15, CUDA 12040' (parts TVM does not know are left out)."""
    parts = [str(name or "unknown GPU")]
    if driver:
        parts.append(f"driver {driver}")
    if cuda_version:
        parts.append(f"CUDA {cuda_version}")
    return ", ".join(parts)


def current_gpu(target_json: Mapping[str, Any]) -> str:
    """The GPU of a ``cuda`` target, asked of the driver only when a GPU exists."""
    import tvm

    if target_json.get("kind") != "cuda":
        return ""
    dev = tvm.cuda(0)
    if not dev.exist:
        return ""
    return gpu_description(dev.device_name, dev.driver_version, dev.api_version)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def current_machine(target_json: Mapping[str, Any]) -> Machine:
    import tvm

    try:
        llvm = str(tvm.target.codegen.llvm_version_major())
    except Exception:  # TVM built without LLVM
        llvm = "none"
    return Machine(
        cpu_model=cpu_model(),
        logical_cores=os.cpu_count() or 1,
        tvm_threads=int(tvm.runtime.num_threads()),
        tvm_version=str(tvm.__version__),
        llvm_version=llvm,
        target=json.dumps(dict(target_json), sort_keys=True),
        gpu=current_gpu(target_json),
    )
