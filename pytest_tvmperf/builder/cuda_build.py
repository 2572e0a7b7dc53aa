"""The CUDA kernels of a compiled workload, built to PTX and assembled by ptxas, with or
without a GPU: TVM leaves CUDA C in the compiled module's ``cuda`` import; nvcc turns it
into PTX for the target's ``arch`` and ``ptxas -v`` assembles it, which checks the build
and reports each kernel's registers, shared memory and spills (measure/ptxas_info.py)."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tvmperf.builder.cuda_toolchain import CudaToolchain

#: nvcc flags TVM itself uses for its kernels (tvm.support.nvcc._compile_cuda_nvcc)
NVCC_FLAGS = tuple(
    "-O3 --use_fast_math --expt-relaxed-constexpr --expt-extended-lambda -U__CUDA_NO_HALF_OPERATORS__ "
    "-U__CUDA_NO_HALF_CONVERSIONS__ -U__CUDA_NO_BFLOAT16_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__".split()
)
TOOL_TIMEOUT_S = 600


class DeviceCompileError(Exception):
    """nvcc or ptxas rejected the CUDA kernels; the message is the tool's output."""


@dataclass(frozen=True)
class DeviceCode:
    """The workload's kernels as PTX, and what ``ptxas -v`` said assembling them."""

    arch: str
    ptx: str
    ptxas_log: str


def _run(cmd: list[str], toolchain: CudaToolchain, what: str) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=toolchain.env(), timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeviceCompileError(f"{what}: {exc}") from exc
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        tail = "\n".join(output.splitlines()[-15:])
        raise DeviceCompileError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return output


def device_code(compiled: Any, arch: str, toolchain: CudaToolchain) -> DeviceCode | None:
    """The compiled workload's CUDA kernels (the CUDA C of every ``cuda`` module it imports,
    at any depth), each nvcc'd to PTX for ``arch`` and assembled with ``ptxas -v``; None when it has none."""
    holder = getattr(compiled, "executable", None) or getattr(compiled, "lib", None)  # a VM executable, a library
    found: list[str] = []
    seen: set[int] = set()
    stack = [getattr(holder, "mod", holder)]
    while stack:
        mod = stack.pop()
        if mod is None or id(mod) in seen:
            continue
        seen.add(id(mod))
        if str(mod.kind) == "cuda":
            found.append(str(mod.inspect_source("cuda")))
        stack.extend(mod.imports)
    sources = [s for s in found if s.strip()]
    if not sources:
        return None
    assert toolchain.nvcc and toolchain.ptxas, toolchain.missing
    ptx_parts, logs = [], []
    with tempfile.TemporaryDirectory(prefix="tvmperf-cuda-") as tmp:
        for i, source in enumerate(sources):
            cu, ptx = Path(tmp, f"kernels{i}.cu"), Path(tmp, f"kernels{i}.ptx")
            cu.write_text(source)
            _run(
                [toolchain.nvcc, "--ptx", "-arch", arch, *NVCC_FLAGS, "-o", str(ptx), str(cu)],
                toolchain,
                f"nvcc --ptx -arch {arch}",
            )
            logs.append(
                _run(
                    [toolchain.ptxas, "-v", "--gpu-name", arch, "-o", str(Path(tmp, f"kernels{i}.cubin")), str(ptx)],
                    toolchain,
                    f"ptxas --gpu-name {arch}",
                )
            )
            ptx_parts.append(ptx.read_text())
    return DeviceCode(arch, "\n".join(ptx_parts), "\n".join(logs))
