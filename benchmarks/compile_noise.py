"""The noise of ``compile_s`` (issue 48) and what it adds to a gate: the same program's
lowered IR built side by side against itself (the gate's builds: code generation, no
pipeline, in turn, 4 of each side), each run in a fresh process, on an idle machine and
beside 2 CPU-bound jobs (benchmarks/_load.py).

    python benchmarks/compile_noise.py [--runs 8] [--builds 3] [--workloads mlp scale]

Per workload and condition: the spread of each process's ratio (today's median build
over the baseline's, both the same program, so any ratio off 1.00x is noise), the
verdicts the gate gives them at thresholds 10% and 25% (anything but pass or not-gated
would be a false alarm), and the cost: the seconds of the gate's 8 builds beside the seconds the
test's own build (pipeline included) takes anyway.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_tvmperf.values.compile_times import DEFAULT_BUILDS  # noqa: E402


def _workload(name: str):
    import numpy as np
    from tvm import s_tir, te

    from pytest_tvmperf.workload import Workload
    from pytest_tvmperf.workloads.mlp import mlp

    if name == "mlp":
        return mlp(), "vm-bytecode"
    a = te.placeholder((4096,), name="A")
    b = te.compute((4096,), lambda i: te.sqrt(a[i]) * 2.0 + a[i], name="B")
    sch = s_tir.Schedule(te.create_prim_func([a, b]))
    (i,) = sch.get_loops(sch.get_sblock("B"))
    sch.unroll(sch.split(i, factors=[None, 16])[1])
    workload = Workload(
        name="scale",
        program=sch.mod["main"],
        make_inputs=lambda rng, d: [rng.uniform(size=4096).astype("float32")],
        reference=lambda x: np.sqrt(x) * 2 + x,
    )
    return workload, "prim"


def child(name: str, builds: int) -> None:
    """One fresh process: the test's own build, then the gate's builds side by side."""
    from pytest_tvmperf.builder.executor_choice import get_executor
    from pytest_tvmperf.builder.rebuild import generate, lowered_module
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.measure.compile_time import CompileTimer, side_by_side

    workload, executor = _workload(name)
    target = resolve_target("llvm")
    start = time.perf_counter()
    compiled = get_executor(executor).compile(workload, target)
    own_s = time.perf_counter() - start
    module = lowered_module(compiled)
    start = time.perf_counter()
    times = side_by_side(
        lambda: generate(module, executor, target), lambda: generate(module, executor, target), CompileTimer(), builds
    )
    step_s = time.perf_counter() - start
    print(json.dumps({"base": times.baseline_s, "now": times.current_s, "own_s": own_s, "step_s": step_s}))


def _run(name: str, builds: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--builds", str(builds)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--builds", type=int, default=DEFAULT_BUILDS)
    parser.add_argument("--workloads", nargs="+", default=["mlp", "scale"])
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.builds)
        return
    from benchmarks._load import cpu_load
    from pytest_tvmperf.config.limits import Limit
    from pytest_tvmperf.judge.compile_verdict import COMPILE_NOISE, compile_verdict
    from pytest_tvmperf.values.compile_times import CompileTimes

    print(
        f"{args.runs} fresh processes per row, {args.builds} builds of each side interleaved; the gate's noise "
        f"allowance {COMPILE_NOISE} (log sd), alpha 0.05 (one test's: the loosest)"
    )
    print(
        "| workload | load | median build s | ratio min-max (same program) | sd log ratio | "
        "verdicts at 25% | verdicts at 10% | the gate's builds s | test's own build s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.workloads:
        for jobs in (0, 2):
            with cpu_load(jobs, 3600):
                rows = [_run(name, args.builds) for _ in range(args.runs)]
            times = [CompileTimes(tuple(r["base"]), tuple(r["now"])) for r in rows]
            ratios = [statistics.median(t.ratios) for t in times]
            logs = [math.log(r) for r in ratios]
            tally = {}
            for limit in (0.25, 0.10):
                verdicts = [str(compile_verdict(t, Limit(relative=limit), 0.05).status) for t in times]
                tally[limit] = ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts)))
            builds = statistics.median(s for t in times for s in (*t.baseline_s, *t.current_s))
            print(
                f"| {name} | {'idle' if jobs == 0 else f'{jobs} CPU-bound jobs'} | {builds:.3f} | "
                f"{min(ratios):.3f}-{max(ratios):.3f}x | {statistics.pstdev(logs):.3f} | {tally[0.25]} | "
                f"{tally[0.10]} | {statistics.median(r['step_s'] for r in rows):.2f} | "
                f"{statistics.median(r['own_s'] for r in rows):.2f} |"
            )


if __name__ == "__main__":
    main()
