"""Cost of gating ``cuda`` without a GPU: per workload, the seconds TVM takes to compile
it for ``cuda`` and the seconds nvcc + ptxas take to build its kernels, with the number of
kernels and the GPU resource totals that are then gated.

    python benchmarks/cuda_build.py
"""

from __future__ import annotations

import time

from pytest_tvmperf import workloads
from pytest_tvmperf.builder.cuda_build import device_code
from pytest_tvmperf.builder.cuda_toolchain import find_toolchain
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.measure.gpu_resources import resource_counts

CASES = [
    ("mlp(batch=1)", "vm-bytecode", lambda: workloads.mlp(batch=1)),
    ("rgb2yuv(schedule='gpu')", "prim", lambda: workloads.rgb2yuv(schedule="gpu")),
    ("dla_conv('stem')", "vm-bytecode", lambda: workloads.dla_conv(layer="stem")),
    ("dla_conv('level5_3x3')", "vm-bytecode", lambda: workloads.dla_conv(layer="level5_3x3")),
]


def main() -> None:
    target = resolve_target("cuda")
    toolchain = find_toolchain()
    if toolchain.missing:
        raise SystemExit(f"cuda_build: {toolchain.missing}")
    arch = target.config["arch"]
    print(f"target cuda, arch {arch}, GPU here: {target.runnable}; nvcc {toolchain.nvcc}")
    print(
        f"{'workload':26} {'executor':12} {'TVM s':>6} {'nvcc+ptxas s':>12} {'kernels':>7} {'registers':>9} "
        f"{'spill B':>7} {'PTX instr':>9}"
    )
    for name, executor, make in CASES:
        workload = make()
        start = time.perf_counter()
        compiled = get_executor(executor).compile(workload, target)
        tvm_s = time.perf_counter() - start
        start = time.perf_counter()
        code = device_code(compiled, arch, toolchain)
        build_s = time.perf_counter() - start
        counts = resource_counts(code.ptxas_log, code.ptx)
        print(
            f"{name:26} {executor:12} {tvm_s:6.2f} {build_s:12.2f} {len(counts['gpu_registers']):7d} "
            f"{sum(counts['gpu_registers'].values()):9d} {sum(counts['gpu_spill_bytes'].values()):7d} "
            f"{sum(counts['ptx_instructions'].values()):9d}"
        )


if __name__ == "__main__":
    main()
