"""The tasks of a program for MetaSchedule: its tunable kernels, one per structure, and
those left out (symbolic shapes, already scheduled). TVM is imported lazily."""

from __future__ import annotations

from typing import Any


def _is_relax(mod: Any) -> bool:
    from tvm import relax

    return any(isinstance(f, relax.Function) for f in mod.functions.values())


def _tunable(func: Any) -> bool:
    """Whether MetaSchedule can tune the PrimFunc ``func``: not already scheduled,
    and only buffer parameters of static shapes (its search fails on a symbolic
    shape with ``parallel_for_dynamic error ... old_rv != nullptr``)."""
    from tvm import tirx
    from tvm.tirx.buffer import BufferType

    if func.attrs is not None and bool(func.attrs.get("tirx.is_scheduled", False)):
        return False
    # (a scalar parameter is a dynamic kernel's shape variable)
    return all(isinstance(p.ty, BufferType) and all(isinstance(d, tirx.IntImm) for d in p.shape) for p in func.params)


def _task_module(func: Any) -> Any:
    """The IRModule MetaSchedule keys a PrimFunc by, as ``extract_tasks`` makes it:
    the function as ``main`` with global symbol ``main`` (so the key does not depend
    on the entry's name; without a global symbol the candidates do not build) and
    ``tirx.noalias``."""
    import tvm

    return tvm.IRModule({"main": func.with_attr("global_symbol", "main").with_attr("tirx.noalias", True)})


def _split_tasks(mod: Any, target: Any) -> tuple[list[tuple[str, Any, float]], list[str]]:
    """(tunable (name, task module, calls) by name, untunable kernel names sorted)."""
    import tvm_ffi
    from tvm import tirx

    tunable: list[tuple[str, Any, float]] = []
    untunable: list[str] = []
    if _is_relax(mod):
        from tvm.s_tir.meta_schedule.relax_integration import extract_tasks

        for task in extract_tasks(mod, target):  # structurally equal kernels are one task
            if _tunable(task.dispatched[0]["main"]):
                tunable.append((str(task.task_name), task.dispatched[0], float(task.weight)))
            else:
                untunable.append(str(task.task_name))
    else:
        for gv, func in sorted(mod.functions_items(), key=lambda kv: kv[0].name_hint):
            if not isinstance(func, tirx.PrimFunc):
                continue
            if not _tunable(func):
                untunable.append(gv.name_hint)
                continue
            task_mod = _task_module(func)
            for i, (name, other, weight) in enumerate(tunable):
                if tvm_ffi.structural_equal(task_mod, other):  # the same kernel again: one task
                    tunable[i] = (name, other, weight + 1)
                    break
            else:
                tunable.append((gv.name_hint, task_mod, 1.0))
    tunable.sort(key=lambda item: item[0])
    return tunable, sorted(untunable)


def tasks_of(mod: Any, target: Any) -> list[tuple[str, Any]]:
    """The tunable tasks of ``mod`` (fused Relax, or PrimFuncs) as ``(name, task IRModule)``, by name."""
    return [(name, task_mod) for name, task_mod, _ in _split_tasks(mod, target)[0]]
