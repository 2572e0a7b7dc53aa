"""The machine this process runs on (values/machine.py's :class:`Machine`), read from the OS and TVM."""

from __future__ import annotations

import json
import os
import platform
from typing import Any, Mapping

from pytest_tvmperf.values.machine import Machine


def gpu_description(name: Any, driver: Any, cuda_version: Any) -> str:
    """'NVIDIA H100 80GB HBM3, driver 550.54.15, CUDA 12040' (parts TVM does not know are left out)."""
    extra = [f"driver {driver}" if driver else "", f"CUDA {cuda_version}" if cuda_version else ""]
    return ", ".join([str(name or "unknown GPU"), *filter(None, extra)])


def current_gpu(target_json: Mapping[str, Any]) -> str:
    """The GPU of a ``cuda`` target, asked of the driver only when a GPU exists."""
    import tvm

    if target_json.get("kind") != "cuda":
        return ""
    dev = tvm.cuda(0)
    return gpu_description(dev.device_name, dev.driver_version, dev.api_version) if dev.exist else ""


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
