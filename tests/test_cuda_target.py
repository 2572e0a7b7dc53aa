"""cuda on a machine without a GPU (CI): every workload is built for the target's arch,
its kernels assembled by ptxas, and its exact metrics recorded and gated; correctness,
executed calls and time are not checked, and the run says so."""

from __future__ import annotations

import pytest

from pytest_tvmperf.builder.cuda_toolchain import find_toolchain


@pytest.fixture(autouse=True)
def cpu_only_with_nvcc():
    import tvm

    if tvm.cuda(0).exist:
        pytest.skip("this machine has a GPU: cuda runs there (these tests are the CPU-only path)")
    missing = find_toolchain().missing
    if missing:
        pytest.skip(f"built-only cuda needs nvcc and ptxas: {missing}")


MATMUL = '''
import os
import pytest
from tvm import s_tir, te
from pytest_tvmperf import Workload, workloads


def matmul(tile, n=64):
    """each GPU thread computes a tile x tile block of the n x n product"""
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    sch = s_tir.Schedule(te.create_prim_func([a, b, c]))
    block = sch.get_sblock("C")
    i, j, kk = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, tile])
    jo, ji = sch.split(j, factors=[None, tile])
    sch.reorder(io, jo, kk, ii, ji)
    sch.bind(io, "blockIdx.x")
    sch.bind(jo, "threadIdx.x")
    if tile > 1:
        sch.unroll(ii)
        sch.unroll(ji)
        sch.cache_write(block, 0, "local")
    return Workload(name="matmul", program=sch.mod["main"],
                    make_inputs=lambda rng, dims: [rng.standard_normal((n, n)).astype("float32") for _ in range(2)],
                    reference=lambda x, y: x @ y, rtol=1e-4, atol=1e-4)


@pytest.mark.tvmperf(executors=["prim"], targets=["cuda"])
def test_matmul(tvmperf):
    tvmperf.check(matmul(int(os.environ.get("MATMUL_TILE", "1"))))


@pytest.mark.tvmperf(executors=["vm-bytecode"], targets=["cuda"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
'''


def test_cuda_is_recorded_and_gated_on_exact_metrics_without_a_gpu(project):
    project.pytester.makepyfile(test_perf=MATMUL)
    recorded = project.run("--tvmperf-targets=cuda", "--tvmperf-update")
    recorded.assert_outcomes(passed=2)
    tests = project.baselines()["tests"]
    mlp, matmul = tests["test_mlp[cuda-vm-bytecode]"], tests["test_matmul[cuda-prim]"]
    assert mlp["target"]["kind"] == "cuda" and mlp["target"]["arch"] == "sm_80"
    assert mlp["timings"] == {} and mlp["exact"]["calls"] is None  # not run: no time, no executed calls
    assert mlp["exact"]["instructions"] == {"forward": 17} and mlp["exact"]["kernels"] == 3
    per_kernel = mlp["exact"]["per_kernel"]
    # each CUDA kernel (ptxas: fused_matmul_add_kernel, ...) under the identity key of the kernel
    # that launches it, its suffix kept (matmul_add@22ce49974e_kernel): TVM's numbering is not stored
    assert len(mlp["kernels"]) == 3 and all("@" in k for k in mlp["kernels"])
    assert set(per_kernel["gpu_registers"]) == {f"{k}_kernel" for k in mlp["kernels"]}
    assert all(r > 0 for r in per_kernel["gpu_registers"].values())
    assert set(per_kernel["gpu_spill_bytes"].values()) == {0}
    assert min(per_kernel["ptx_instructions"].values()) > 10
    assert set(matmul["exact"]["per_kernel"]["gpu_registers"]) == {"main_kernel"}

    gated = project.run("--tvmperf-targets=cuda")
    gated.assert_outcomes(passed=2)
    gated.stdout.fnmatch_lines(
        [
            "*test_matmul[[]cuda-prim[]]*prim*cuda*pass*",
            "*no GPU: built and gated 7 exact metrics, not run*",  # matmul: kernels, code bytes, 5 GPU resources
            "*no GPU: built and gated 9 exact metrics, not run*",  # mlp: + VM instructions, planned bytes
            "*target cuda: no GPU on this machine: built and gated the exact metrics only*"
            "correctness, executed calls and time were not checked*",
        ]
    )


def test_a_gpu_machines_executed_calls_stand_in_a_file_keyed_by_identity(project):
    """A GPU machine recorded the executed calls; this CPU-only machine builds the same
    program and keeps them (its record shares the entry). The file keys the calls by kernel
    identity, this build names its kernels as TVM does: compared under this build's names,
    they are the same program (compared as stored, they never were, and the calls were lost)."""
    import json

    project.pytester.makepyfile(test_perf=MATMUL)
    mlp = "test_mlp[cuda-vm-bytecode]"
    project.run("--tvmperf-targets=cuda", "--tvmperf-update", "-k", "mlp").assert_outcomes(passed=1)
    data = project.baselines()
    exact = data["tests"][mlp]["exact"]
    kernels = [k for k in exact["by_callee"] if "@" in k]
    assert len(kernels) == 3, exact["by_callee"]  # keyed by identity
    exact["calls"] = {**{k: 1 for k in kernels}, "vm.builtin.alloc_storage": 3}  # as a GPU machine counted them
    project.baseline_file().write_text(json.dumps(data, indent=2))
    gated = project.run("--tvmperf-targets=cuda", "-k", "mlp", "--tvmperf-json=results.json")
    gated.assert_outcomes(passed=1)
    (entry,) = json.loads((project.pytester.path / "results.json").read_text())["tests"]
    calls = entry["record"]["exact"]["calls"]
    assert calls is not None and sorted(calls.values()) == [1, 1, 1, 3], calls
    assert {k for k in calls if k.startswith("fused_")} == {
        "fused_matmul_add",
        "fused_matmul1_add1",
        "fused_matmul2_add2",
    }


def test_a_schedule_that_doubles_registers_fails_naming_the_kernel(project):
    project.pytester.makepyfile(test_perf=MATMUL)
    project.run("--tvmperf-targets=cuda", "--tvmperf-update", "-k", "matmul").assert_outcomes(passed=1)
    project.set_env("MATMUL_TILE", "8")  # 8 x 8 outputs per thread: 64 accumulators in registers
    result = project.run("--tvmperf-targets=cuda", "-k", "matmul")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "gpu_registers" in out and "regressed against the baseline" in out
    result.stdout.fnmatch_lines(
        [
            # the CUDA kernel reads as the kernel that launches it, under its own name
            "*kernels that grew: main(64x64, 64x64) -> 64x64 [[]main_kernel[]] (changed): * -> * registers/thread (+*%)*",
            "*pytest --tvmperf-update*test_perf.py::test_matmul*",
        ]
    )
    assert "Traceback" not in out


def test_the_arch_is_overridable(project):
    project.set_env("TVMPERF_CUDA_ARCH", "sm_90")
    project.pytester.makepyfile(test_perf=MATMUL)
    project.run("--tvmperf-targets=cuda", "--tvmperf-update", "-k", "mlp").assert_outcomes(passed=1)
    assert project.baselines()["tests"]["test_mlp[cuda-vm-bytecode]"]["target"]["arch"] == "sm_90"


CUDA_GRAPH = """
from pytest_tvmperf import workloads

def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""


def test_vm_cudagraph_is_built_and_gated_on_cuda_and_skipped_elsewhere(project):
    project.pytester.makepyfile(test_perf=CUDA_GRAPH)
    result = project.run("-rs", "--tvmperf-targets=llvm,cuda", "--tvmperf-executors=vm-cudagraph", "--tvmperf-update")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*executor vm-cudagraph captures CUDA graphs: it runs on the cuda target only, not llvm*"]
    )
    entry = project.baselines()["tests"]["test_mlp[cuda-vm-cudagraph]"]
    assert entry["exact"]["by_callee"]["vm.builtin.cuda_graph.run_or_capture"] == 1
    assert entry["timings"] == {}
    project.run("--tvmperf-targets=cuda", "--tvmperf-executors=vm-cudagraph").assert_outcomes(passed=1)
    # not selected unless asked for by name
    default = project.run("--tvmperf-targets=cuda", "--co", "-q")
    assert "vm-cudagraph" not in default.stdout.str() and "test_mlp[cuda-vm-bytecode]" in default.stdout.str()


def test_kernels_nvcc_cannot_build_fail_with_its_message_not_a_traceback(project):
    project.set_env("TVMPERF_CUDA_ARCH", "sm_20")  # an arch nvcc 12+ no longer builds for
    project.pytester.makepyfile(test_perf=MATMUL)
    result = project.run("--tvmperf-targets=cuda", "-k", "matmul")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: compiling matmul on cuda/prim failed: its CUDA kernels do not build for sm_20:*",
            "*nvcc --ptx -arch sm_20 failed (exit *",
        ]
    )
    assert "Traceback" not in result.stdout.str()
