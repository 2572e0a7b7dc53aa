"""Per layer, TVM against its peer: the table ``--tvmperf-layers`` prints, for
one bundled workload, with what making it costs.

The workload is compiled for the host ``llvm`` target under ``vm-bytecode`` with the
given pipeline, then ``measure/peer_layers.layer_tables`` times each side layer by layer
(TVM's kernel calls by the VM's instrument, torch's leaf modules by hooks, onnxruntime
by its node profile), ``RUNS`` instrumented runs each after a warm-up (each call, the
whole run and the time outside every call from the same runs), and prints the table with the
``--top`` layers where TVM loses the most. The cost line is the wall time of that step:
what ``--tvmperf-layers=on`` (or a failed ``vs_<peer>``) adds to a test.

    python benchmarks/layers.py dla34 --size 224            # the DLA-34 backbone (workloads.dla34)
    python benchmarks/layers.py squeezenet --size 64        # a bundled ONNX model, against onnxruntime
"""

from __future__ import annotations

import argparse
from pathlib import Path
import importlib
import shlex
import sys
import time

from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.measure.peer_layers import RUNS, layer_tables
from pytest_tvmperf.result.layers_text import table_lines


def _workload(name: str, size: int, width: float):
    if name == "dla34":
        module = importlib.import_module("pytest_tvmperf.workloads.dla34")
        return module.dla34(size=size, width=width), "torch"
    from pytest_tvmperf.workloads.onnx_model import BUNDLED_ONNX, bundled_onnx

    if name not in BUNDLED_ONNX:
        raise SystemExit(f"layers.py: unknown workload {name!r}; choose dla34 or one of {', '.join(BUNDLED_ONNX)}")
    data = "gpu_0/data_0" if name in ("resnet50", "shufflenet", "zfnet512") else "data_0"
    return bundled_onnx(name, shapes={data: [1, 3, size, size]}, random_weights=True), "onnxruntime"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", help="dla34, or a bundled ONNX model (squeezenet, resnet50, ...)")
    parser.add_argument("--size", type=int, default=224, help="image height and width (default 224)")
    parser.add_argument("--width", type=float, default=1.0, help="dla34's channel multiplier (default 1.0)")
    parser.add_argument("--pipeline", default="default", help="compile pipeline (default, dlight, tuned, ...)")
    parser.add_argument("--tuning-db", default="baselines/tuning", help="the database of --pipeline=tuned")
    parser.add_argument("--top", type=int, default=5, help="layers shown (default 5)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"instrumented runs per side (default {RUNS})")
    args = parser.parse_args(argv)
    workload, peer = _workload(args.workload, args.size, args.width)
    workload = workload.with_pipeline(args.pipeline, args.tuning_db if args.pipeline == "tuned" else None)
    start = time.perf_counter()
    compiled = get_executor("vm-bytecode").compile(workload, resolve_target("llvm"), Path(args.tuning_db).resolve())
    compile_s = time.perf_counter() - start
    inputs = workload.inputs()
    costs = []
    for _ in range(2):  # cold (first use of the VM and of the peer), then warm: what a test that timed both pays
        start = time.perf_counter()
        tables, problems = layer_tables(
            compiled, workload.call_args(inputs), workload.program, inputs, {peer: workload.peers[peer]}, runs=args.runs
        )
        costs.append(time.perf_counter() - start)
    print(f"$ python benchmarks/layers.py {shlex.join(sys.argv[1:] if argv is None else argv)}")
    print(f"{workload.name}, pipeline {args.pipeline}: compiled in {compile_s:.1f} s")
    for table in tables:
        for line in table_lines(table, args.top):
            print(line)
        matched = sum(r.matched for r in table.rows)
        print(
            f"{matched} matched layer(s) of {len(table.rows)} row(s); per-layer timing took {costs[1]:.2f} s "
            f"(cold, first use of both sides in the process: {costs[0]:.2f} s; {args.runs} instrumented runs "
            f"+ 1 warm-up per side; rows of TVM summed: {sum(r.tvm_s for r in table.rows) * 1e3:.1f} ms, of "
            f"{peer}: {sum(r.peer_s for r in table.rows) * 1e3:.1f} ms)"
        )
    for problem in problems:
        print(problem)
    return 0 if tables else 1


if __name__ == "__main__":
    raise SystemExit(main())
