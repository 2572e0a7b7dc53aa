"""The resource metrics (issue 48) of the seeds' MLP: ``alloc_bytes`` of the dynamic-batch
build at two batch sizes against the static build at each, with the planned storage
(``storage_bytes``) beside it, ``code_bytes``, and what reading them costs.

    python benchmarks/resources.py [--batches 1 16]

The dynamic build plans no storage (its sizes are not constants) and allocates at run
time what the static build plans. What reading each metric costs, on this machine: the
wall time of one instrumented call (alloc_bytes, after a first run, as the gate's
correctness check makes), and of reading the code's symbols from the library the gate
exports anyway (code_bytes), or, without one, of writing the module's object (the code
generated again).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pytest_tvmperf.builder.executors import VMExecutor
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.workloads.mlp import mlp


def row(label: str, workload, executor: VMExecutor, target) -> str:
    compiled = executor.compile(workload, target)
    args = workload.call_args(workload.inputs())
    compiled.run(args, [])  # the gate's correctness check runs it first (the first run JIT-loads it)
    static = compiled.static_metrics()
    start = time.perf_counter()
    allocs = compiled.executed_allocations(args)
    alloc_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "lib.so"
        compiled.export(str(library))  # as the gate does, to run it in the isolation child
        start = time.perf_counter()
        code = compiled.code_size(library)
        code_s = time.perf_counter() - start
    start = time.perf_counter()
    assert compiled.code_size().total == code.total  # the object LLVM writes: the same sizes
    object_s = time.perf_counter() - start
    alloc = "n/a" if isinstance(allocs, str) else f"{allocs.total:,}"
    calls = compiled.executed_calls(args)
    return (
        f"| {label} | {executor.name} | {static.storage_bytes:,} | {alloc} | "
        f"{sum(calls.values()) if calls else 'n/a'} | {code.total:,} | {alloc_s * 1e3:.1f} | {code_s * 1e3:.1f} | "
        f"{object_s * 1e3:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs=2, default=[1, 16])
    args = parser.parse_args()
    target = resolve_target("llvm")
    print(
        "| build | executor | storage_bytes (planned) | alloc_bytes (run time) | calls | code_bytes | "
        "read alloc ms | read code ms (export) | read code ms (no export) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for batch in args.batches:
        for mode in ("bytecode",):
            print(row(f"static batch={batch}", mlp(batch=batch), VMExecutor(mode), target), flush=True)
            print(
                row(f"dynamic batch n, run at {batch}", mlp(batch="n", run_batch=batch), VMExecutor(mode), target),
                flush=True,
            )
    print(row("dynamic batch n, run at 1", mlp(batch="n", run_batch=1), VMExecutor("compiled"), target), flush=True)


if __name__ == "__main__":
    main()
