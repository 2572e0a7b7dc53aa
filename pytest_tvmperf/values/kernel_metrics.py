"""The per-kernel metrics the registered metric sources can produce: their names (threshold
keys, marker keywords), units and default limits (pure: option parsing reads them; the
sources and their plug-in point are measure/metric_sources.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pytest_tvmperf.values.printable import safe


@dataclass(frozen=True)
class KernelMetric:
    """One per-kernel metric: its name (a threshold key and marker keyword), the unit
    shown in messages, and the threshold it gets by default (``parse_limit`` syntax)."""

    name: str
    unit: str
    default_limit: str = "0"
    doc: str = ""


#: Every per-kernel metric a registered source can produce (threshold keys, docs).
KERNEL_METRICS: tuple[KernelMetric, ...] = (
    # measure/simulate.py: callgrind, for the pinned target llvm -mcpu=haswell (README, "Simulated cost")
    KernelMetric(
        "cpu_instructions",
        "instructions",
        default_limit="1%",
        doc="instructions executed per kernel under valgrind's callgrind (pinned target llvm -mcpu=haswell)",
    ),
    KernelMetric(
        "est_cycles",
        "cycles",
        default_limit="1%",
        doc="Ir + 10 x L1 misses + 100 x LL misses per kernel, pinned cache model (measure/callgrind.py)",
    ),
    # GPU resources of CUDA kernels, from ptxas -v (measure/gpu_resources.py)
    KernelMetric("gpu_registers", "registers/thread", "0", "registers per thread of each CUDA kernel (ptxas -v)"),
    KernelMetric("gpu_shared_bytes", "B shared", "0", "static shared memory per block of each CUDA kernel (ptxas -v)"),
    KernelMetric(
        "gpu_local_bytes", "B local", "0", "stack frame in local memory per thread of each CUDA kernel (ptxas -v)"
    ),
    KernelMetric("gpu_spill_bytes", "B spilled", "0", "register spill stores + loads of each CUDA kernel (ptxas -v)"),
    KernelMetric("ptx_instructions", "PTX instructions", "1%", "PTX instructions in each CUDA kernel's body"),
)


def setup_difference(metric: str, baseline: Mapping[str, str], current: Mapping[str, str]) -> str:
    """Why ``metric``'s counts cannot be compared ("" when they can): both sides say how
    they were measured, and not the same way. A baseline that does not say (recorded
    before setups were stored) is compared as before."""
    old, new = baseline.get(metric), current.get(metric)
    if not old or not new or old == new:
        return ""
    return f"measured with {safe(new)} here, {safe(old)} in the baseline"  # data from the baseline file
