"""False alarms: unchanged code judged from many fresh processes, idle or under load.

Records baselines once (into a scratch directory, with a/b artifacts), then judges the
same code against them from N fresh processes and prints the verdicts by outcome.
Goal: no `regressed` at all, idle or loaded.

--suite bundled   the bundled perf suite (tests/perf: 21 tests where no GPU is present)
--suite aa        the A/A test of the trust issue: mlp(batch=1, bind_params=True) under
                  vm-bytecode and vm-compiled, rgb2yuv default and parallel (4 verdicts)
--load N          N competing CPU-bound processes run during the measurements (they
                  stop by themselves after the run's time budget)
--threads 1,2     TVM_NUM_THREADS for the gated runs (one row each)

    python benchmarks/false_alarms.py --processes 20 --gap 30
    python benchmarks/false_alarms.py --suite aa --processes 25 --gap 0 --load 2 --threads 1,2
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, run_pytest, tally, verdicts
from _load import cpu_load
from detection_power import AB_LABEL

AA_TEST = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, bind_params=True))

@pytest.mark.tvmperf(executors=["prim"])
@pytest.mark.parametrize("schedule", ["default", "parallel"])
def test_rgb2yuv(tvmperf, schedule):
    tvmperf.check(workloads.rgb2yuv(schedule=schedule))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=20)
    parser.add_argument("--gap", type=float, default=30.0, help="seconds between processes")
    parser.add_argument("--modes", default="ab,normalized", help="ab, normalized or both")
    parser.add_argument(
        "--baseline-program",
        choices=("ir", "so"),
        default="ir",
        help="the a/b mode's baseline program: ir (rebuilt here, the default form) or so (the library)",
    )
    parser.add_argument("--suite", choices=("bundled", "aa"), default="bundled")
    parser.add_argument("--load", type=int, default=0, help="competing CPU-bound processes during the gated runs")
    parser.add_argument("--threads", default="", help="TVM_NUM_THREADS values, e.g. 1,2 (default: as set)")
    parser.add_argument("--budget", type=float, default=3600.0, help="seconds the load may run at most")
    args = parser.parse_args()
    threads = [t for t in args.threads.split(",") if t] or [os.environ.get("TVM_NUM_THREADS", "")]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp, "baselines")
        if args.suite == "bundled":
            # the committed tuning database: the baselines go to a scratch directory
            cwd, paths, expect = ROOT, ["tests/perf", f"--tvmperf-tuning-db={ROOT / 'baselines' / 'tuning'}"], " passed"
        else:
            cwd, paths, expect = Path(tmp), [], "4 passed"
            (cwd / "test_aa.py").write_text(AA_TEST)
            (cwd / "pytest.ini").write_text("[pytest]\n")
        wanted = args.modes.split(",")
        modes = [
            (key, name)
            for key, name in (("ab", AB_LABEL[args.baseline_program]), ("normalized", "normalized (no artifacts)"))
            if key in wanted
        ]
        rows: dict[tuple[str, str], list] = {(t, name): [] for t in threads for _, name in modes}
        start = time.time()
        for t in threads:
            env = dict(os.environ)
            if t:
                env["TVM_NUM_THREADS"] = t
            shutil.rmtree(base, ignore_errors=True)  # each thread count records its own (idle) baseline
            out = run_pytest(
                [
                    *paths,
                    "--tvmperf-update",
                    f"--tvmperf-baselines={base}",
                    f"--tvmperf-baseline-program={args.baseline_program}",
                ],
                cwd=cwd,
                env=env,
            )
            assert expect in out and " failed" not in out and " error" not in out, out[-2000:]
            with cpu_load(args.load, args.budget):
                for i in range(args.processes):
                    if i and args.gap:
                        time.sleep(args.gap)
                    for key, name in modes:
                        extra = [] if key == "ab" else ["--tvmperf-artifacts=off"]
                        out = run_pytest(
                            [*paths, f"--tvmperf-baselines={base}", "--tvmperf-inconclusive=pass", *extra],
                            cwd=cwd,
                            env=env,
                        )
                        rows[(t, name)].append(verdicts(out))
                    so_far = tally(rows[(t, modes[0][1])]) if modes else {}
                    print(
                        f"threads {t or 'default'}: process {i + 1}/{args.processes} done at "
                        f"{time.time() - start:.0f} s; verdicts so far: {dict(so_far)}; load average "
                        f"{os.getloadavg()[0]:.1f}",
                        file=sys.stderr,
                        flush=True,
                    )
        suite = (
            "bundled perf suite (tests/perf)"
            if args.suite == "bundled"
            else "A/A suite (mlp x2 executors, rgb2yuv x2 schedules)"
        )
        print(
            f"{suite}, {args.processes} fresh processes per row, {args.gap:g} s apart, {args.load} competing "
            f"CPU-bound process(es), over {(time.time() - start) / 60:.1f} min"
        )
        print(
            f"{'TVM threads':>11} {'mode':28} {'verdicts':>9} {'pass':>6} {'inconclusive':>13} {'improved':>9} {'regressed':>10}"
        )
        for (t, mode), runs in rows.items():
            c = tally(runs)
            total = sum(c.values())
            print(
                f"{t or 'default':>11} {mode:28} {total:9d} {c['pass']:6d} {c['inconclusive']:13d} {c['improved']:9d} "
                f"{c['regressed']:10d}"
            )


if __name__ == "__main__":
    main()
