"""False alarms: the bundled perf suite, unchanged, judged from many fresh processes.

Records baselines once (into a scratch directory, with a/b artifacts), then runs the
suite against them from N fresh processes, GAP seconds apart, and prints the verdicts
by outcome, with and without the a/b artifacts. Goal: no `regressed` at all.

    python benchmarks/false_alarms.py --processes 20 --gap 30
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _harness import run_pytest, tally, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=20)
    parser.add_argument("--gap", type=float, default=30.0, help="seconds between processes")
    parser.add_argument("--modes", default="ab,normalized", help="ab, normalized or both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp, "baselines")
        out = run_pytest(["tests/perf", "--tvmperf-update", f"--tvmperf-baselines={base}"])
        assert "11 passed" in out, out[-2000:]
        wanted = args.modes.split(",")
        modes = {name: [] for key, name in (("ab", "a/b (artifacts kept)"), ("normalized", "normalized (no artifacts)"))
                 if key in wanted}
        start = time.time()
        for i in range(args.processes):
            if i:
                time.sleep(args.gap)
            for mode, runs in modes.items():
                extra = [] if mode.startswith("a/b") else ["--tvmperf-artifacts=off"]
                out = run_pytest(["tests/perf", f"--tvmperf-baselines={base}", "--tvmperf-inconclusive=pass", *extra])
                runs.append(verdicts(out))
            print(f"process {i + 1}/{args.processes} done at {time.time() - start:.0f} s", file=sys.stderr, flush=True)
        print(f"bundled perf suite (11 tests), {args.processes} fresh processes, {args.gap:g} s apart, "
              f"over {(time.time() - start) / 60:.1f} min")
        print(f"{'mode':28} {'verdicts':>9} {'pass':>6} {'inconclusive':>13} {'improved':>9} {'regressed':>10}")
        for mode, runs in modes.items():
            c = tally(runs)
            total = sum(c.values())
            print(f"{mode:28} {total:9d} {c['pass']:6d} {c['inconclusive']:13d} {c['improved']:9d} {c['regressed']:10d}")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
