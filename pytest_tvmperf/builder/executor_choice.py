"""The executor a test id names (``vm-bytecode``, ``vm-compiled``, ``prim``,
``vm-cudagraph``): executors.py holds the VM and the PrimFunc executors, cudagraph.py the
CUDA graph one built on the VM's; this module, above both, picks one."""

from __future__ import annotations

from pytest_tvmperf.builder.cudagraph import CudaGraphExecutor
from pytest_tvmperf.builder.executors import Executor, PrimExecutor, VMExecutor


def get_executor(name: str) -> Executor:
    executors = {"vm-bytecode": VMExecutor("bytecode"), "vm-compiled": VMExecutor("compiled")}
    executors.update({"prim": PrimExecutor(), "vm-cudagraph": CudaGraphExecutor()})
    if name not in executors:
        raise ValueError(f"unknown executor {name!r}; choose from {', '.join(executors)}")
    return executors[name]
