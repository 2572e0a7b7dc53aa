"""How much faster is the bundled perf suite with ``--tvmperf-timing=off``?

Runs ``pytest tests/perf`` against the committed baselines twice in fresh processes,
timed (the default) and with ``--tvmperf-timing=off`` (correctness and exact metrics
only), and prints the wall time of each and the speed-up.

    python benchmarks/timing_off.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(extra: list[str], paths: list[str]) -> tuple[float, str]:
    """Wall seconds of one pytest run, and its last line (the outcome counts)."""
    cmd = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", *extra]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return wall, lines[-1] if lines else f"exit {done.returncode}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["tests/perf"])
    args = parser.parse_args()
    results = []
    for label, extra in (("timing on (default)", []), ("--tvmperf-timing=off", ["--tvmperf-timing=off"])):
        wall, outcome = run(extra, args.paths)
        results.append(wall)
        print(f"{label:24s} {wall:7.1f} s   {outcome}", flush=True)
    print(f"speed-up: {results[0] / results[1]:.1f}x ({results[0] - results[1]:.0f} s saved)")


if __name__ == "__main__":
    main()
