"""Side by side: this plugin, pytest-benchmark and pyperf on the same kernel, unchanged and slowed.

One user-style TE reduction (benchmarks/_harness.py BUSY_TEST: K inner steps per element, so
K = 200 * (1 + s) costs s more, a real compute change) is gated three ways, each as its own
docs teach:

1. tvmperf: ``pytest --tvmperf-update`` once, then ``pytest`` per trial; caught = ``regressed``.
2. pytest-benchmark: ``benchmark(f, *args)``; ``--benchmark-autosave`` once, then per trial
   ``--benchmark-compare=0001 --benchmark-compare-fail median:10% mean:5%``;
   caught = the field named in its "Performance has regressed" lines (median:10% and mean:5%
   are told apart from the one run).
3. pyperf: a ``pyperf.Runner().bench_func`` script (``--fast`` unless ``--pyperf-processes``),
   ``-o`` a JSON per run, then ``pyperf compare_to base.json run.json``; caught = significant
   (pyperf's own t-test) and slower.

Every trial of every tool is a fresh process (pyperf's own worker processes included). The
trials are interleaved: trial i runs every tool at every slowdown before trial i+1 starts, so
the machine's drift hits every tool alike. Prints, per tool, load and thread count: the share
of runs that failed at each slowdown (at 0% that is the false-failure rate) and the median
wall time of one run (the whole pytest/pyperf process, compile included).

    python benchmarks/vs_tools.py --trials 20
    python benchmarks/vs_tools.py --trials 20 --load 2 --threads 1,2

The kernel is compiled for ``llvm`` with the host's ``mcpu`` for pytest-benchmark and pyperf,
as a user of those tools would; tvmperf builds for the same ``mcpu`` less the features the OS
hides, so the three time the same machine code on a host that hides none (on one that hides
AVX-512, the plain ``mcpu`` build of the other two dies of SIGILL: run it elsewhere).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _harness import BUSY_TEST, run_pytest, verdicts
from _load import cpu_load

#: the busy kernel, built the way a pytest-benchmark or pyperf user would build it
KERNEL = '''
import os
import numpy as np
import tvm
from tvm import te

def build():
    steps = round(200 * (1 + float(os.environ.get("BUSY_SLOWDOWN_PCT", "0")) / 100))
    n = 1 << 14
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    target = tvm.target.Target({"kind": "llvm", "mcpu": str(tvm.target.codegen.llvm_get_system_cpu())})
    lib = tvm.compile(te.create_prim_func([a, out]), target=target)
    x = tvm.runtime.tensor(np.random.default_rng(0).standard_normal(n).astype("float32"))
    y = tvm.runtime.empty((n,), "float32")
    return lib, x, y
'''

PYTEST_BENCHMARK_TEST = KERNEL + '''
import pytest

@pytest.fixture(scope="module")
def kernel():
    return build()

def test_busy(benchmark, kernel):
    lib, x, y = kernel
    benchmark(lib, x, y)
'''

PYPERF_SCRIPT = KERNEL + '''
import pyperf

runner = pyperf.Runner()
lib, x, y = build()
runner.bench_func("busy", lib, x, y)
'''

TOOLS = ("tvmperf", "pytest-benchmark median:10%", "pytest-benchmark mean:5%", "pyperf compare_to")


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def run(cmd: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Tvmperf:
    def __init__(self, root: Path):
        self.dir = root / "tvmperf"
        self.dir.mkdir()
        (self.dir / "test_busy.py").write_text(BUSY_TEST)
        (self.dir / "pytest.ini").write_text("[pytest]\n")

    def record(self, env: dict) -> None:
        out = run_pytest(["--tvmperf-update"], cwd=self.dir, env=env)
        assert "1 passed" in out, out[-2000:]

    def trial(self, env: dict) -> dict[str, bool]:
        out = run_pytest(["--tvmperf-inconclusive=pass"], cwd=self.dir, env=env)
        found = verdicts(out)
        assert found, out[-2000:]
        return {"tvmperf": "regressed" in found.values()}


class PytestBenchmark:
    def __init__(self, root: Path):
        self.dir = root / "pytest_benchmark"
        self.dir.mkdir()
        (self.dir / "test_busy.py").write_text(PYTEST_BENCHMARK_TEST)
        (self.dir / "pytest.ini").write_text("[pytest]\n")

    def _cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:tvmperf", "-p", "no:cacheprovider", *args]

    def record(self, env: dict) -> None:
        out = run(self._cmd("--benchmark-autosave"), self.dir, env)
        assert out.returncode == 0, out.stdout[-2000:]

    def trial(self, env: dict) -> dict[str, bool]:
        # one --benchmark-compare-fail with both expressions: the option takes nargs='+' and a
        # second occurrence replaces the first
        out = run(self._cmd("--benchmark-compare=0001", "--benchmark-compare-fail", "median:10%", "mean:5%"),
                  self.dir, env)
        # a regression is raised from the terminal summary: pytest then prints no closing line
        assert out.returncode == 0 or "Performance has regressed" in out.stdout, out.stdout[-2000:]
        failed = set(re.findall(r"Field '(\w+)' has failed", out.stdout))
        return {"pytest-benchmark median:10%": "median" in failed, "pytest-benchmark mean:5%": "mean" in failed}


class Pyperf:
    def __init__(self, root: Path, processes: int):
        self.dir = root / "pyperf"
        self.dir.mkdir()
        (self.dir / "bench_busy.py").write_text(PYPERF_SCRIPT)
        self.speed = ["--fast"] if processes <= 0 else [f"--processes={processes}"]
        self.n = 0

    def _bench(self, env: dict, out: Path) -> None:
        done = run([sys.executable, "bench_busy.py", "--quiet", *self.speed, "-o", str(out)], self.dir, env)
        assert done.returncode == 0, done.stdout[-2000:]

    def record(self, env: dict) -> None:
        self._bench(env, self.dir / "base.json")

    def trial(self, env: dict) -> dict[str, bool]:
        self.n += 1
        out = self.dir / f"run{self.n}.json"
        self._bench(env, out)
        done = run([sys.executable, "-m", "pyperf", "compare_to", "base.json", out.name], self.dir, env)
        text = done.stdout
        significant = "not significant" not in text.lower()
        return {"pyperf compare_to": significant and "slower" in text}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--slowdowns", default="0,10,25,50")
    parser.add_argument("--load", type=int, default=0, help="competing CPU-bound processes during the trials")
    parser.add_argument("--budget", type=float, default=4 * 3600.0, help="seconds the load may run at most")
    parser.add_argument("--threads", default="1", help="TVM_NUM_THREADS values, e.g. 1,2")
    parser.add_argument("--pyperf-processes", type=int, default=0, help="pyperf worker processes (0: --fast)")
    args = parser.parse_args()
    slowdowns = [float(s) for s in args.slowdowns.split(",")]
    threads = [t for t in args.threads.split(",") if t]
    print(f"# {os.uname().nodename}: {_cpu()}, {os.cpu_count()} cores, load {args.load}, "
          f"loadavg at start {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tools = [Tvmperf(root), PytestBenchmark(root), Pyperf(root, args.pyperf_processes)]
        base = dict(os.environ, BUSY_SLOWDOWN_PCT="0", TVM_NUM_THREADS=threads[0])
        for tool in tools:  # baselines recorded idle, as a user records them
            tool.record(base)
        caught: dict[tuple, list[bool]] = defaultdict(list)
        walls: dict[tuple, list[float]] = defaultdict(list)
        with cpu_load(args.load, args.budget):
            for _ in range(args.trials):  # interleaved: every tool and slowdown within each trial
                for thread in threads:
                    for s in slowdowns:
                        env = dict(os.environ, BUSY_SLOWDOWN_PCT=str(s), TVM_NUM_THREADS=thread)
                        for tool in tools:
                            result, wall = timed(lambda tool=tool: tool.trial(env))
                            for name, failed in result.items():
                                caught[(name, thread, s)].append(failed)
                                walls[(name, thread)].append(wall)
        print(f"{'tool':30} {'thr':>3} " + " ".join(f"{f'+{s:g}%':>8}" for s in slowdowns) + f" {'s/run':>7}")
        for name in TOOLS:
            for thread in threads:
                cells = [caught[(name, thread, s)] for s in slowdowns]
                share = " ".join(f"{sum(c):>3}/{len(c):<4}" for c in cells)
                print(f"{name:30} {thread:>3} {share} {statistics.median(walls[(name, thread)]):7.1f}", flush=True)
        print(f"# failed runs / runs at each slowdown (+0% = false failures); loadavg at end {os.getloadavg()[0]:.2f}")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


if __name__ == "__main__":
    main()
