"""How much does a workload's median time move between fresh processes?

Runs the bundled perf suite N times, each in a fresh process recording into its own
scratch baseline directory, then prints per test the spread of the raw medians across
processes (max/min) and the largest ratio to the first run, and checks that the exact
metrics are identical in every process.

    python benchmarks/process_noise.py --runs 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(out_dir: Path) -> tuple[dict[str, float], dict[str, dict]]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/perf",
        "-q",
        "-p",
        "no:cacheprovider",
        "--tvmperf-update",
        "--tvmperf-artifacts=off",
        f"--tvmperf-baselines={out_dir}",
    ]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    medians: dict[str, float] = {}
    exact: dict[str, dict] = {}
    for path in out_dir.rglob("*.json"):
        for test_id, entry in json.loads(path.read_text())["tests"].items():
            (timing,) = entry["timings"].values()
            medians[test_id] = timing["median_s"]
            exact[test_id] = entry["exact"]
    return medians, exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    exacts: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            medians, exact = run_once(Path(tmp, f"run{i}"))
            runs.append(medians)
            exacts.append(exact)
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
    print(f"{'test':58} {'median of medians':>18} {'max/min':>8} {'worst vs run 1':>15}")
    worst = 1.0
    for test_id in sorted(runs[0]):
        values = [r[test_id] for r in runs]
        spread = max(values) / min(values)
        vs_first = max(v / values[0] for v in values)
        worst = max(worst, vs_first)
        print(f"{test_id:58} {statistics.median(values) * 1e3:15.3f} ms {spread:8.2f} {vs_first:15.2f}")
    print(f"\nlargest slowdown of a later process vs the first (raw median): {worst:.2f}x over {args.runs} processes")
    same = all(e == exacts[0] for e in exacts)
    print(
        f"exact metrics (instructions by function and callee, executed calls, kernels, planned bytes) "
        f"identical in all {args.runs} processes: {'yes' if same else 'NO'}"
    )


if __name__ == "__main__":
    main()
