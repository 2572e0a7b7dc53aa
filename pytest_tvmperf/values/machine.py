"""The machine fingerprint that time baselines belong to (pure: the value, its JSON and
its fingerprint; measure/host_machine.py reads the machine it runs on)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from pytest_tvmperf.values.printable import safe


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

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        if not data["gpu"]:
            del data["gpu"]
        return data

    @property
    def fingerprint(self) -> str:
        """Short stable id: time samples are only comparable between equal fingerprints."""
        return hashlib.sha256(json.dumps(self.as_json(), sort_keys=True).encode()).hexdigest()[:12]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Machine":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k != "gpu" or k in data})

    def describe(self) -> str:
        gpu = f", GPU {self.gpu}" if self.gpu else ""
        return safe(
            f"{self.cpu_model}, {self.logical_cores} cores, {self.tvm_threads} TVM threads, TVM {self.tvm_version}, "
            f"LLVM {self.llvm_version}{gpu}"
        )  # a baseline file's: escaped
