"""The ``vm-cudagraph`` executor: the Relax VM in bytecode mode with CUDA graph capture
(``relax.backend.use_cuda_graph``): the static part of each function is captured into a
CUDA graph on its first run and replayed after. ``cuda`` targets only; without a GPU it
is built and gated on its exact metrics like any cuda workload (its bytecode shows the
``vm.builtin.cuda_graph.*`` calls)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_tvmperf.builder.executors import CompileError, VMExecutor, _VMCompiled, shorten_tvm_error

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
        return None

    def compile(self, workload, target, tuning_db=None):
        import tvm
        from tvm import relax

        from pytest_tvmperf.builder.pipelines import lower_relax

        tvm_target = target.tvm_target()
        try:
            with tvm.transform.PassContext(config=CUDA_GRAPH_CONFIG):
                lowered = lower_relax(workload.program, tvm_target, workload.pipeline, tuning_db)
                executable = relax.build(lowered, tvm_target, relax_pipeline=None, exec_mode="bytecode")
        except Exception as exc:  # TVM raises many types
            raise CompileError(shorten_tvm_error(exc)) from exc
        return _VMCompiled(executable, lowered, workload.entry, "bytecode", target.device())
