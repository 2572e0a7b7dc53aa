"""The executor a test id names (``vm-bytecode``, ``vm-compiled``, ``prim``,
``vm-cudagraph``): executors.py holds the VM and the PrimFunc executors, cudagraph.py the
CUDA graph one built on the VM's; this module, above both, picks one."""

from __future__ import annotations

from pytest_tvmperf.builder.cudagraph import CudaGraphExecutor
from pytest_tvmperf.builder.executors import Executor, PrimExecutor, VMExecutor


def get_executor(name: str) -> Executor:
    if name == "vm-bytecode":
        return VMExecutor("bytecode")
    if name == "vm-compiled":
        return VMExecutor("compiled")
    if name == "prim":
        return PrimExecutor()
    if name == "vm-cudagraph":
        return CudaGraphExecutor()
    raise ValueError(f"unknown executor {name!r}; choose from vm-bytecode, vm-compiled, prim, vm-cudagraph")
