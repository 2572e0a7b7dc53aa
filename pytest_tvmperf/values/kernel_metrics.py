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


#: Every per-kernel metric a registered source can produce (threshold keys).
KERNEL_METRICS: tuple[KernelMetric, ...] = (
    # measure/simulate.py: callgrind, for the pinned target llvm -mcpu=haswell (README, "Simulated cost"): the
    # instructions executed per kernel, and Ir + 10 x L1 misses + 100 x LL misses per kernel, a pinned cache
    # model (measure/callgrind.py)
    KernelMetric("cpu_instructions", "instructions", "1%"),
    KernelMetric("est_cycles", "cycles", "1%"),
    # GPU resources of each CUDA kernel, from ptxas -v (measure/gpu_resources.py): registers per thread, static
    # shared memory per block, stack frame in local memory per thread, register spill stores + loads
    KernelMetric("gpu_registers", "registers/thread"),
    KernelMetric("gpu_shared_bytes", "B shared"),
    KernelMetric("gpu_local_bytes", "B local"),
    KernelMetric("gpu_spill_bytes", "B spilled"),
    KernelMetric("ptx_instructions", "PTX instructions", "1%"),  # in each CUDA kernel's body
)


def setup_difference(metric: str, baseline: Mapping[str, str], current: Mapping[str, str]) -> str:
    """Why ``metric``'s counts cannot be compared ("" when they can): both sides say how
    they were measured, and not the same way. A baseline that does not say (recorded
    before setups were stored) is compared as before."""
    old, new = baseline.get(metric), current.get(metric)
    if not old or not new or old == new:
        return ""
    return f"measured with {safe(new)} here, {safe(old)} in the baseline"  # data from the baseline file
