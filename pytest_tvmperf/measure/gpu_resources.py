"""The GPU resources :class:`~pytest_tvmperf.measure.metric_sources.MetricSource`: per
CUDA kernel, registers per thread, shared memory, local memory (stack frame), spill
bytes and PTX instructions, from the kernels built by builder/cuda_build.py. Exact on any
machine, GPU or not: a schedule that adds spills or doubles registers fails CPU-only CI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pytest_tvmperf.values.kernel_metrics import KERNEL_METRICS
from pytest_tvmperf.measure.ptxas_info import parse_ptxas_verbose, ptx_instruction_counts

GPU_METRIC_NAMES = ("gpu_registers", "gpu_shared_bytes", "gpu_local_bytes", "gpu_spill_bytes", "ptx_instructions")


def resource_counts(ptxas_log: str, ptx: str) -> dict[str, dict[str, int]]:
    """Pure: {metric: {kernel: count}} from ``ptxas -v`` output and the PTX."""
    kernels = parse_ptxas_verbose(ptxas_log)
    fields = ("registers", "shared_bytes", "local_bytes", "spill_bytes")
    counts = {f"gpu_{f}": {k: getattr(r, f) for k, r in kernels.items()} for f in fields}
    return {**counts, "ptx_instructions": ptx_instruction_counts(ptx)}


@dataclass(frozen=True)
class GpuResources:
    name: str = "GPU resources"
    metrics = tuple(m for m in KERNEL_METRICS if m.name in GPU_METRIC_NAMES)

    def unavailable(self, prepared, settings) -> str | None:
        if prepared.target.device_type != "cuda" or getattr(prepared, "device_code", None) is not None:
            return None  # other targets have no CUDA kernels: nothing to say
        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain

        return find_toolchain().missing or None

    def setup(self, prepared, settings) -> str:
        """The arch and the ptxas version: registers and spills are ptxas's choices."""
        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain, tool_version

        code = getattr(prepared, "device_code", None)
        ptxas = find_toolchain().ptxas
        return f"{getattr(code, 'arch', '?')}, ptxas {tool_version(ptxas) if ptxas else 'version unknown'}"

    def collect(self, prepared, settings) -> Mapping[str, Mapping[str, int]]:
        code = getattr(prepared, "device_code", None)
        return {} if code is None else resource_counts(code.ptxas_log, code.ptx)


GPU_RESOURCES = GpuResources()
