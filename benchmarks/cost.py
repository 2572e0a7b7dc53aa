"""Cost: the wall time the gate's timing adds per workload, next to one plain
``time_evaluator`` call with as many samples of the same length.

For each workload: (1) ``time_evaluator(repeat=15, min_repeat_ms=20)``; (2) the gate's
first measurement: 15 rounds of workload + reference kernel + baseline artifact
(3 placements each), plus exporting and loading the artifact; (3) the same with the
confirmation re-measure (30 more rounds) that a suspected regression triggers. Also
the 95% half-width of each one's ratio interval, to compare precision.

    python benchmarks/cost.py
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_tvmperf import workloads
from pytest_tvmperf.store.artifacts import export_pending
from pytest_tvmperf.build.executors import get_executor, placed_sampler
from pytest_tvmperf.measure.timer import TimingTask, TvmTimer
from pytest_tvmperf.measure.reference import REFERENCE_NAME, reference_workload
from pytest_tvmperf.build.targets import resolve_target
from pytest_tvmperf.judge.timestats import bootstrap_se_log_ratio

ROUNDS, MIN_MS = 15, 20


def prepare(workload, executor, target, scratch: Path):
    compiled = get_executor(executor).compile(workload, target)
    inputs = workload.inputs()
    args = [*inputs, *(a for _, a in workload.params)]
    specs = [(e.shape, str(e.dtype)) for e in workload.expected(inputs)]
    return compiled, args, specs


def main() -> None:
    target = resolve_target("llvm")
    ref = reference_workload()
    ref_in = ref.inputs()
    ref_sampler = get_executor("prim").compile(ref, target).sampler(ref_in, [(e.shape, str(e.dtype)) for e in ref.expected(ref_in)], MIN_MS)
    cases = [(workloads.mlp(), "vm-bytecode"), (workloads.rgb2yuv(), "prim"), (workloads.multiply(), "prim")]
    z = 1.96
    print(f"{'workload':34} {'time_evaluator':>15} {'gate (1st pass)':>16} {'gate + confirm':>15}   95% half-width: plain / gate a/b")
    for workload, executor in cases:
        with tempfile.TemporaryDirectory() as tmp:
            scratch = Path(tmp)
            compiled, args, specs = prepare(workload, executor, target, scratch)
            plain = compiled.sampler(args, specs, MIN_MS)
            t0 = time.perf_counter()
            plain_samples = [plain() for _ in range(ROUNDS)]
            t_plain = time.perf_counter() - t0

            t0 = time.perf_counter()
            pending = export_pending(compiled, scratch / "current.so")
            task = TimingTask(
                workload=placed_sampler(pending.temp, executor, workload.entry, target, args, specs, MIN_MS, scratch),
                reference=ref_sampler, reference_name=REFERENCE_NAME,
                baseline=placed_sampler(pending.temp, executor, workload.entry, target, args, specs, MIN_MS, scratch),
            )
            first = TvmTimer()(task, ROUNDS)
            t_gate = time.perf_counter() - t0
            t0 = time.perf_counter()
            pooled = first + TvmTimer()(task, 2 * ROUNDS)
            t_confirm = t_gate + time.perf_counter() - t0
            hw_plain = math.expm1(z * bootstrap_se_log_ratio(plain_samples, None))
            hw_gate = math.expm1(z * bootstrap_se_log_ratio(pooled.ab_ratios, None))
            print(f"{workload.name:34} {t_plain:13.2f} s {t_gate:14.2f} s {t_confirm:13.2f} s   "
                  f"{hw_plain:6.1%} (one process only) / {hw_gate:5.1%} (vs baseline)")
    print("\nthe plain call's interval says nothing about another process (8-22% apart, README); "
          "the gate's a/b interval compares with the baseline's own program side by side.")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
