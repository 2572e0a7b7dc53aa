"""Compile pipelines, a first-class choice of every workload (``Workload.pipeline``).

``default``
    Relax's default pipeline for the target: legalize, fuse, lower (kernels keep the
    legalization's naive loops on the CPU). This is what every baseline before
    pipelines existed was measured with.
``unfused``
    What ``tvm.compile`` does on its own: legalize and lower, no operator fusion.
``dlight``
    The default pipeline with dlight's default schedules applied to the fused kernels
    (``tvm.s_tir.dlight``: GEMV and reduction rules on the CPU, the GPU rule set on GPUs).
``tuned``
    The default pipeline with the schedules of a MetaSchedule tuning database applied
    to the fused kernels (see ``pytest_tvmperf.builder.tuning``).

Relax modules go through :func:`lower_relax`; PrimFunc programs through
:func:`schedule_prim`. TVM is imported lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_tvmperf.workload import PIPELINES


def check_pipeline(name: str) -> str:
    if name not in PIPELINES:
        raise ValueError(f"unknown pipeline {name!r}; choose from {', '.join(PIPELINES)}")
    return name


def _dlight_rules(target: Any) -> list[Any]:
    from tvm.s_tir import dlight

    if "gpu" in target.keys:
        return [
            dlight.gpu.Matmul(),
            dlight.gpu.GEMV(),
            dlight.gpu.Reduction(),
            dlight.gpu.GeneralReduction(),
            dlight.gpu.Fallback(),
        ]
    return [dlight.cpu.GEMV(), dlight.cpu.Reduction()]


def fuse_relax(mod: Any, target: Any) -> Any:
    """The first half of the default pipeline: library dispatch, legalize, fold
    constants, fuse, with no schedule yet (the GPU default pipeline would apply dlight
    here). The fused PrimFuncs of the result are what a schedule (dlight, or a tuning
    database) applies to, and what tuning extracts as tasks."""
    import tvm
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    passes = [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ]
    with target:
        return tvm.transform.Sequential(cpu.library_dispatch_passes(target) + passes)(mod)


def _finish_relax(mod: Any, target: Any) -> Any:
    """The second half of the default pipeline: dataflow lowering and memory planning."""
    import tvm
    from tvm.relax.backend.cpu_generic import pipeline as cpu
    from tvm.relax.backend.gpu_generic import pipeline as gpu

    stages = gpu if "gpu" in target.keys else cpu
    with target:
        return tvm.transform.Sequential(stages.dataflow_lower_passes(target) + stages.finalize_passes(target))(mod)


def _apply_dlight(mod: Any, target: Any, rules: list[Any] | None = None) -> Any:
    """dlight's default schedules (``rules``, by default those of the target) on the
    kernels of ``mod`` that have none yet."""
    from tvm.s_tir import dlight

    with target:
        return dlight.ApplyDefaultSchedule(*(rules or _dlight_rules(target)))(mod)


def lower_relax(mod: Any, target: Any, pipeline: str, tuning_db: Path | None = None) -> Any:
    """``mod`` lowered by ``pipeline``, ready for ``relax.build(..., relax_pipeline=None)``."""
    from tvm import relax

    check_pipeline(pipeline)
    if pipeline == "unfused":
        with target:
            return relax.pipeline.default_build_pipeline()(mod)
    if pipeline == "default":
        return relax.get_default_pipeline(target)(mod)
    fused = fuse_relax(mod, target)
    if pipeline == "tuned":
        from pytest_tvmperf.builder import tuning

        if tuning_db is None:
            raise ValueError("pipeline 'tuned' needs a tuning database directory")
        fused = tuning.apply(fused, target, tuning_db)
    if pipeline == "dlight" or "gpu" in target.keys:  # on a GPU, kernels without a tuning record still need a schedule
        fused = _apply_dlight(fused, target)
    return _finish_relax(fused, target)


def prim_module(program: Any, entry: str) -> Any:
    """A PrimFunc program as an IRModule whose ``entry`` is its global symbol."""
    import tvm
    from tvm import tirx

    if isinstance(program, tirx.PrimFunc):
        return tvm.IRModule({entry: program.with_attr("global_symbol", entry)})
    return program


def tuning_module(workload: Any, target: Any) -> Any:
    """The module whose kernels tuning works on: the fused Relax module (what
    ``tuned`` applies the database to), or the PrimFunc module of an operator."""
    if workload.kind == "relax":
        return fuse_relax(workload.program, target)
    return prim_module(workload.program, workload.entry)


def schedule_prim(mod: Any, target: Any, pipeline: str, tuning_db: Path | None = None) -> Any:
    """A PrimFunc-only module scheduled by ``pipeline`` (``default`` keeps the
    program's own schedule; on a GPU it gets dlight's fallback so it can run)."""
    from tvm.s_tir import dlight

    check_pipeline(pipeline)
    if pipeline == "unfused":
        raise ValueError("pipeline 'unfused' applies to Relax programs (a PrimFunc has nothing to fuse); use 'default'")
    if pipeline == "tuned":
        from pytest_tvmperf.builder import tuning

        if tuning_db is None:
            raise ValueError("pipeline 'tuned' needs a tuning database directory")
        mod = tuning.apply(mod, target, tuning_db)
    if pipeline == "dlight":
        return _apply_dlight(mod, target)
    if "gpu" in target.keys:  # an unscheduled kernel (no tuning record) cannot run on a GPU
        return _apply_dlight(mod, target, [dlight.gpu.Fallback()])
    return mod
