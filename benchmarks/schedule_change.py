"""A real change under load: rgb2yuv recorded with the parallel schedule, then switched to
the default schedule (~1.7x slower when idle) under the same test id, judged from fresh
processes, idle and with competing CPU-bound jobs, at TVM_NUM_THREADS 1 and 2.

Goal: `regressed` when the machine is idle; never `improved` under load.

    python benchmarks/schedule_change.py --trials 5 --load 2 --threads 1,2
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path

from _harness import run_pytest, verdicts
from _load import cpu_load

TEST = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_rgb2yuv(tvmperf):
    tvmperf.check(workloads.rgb2yuv(schedule=os.environ.get("RGB2YUV_SCHEDULE", "parallel")))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--load", type=int, default=2, help="competing CPU-bound processes in the loaded rows")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--budget", type=float, default=3600.0, help="seconds the load may run at most")
    args = parser.parse_args()
    print(
        f"{'TVM threads':>11} {'load':>4} {'trials':>6} {'regressed':>10} {'inconclusive':>13} {'pass':>5} {'improved':>9}"
    )
    for threads in args.threads.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            (project / "test_rgb.py").write_text(TEST)
            (project / "pytest.ini").write_text("[pytest]\n")
            env = dict(os.environ, TVM_NUM_THREADS=threads, RGB2YUV_SCHEDULE="parallel")
            out = run_pytest(["--tvmperf-update"], cwd=project, env=env)
            assert "1 passed" in out, out[-2000:]
            for load in (0, args.load):
                counts: Counter = Counter()
                with cpu_load(load, args.budget):
                    for _ in range(args.trials):
                        out = run_pytest(
                            ["--tvmperf-inconclusive=pass"], cwd=project, env=dict(env, RGB2YUV_SCHEDULE="default")
                        )
                        counts.update(verdicts(out).values())
                n = sum(counts.values()) or 1
                print(
                    f"{threads:>11} {load:4d} {n:6d} {counts['regressed'] / n:9.0%} {counts['inconclusive'] / n:12.0%} "
                    f"{counts['pass'] / n:5.0%} {counts['improved'] / n:8.0%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
