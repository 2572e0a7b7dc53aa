"""Detection power: a workload of known cost slowed by 5/10/20/50%, judged from fresh processes.

The workload (benchmarks/_harness.py BUSY_TEST) runs K inner steps per element, so
K = 200 * (1 + s) costs s more. Baselines are recorded at s = 0; each trial is a
fresh process running the slowed variant under the same test id. Prints the share of
trials per verdict for each slowdown, in a/b mode (artifacts kept) and normalized
mode (no artifacts). Goal: >= 95% `regressed` at 10%, 100% at 20% and above, and
no `regressed` at 0%. With ``--load N``, N competing CPU-bound processes (stopping by
themselves) run during the trials; goal there: 100% at 50% and never `improved`.

    python benchmarks/detection_power.py --trials 10
    python benchmarks/detection_power.py --trials 10 --load 2 --modes ab
    python benchmarks/detection_power.py --trials 20 --slowdowns 25,50 --load 2 --threads 1,2 --modes ab
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _harness import BUSY_TEST, run_pytest, verdicts
from _load import cpu_load


#: the a/b mode's name by the form of the baseline's program (README, "Portable a/b")
AB_LABEL = {"ir": "a/b (IR rebuilt here)", "so": "a/b (.so kept)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--slowdowns", default="0,5,10,20,50")
    parser.add_argument("--modes", default="ab,normalized", help="ab, normalized or both")
    parser.add_argument(
        "--baseline-program",
        choices=("ir", "so"),
        default="ir",
        help="the a/b mode's baseline program: ir (rebuilt here, the default form) or so (the library)",
    )
    parser.add_argument("--load", type=int, default=0, help="competing CPU-bound processes during the trials")
    parser.add_argument("--budget", type=float, default=3600.0, help="seconds the load may run at most")
    parser.add_argument("--threads", default="", help="TVM_NUM_THREADS values, e.g. 1,2 (default: as set)")
    args = parser.parse_args()
    threads = [t for t in args.threads.split(",") if t] or [os.environ.get("TVM_NUM_THREADS", "")]
    slowdowns = [float(s) for s in args.slowdowns.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_busy.py").write_text(BUSY_TEST)
        (project / "pytest.ini").write_text("[pytest]\n")
        env = dict(os.environ, BUSY_SLOWDOWN_PCT="0")
        out = run_pytest(
            ["--tvmperf-update", f"--tvmperf-baseline-program={args.baseline_program}"], cwd=project, env=env
        )
        assert "1 passed" in out, out[-2000:]
        print(
            f"{'mode':36} {'slowdown':>8} {'trials':>6} {'regressed':>10} {'inconclusive':>13} {'pass':>5} {'improved':>9}"
        )
        modes = [
            (name, extra)
            for key, name, extra in (
                ("ab", AB_LABEL[args.baseline_program], []),
                ("normalized", "normalized (no artifacts)", ["--tvmperf-artifacts=off"]),
            )
            if key in args.modes.split(",")
        ]
        with cpu_load(args.load, args.budget):
            for (mode, extra), thread in ((m, t) for m in modes for t in threads):
                mode = f"{mode}, load {args.load}" if args.load else mode
                mode = f"{mode}, {thread} thr" if thread else mode
                run_env = dict(os.environ, TVM_NUM_THREADS=thread) if thread else dict(os.environ)
                for s in slowdowns:
                    counts: Counter = Counter()
                    for _ in range(args.trials):
                        out = run_pytest(
                            ["--tvmperf-inconclusive=pass", *extra],
                            cwd=project,
                            env=dict(run_env, BUSY_SLOWDOWN_PCT=str(s)),
                        )
                        counts.update(verdicts(out).values())
                    n = max(1, sum(counts.values()))
                    print(
                        f"{mode:36} {s:7g}% {n:6d} {counts['regressed'] / n:9.0%} {counts['inconclusive'] / n:12.0%} "
                        f"{counts['pass'] / n:5.0%} {counts['improved'] / n:8.0%}",
                        flush=True,
                    )
                print(file=sys.stderr)


if __name__ == "__main__":
    main()
