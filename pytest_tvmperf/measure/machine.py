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

    @property
    def fingerprint(self) -> str:
        """Short stable id: time samples are only comparable between equal fingerprints."""
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Machine":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})

    def describe(self) -> str:
        return f"{self.cpu_model}, {self.logical_cores} cores, {self.tvm_threads} TVM threads, TVM {self.tvm_version}, LLVM {self.llvm_version}"


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
    )
