"""Compile pipelines, a first-class choice of every workload (``Workload.pipeline``):
``default``, Relax's default pipeline for the target (legalize, fuse, lower: naive loops
on the CPU), what every baseline before pipelines existed was measured with; ``unfused``,
what ``tvm.compile`` does on its own (legalize and lower, no fusion); ``dlight`` and
``tuned``, the default pipeline with dlight's default schedules or a MetaSchedule tuning
database's (builder/tuning.py) on the fused kernels. Relax modules go through
:func:`lower_relax`, PrimFunc programs through :func:`schedule_prim`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_tvmperf.workload import PIPELINES


def check_pipeline(name: str) -> str:
    if name not in PIPELINES:
        raise ValueError(f"unknown pipeline {name!r}; choose from {', '.join(PIPELINES)}")
    return name


def fuse_relax(mod: Any, target: Any) -> Any:
    """The first half of the default pipeline, with no schedule yet: its fused PrimFuncs
    are what a schedule (dlight, a tuning database) applies to and tuning's tasks."""
    import tvm
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    t = relax.transform
    passes = [t.LegalizeOps(), t.AnnotateTIROpPattern(), t.FoldConstant(), t.FuseOps(), t.FuseTIR()]
    with target:
        return tvm.transform.Sequential(cpu.library_dispatch_passes(target) + passes)(mod)


def _apply_dlight(mod: Any, target: Any, rules: list[Any] | None = None) -> Any:
    """dlight's default schedules (``rules``, else the target's) on the kernels without one."""
    from tvm.s_tir import dlight

    with target:
        if not rules and "gpu" in target.keys:
            rules = [dlight.gpu.Matmul(), dlight.gpu.GEMV(), dlight.gpu.Reduction(), dlight.gpu.GeneralReduction()]
            rules.append(dlight.gpu.Fallback())
        return dlight.ApplyDefaultSchedule(*(rules or [dlight.cpu.GEMV(), dlight.cpu.Reduction()]))(mod)


def _apply_tuning(mod: Any, target: Any, tuning_db: Path | None) -> Any:
    from pytest_tvmperf.builder import tuning

    if tuning_db is None:
        raise ValueError("pipeline 'tuned' needs a tuning database directory")
    return tuning.apply(mod, target, tuning_db)


def lower_relax(mod: Any, target: Any, pipeline: str, tuning_db: Path | None = None) -> Any:
    """``mod`` lowered by ``pipeline``, ready for ``relax.build(..., relax_pipeline=None)``."""
    import tvm
    from tvm import relax

    check_pipeline(pipeline)
    if pipeline == "unfused":
        with target:
            return relax.pipeline.default_build_pipeline()(mod)
    if pipeline == "default":
        return relax.get_default_pipeline(target)(mod)
    fused = fuse_relax(mod, target)
    if pipeline == "tuned":
        fused = _apply_tuning(fused, target, tuning_db)
    if pipeline == "dlight" or "gpu" in target.keys:  # on a GPU, kernels without a tuning record still need a schedule
        fused = _apply_dlight(fused, target)
    from tvm.relax.backend.cpu_generic import pipeline as cpu
    from tvm.relax.backend.gpu_generic import pipeline as gpu

    stages = gpu if "gpu" in target.keys else cpu  # the second half: dataflow lowering and memory planning
    with target:
        return tvm.transform.Sequential(stages.dataflow_lower_passes(target) + stages.finalize_passes(target))(fused)


def prim_module(program: Any, entry: str) -> Any:
    """A PrimFunc program as an IRModule whose ``entry`` is its global symbol."""
    import tvm
    from tvm import tirx

    if isinstance(program, tirx.PrimFunc):
        return tvm.IRModule({entry: program.with_attr("global_symbol", entry)})
    return program


def tuning_module(workload: Any, target: Any) -> Any:
    """The module whose kernels tuning works on: the fused Relax module, or an operator's PrimFuncs."""
    if workload.kind == "relax":
        return fuse_relax(workload.program, target)
    return prim_module(workload.program, workload.entry)


def schedule_prim(mod: Any, target: Any, pipeline: str, tuning_db: Path | None = None) -> Any:
    """A PrimFunc-only module scheduled by ``pipeline`` (on a GPU, at least dlight's fallback)."""
    from tvm.s_tir import dlight

    check_pipeline(pipeline)
    if pipeline == "unfused":
        raise ValueError("pipeline 'unfused' applies to Relax programs (a PrimFunc has nothing to fuse); use 'default'")
    if pipeline == "tuned":
        mod = _apply_tuning(mod, target, tuning_db)
    if pipeline == "dlight":
        return _apply_dlight(mod, target)
    if "gpu" in target.keys:  # an unscheduled kernel (no tuning record) cannot run on a GPU
        return _apply_dlight(mod, target, [dlight.gpu.Fallback()])
    return mod
