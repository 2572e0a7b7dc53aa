"""The noise of ``peak_bytes`` (issue 48) for the same program in fresh processes, idle
and beside CPU-bound jobs, and what reading it adds to a gate.

    python benchmarks/peak_noise.py [--processes 10] [--load 2]

Each program is built once and exported, as the gate exports it for the isolation child.
Then, per condition, ``--processes`` fresh isolation children (sandbox/child.py, the
gate's own) each run it once, as the gate's crash check does, and read its peak
(sandbox/peak.py: one warm call, then the median of 3 calls, each from an emptied VM
pool). Printed per program and condition: the peak_bytes of each process (what the gate
compares), their spread (max - min) and the largest step from one process's to
another's against the median, the range of the single calls, and the wall time of the
peak request (what the gate adds: the child is running already) beside the crash check's
request (what the gate does anyway: load the program, one call).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _load import cpu_load  # noqa: E402

from pytest_tvmperf.builder.executors import PrimExecutor, VMExecutor  # noqa: E402
from pytest_tvmperf.builder.targets import resolve_target  # noqa: E402
from pytest_tvmperf.sandbox.child import Sandbox  # noqa: E402
from pytest_tvmperf.workload import output_specs  # noqa: E402
from pytest_tvmperf.workloads.mlp import mlp  # noqa: E402
from pytest_tvmperf.workloads.multiply import multiply  # noqa: E402


def programs():
    """(label, workload, executor): a small VM program (the seeds' MLP at batch 1, under
    the floor), a larger one (batch 256, intermediates of 512 KiB), the MLP with its
    weights passed at run time (transposed in each call), and a PrimFunc."""
    yield "mlp batch 1", mlp(batch=1), VMExecutor("bytecode")
    yield "mlp batch 256", mlp(batch=256), VMExecutor("bytecode")
    yield "mlp batch 16, weights at run time", mlp(batch=16, bind_params=False), VMExecutor("bytecode")
    yield "multiply (prim)", multiply(), PrimExecutor()


def measure(library: Path, executor: str, entry: str, args, out_specs, scratch: Path) -> tuple[dict, float, float]:
    """One fresh isolation child: the crash check's run, then the peak request; the reply
    and the wall time of each request (the child started and TVM imported before)."""
    child = Sandbox(scratch)
    try:
        child.start()
        child._call({"op": "none"})  # waits for the child's imports (an unknown op: an error reply)
        start = time.perf_counter()
        crash = child.run(library, executor, entry, "cpu", args, out_specs)
        check = time.perf_counter() - start
        assert crash is None, crash
        start = time.perf_counter()
        reply = child.peak(library, executor, entry, "cpu", args, out_specs)
        return reply, check, time.perf_counter() - start
    finally:
        child.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--load", type=int, default=2, help="CPU-bound jobs beside the loaded condition")
    opts = parser.parse_args()
    target = resolve_target("llvm")
    print(
        "| program | condition | peak_bytes per process (median of 3 calls) | spread | largest step / median | "
        "single calls min-max | crash check ms | peak request ms (medians) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for label, workload, executor in programs():
            compiled = executor.compile(workload, target)
            library = scratch / f"{label.split()[0]}-{executor.name}-{abs(hash(label))}.so"
            compiled.export(str(library))
            inputs = workload.inputs()
            args = workload.call_args(inputs)
            out_specs = output_specs(workload.expected(inputs))
            for jobs in (0, opts.load):
                peaks, singles, checks, costs = [], [], [], []
                with cpu_load(jobs, 3600):
                    for _ in range(opts.processes):
                        reply, check, cost = measure(library, executor.name, workload.entry, args, out_specs, scratch)
                        samples = reply["host"]["samples"]
                        peaks.append(sorted(samples)[(len(samples) - 1) // 2])
                        singles.extend(samples)
                        checks.append(check)
                        costs.append(cost)
                mid = statistics.median(peaks)
                step = (max(peaks) - min(peaks)) / mid if mid else float("nan")
                shown = ", ".join(f"{p:,}" for p in peaks)
                print(
                    f"| {label} | {'idle' if jobs == 0 else f'beside {jobs} CPU-bound jobs'} | {shown} | "
                    f"{max(peaks) - min(peaks):,} B | {step:.2%} | {min(singles):,}-{max(singles):,} B | "
                    f"{statistics.median(checks) * 1e3:.1f} | {statistics.median(costs) * 1e3:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
