"""The ``vm-cudagraph`` executor: the Relax VM in bytecode mode with CUDA graph capture
(``relax.backend.use_cuda_graph``: each function's static part captured on its first run,
replayed after). ``cuda`` targets only; without a GPU, built and gated like any cuda one."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_tvmperf.builder.executors import VMExecutor, build_vm

CUDA_GRAPH_CONFIG = {"relax.backend.use_cuda_graph": True}


@dataclass(frozen=True)
class CudaGraphExecutor:
    name: str = "vm-cudagraph"

    def unsupported(self, workload):
        return VMExecutor("bytecode").unsupported(workload)

    def unsupported_on(self, target) -> str | None:
        if target.device_type != "cuda":
            return (
                f"executor vm-cudagraph captures CUDA graphs: it runs on the cuda target only, not {target.name} "
                f"(e.g. --tvmperf-targets=cuda)"
            )

    def compile(self, workload, target, tuning_db=None):
        return build_vm(workload, target, tuning_db, "bytecode", CUDA_GRAPH_CONFIG)
