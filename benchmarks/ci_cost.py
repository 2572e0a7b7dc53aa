"""What the CI gate costs per run: the bundled perf suite (``pytest tests/perf``, the README's
first command, against the committed ``baselines/``) with the plugin's build cache cold (an
empty ``$TVMPERF_CACHE_DIR``, as on a runner's first run) and then warm (the same directory
restored, as the workflow's cache step restores it), each a fresh pytest process.

    python benchmarks/ci_cost.py            # cold, then warm
    python benchmarks/ci_cost.py -- -n 2    # the same with pytest's extra arguments
    TVMPERF_SAME_PROGRAM=time python benchmarks/ci_cost.py
        # every program timed against its baseline's, rebuilt from IR: what a pull request
        # that changes every workload pays (an unchanged program is not rebuilt at all)

It prints each run's wall time, the machine's load average before and after, and pytest's
last line (the outcome counts)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    extra = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    with tempfile.TemporaryDirectory(prefix="tvmperf-ci-cost-") as cache:
        env = dict(os.environ, TVMPERF_CACHE_DIR=cache, TVMPERF_CACHE_KEY="ci-cost-benchmark")
        for phase in ("cold", "warm"):
            before = load()
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/perf", *extra],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            wall = time.perf_counter() - start
            last = [line for line in proc.stdout.splitlines() if line.strip()][-1:]
            print(
                f"{phase}: {wall:.0f} s (exit {proc.returncode}); load {before} -> {load()}; {last[0] if last else ''}",
                flush=True,
            )
    same = os.environ.get("TVMPERF_SAME_PROGRAM")
    print(
        f"command: {'TVMPERF_SAME_PROGRAM=' + same + ' ' if same else ''}python benchmarks/ci_cost.py"
        f"{' -- ' + ' '.join(extra) if extra else ''}"
    )


if __name__ == "__main__":
    main()
