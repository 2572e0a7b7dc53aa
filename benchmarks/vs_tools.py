"""Side by side: this plugin, pytest-benchmark and pyperf on the same kernels, unchanged and slowed.

Three kernels, each slowed by a real compute change (a bigger problem, not a sleep):

- ``reduction``: a user-style TE reduction, K inner steps per element (K = 200 * (1 + s));
- ``rgb2yuv``: the seed's RGB -> YUV operator with its tuned CPU schedule (``parallel``:
  uses every TVM thread), 960 x H pixels (H = 8 * round(68 * (1 + s)): 544 rows, 7 MB in and
  out, so that +50% stays in the cache as the base does);
- ``mlp``: the seed's dense+bias 1024-512-256-128 MLP, weights bound, on the Relax VM
  (bytecode), batch round(16 * (1 + s)).

Each is gated three ways, each as its own docs teach:

1. tvmperf: ``pytest --tvmperf-update`` once, then ``pytest`` per run; failed = ``regressed``.
2. pytest-benchmark: ``benchmark(f, *args)``; ``--benchmark-autosave`` once, then per run
   ``--benchmark-compare=0001 --benchmark-compare-fail median:10% mean:5%``; failed = the test
   and field named in its "Performance has regressed" lines (median:10% and mean:5% are told
   apart from the one run).
3. pyperf: a ``pyperf.Runner().bench_func`` script per kernel (``--fast`` unless
   ``--pyperf-processes``), ``-o`` a JSON per run, then ``pyperf compare_to base.json run.json``;
   failed = significant (pyperf's own test) and slower; also shown: significant and at least
   10% slower (as ``compare_to --min-speed=10`` would list).

Every run of every tool is a fresh process (pyperf's own worker processes included). The runs
are interleaved: round i runs every tool at every thread count and slowdown before round i+1
starts, so the machine's drift hits every tool alike. pyperf costs about 40 s per kernel here
(its --fast mode starts 10 worker processes, each of which imports TVM, 2.7 s, and compiles),
so it takes part in the first ``--pyperf-rounds`` rounds only, and runs the slowdowns in the
first ``--pyperf-slow-rounds``. Each round runs one block per ``--loads`` value (CPU-bound jobs
started for the block, stopped at its end), so idle and busy runs alternate too.

Printed, per tool and thread count: the runs that failed at each slowdown (+0% = false failures,
counted per kernel), the A/A spread (the largest |ratio - 1| the tool reported between an
unchanged kernel and its baseline, over the A/A runs), and the wall time of one kernel's run
(the process's wall over its kernels: start, TVM import, compile and measurement). Before the
rounds, each slowdown's true size is measured once, in one process, alternating the two builds.

    python benchmarks/vs_tools.py    # 7 rounds, loads 0 and 2, threads 1 and 2 (about 90 min on 2 cores)

pytest-benchmark and pyperf build for ``llvm`` with the host's ``mcpu``, as their users would;
tvmperf builds for the same ``mcpu`` less the features the OS hides, so the three time the same
machine code on a host that hides none (on one that hides AVX-512, the plain ``mcpu`` build of
the other two dies of SIGILL: run it elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from _harness import BUSY_WORKLOAD, ROOT, run_pytest, time_status, verdicts
from _load import cpu_load

KERNEL_NAMES = ("reduction", "rgb2yuv", "mlp")

#: the kernels, built the way a pytest-benchmark or pyperf user would build them
KERNELS = """
import os
import numpy as np
import tvm
from tvm import te
from pytest_tvmperf import workloads


def slowdown():
    return float(os.environ.get("BUSY_SLOWDOWN_PCT", "0")) / 100


def _target():
    return tvm.target.Target({"kind": "llvm", "mcpu": str(tvm.target.codegen.llvm_get_system_cpu())})


def reduction(s):
    steps, n = round(200 * (1 + s)), 1 << 14
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    lib = tvm.compile(te.create_prim_func([a, out]), target=_target())
    x = tvm.runtime.tensor(np.random.default_rng(0).standard_normal(n).astype("float32"))
    return lib, [x, tvm.runtime.empty((n,), "float32")]


def rgb2yuv(s):
    w = workloads.rgb2yuv("parallel", width=960, height=8 * round(68 * (1 + s)))
    lib = tvm.compile(w.program, target=_target())
    (x,) = w.inputs()
    return lib, [tvm.runtime.tensor(x), tvm.runtime.empty(x.shape, "float32")]


def mlp(s):
    w = workloads.mlp(batch=round(16 * (1 + s)))
    vm = tvm.relax.VirtualMachine(tvm.compile(w.program, target=_target()), tvm.cpu())
    (x,) = w.inputs()
    return vm["forward"], [tvm.runtime.tensor(x)]


KERNELS = {"reduction": reduction, "rgb2yuv": rgb2yuv, "mlp": mlp}
"""

#: the busy workload of benchmarks/_harness.py, and one test per kernel
TVMPERF_TEST = (
    BUSY_WORKLOAD
    + """
from pytest_tvmperf import workloads

S = float(os.environ.get("BUSY_SLOWDOWN_PCT", "0")) / 100


@pytest.mark.tvmperf(executors=["prim"])
def test_reduction(tvmperf):
    tvmperf.check(busy(round(200 * (1 + S))))


@pytest.mark.tvmperf(executors=["prim"])
def test_rgb2yuv(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel", width=960, height=8 * round(68 * (1 + S))))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=round(16 * (1 + S))))
"""
)

PYTEST_BENCHMARK_TEST = (
    KERNELS
    + """
import pytest


def test_reduction(benchmark):
    f, args = KERNELS["reduction"](slowdown())
    benchmark(f, *args)


def test_rgb2yuv(benchmark):
    f, args = KERNELS["rgb2yuv"](slowdown())
    benchmark(f, *args)


def test_mlp(benchmark):
    f, args = KERNELS["mlp"](slowdown())
    benchmark(f, *args)
"""
)

PYPERF_SCRIPT = (
    KERNELS
    + """
import pyperf


def add_kernel(cmd, args):
    cmd.extend(("--kernel", args.kernel))


runner = pyperf.Runner(add_cmdline_args=add_kernel)
runner.argparser.add_argument("--kernel", choices=sorted(KERNELS), required=True)
args = runner.parse_args()
f, call_args = KERNELS[args.kernel](slowdown())
runner.bench_func(args.kernel, f, *call_args)
"""
)

#: each slowdown's true size: both builds in one process, timed alternately
TRUTH_SCRIPT = (
    KERNELS
    + """
import json, statistics, sys, time

def per_call(f, args, seconds=0.2):
    f(*args)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        f(*args)
        n += 1
    return (time.perf_counter() - start) / n

out = {}
for name, make in KERNELS.items():
    base = make(0.0)
    for s in [float(v) for v in sys.argv[1].split(",") if float(v) > 0]:
        slow = make(s / 100)
        ratios = [per_call(*slow) / per_call(*base) for _ in range(7)]
        out[f"{name} {s:g}"] = statistics.median(ratios)
print("TRUTH " + json.dumps(out))
"""
)


@dataclass(frozen=True)
class Result:
    """One kernel's outcome in one run of one tool (criterion)."""

    failed: bool
    ratio: float | None  # the tool's own time now / time of its baseline


def run(cmd: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Tvmperf:
    #: the test's verdict (any metric: a compute change also moves exact counts such as
    #: storage_bytes), and its time metric's own verdict (what a load can hide)
    criteria = ("tvmperf", "tvmperf time")

    def __init__(self, root: Path):
        self.dir = root / "tvmperf"
        self.dir.mkdir()
        (self.dir / "test_kernels.py").write_text(TVMPERF_TEST)
        (self.dir / "pytest.ini").write_text("[pytest]\n")

    def record(self, env: dict) -> None:
        out = run_pytest(["--tvmperf-update", "--tvmperf-simulate=off"], cwd=self.dir, env=env)
        assert f"{len(KERNEL_NAMES)} passed" in out, out[-3000:]

    def trial(self, env: dict) -> dict[str, dict[str, Result]]:
        out = run_pytest(
            ["--tvmperf-inconclusive=pass", "--tvmperf-simulate=off", "--tvmperf-json=run.json"], cwd=self.dir, env=env
        )
        found = verdicts(out)
        assert len(found) == len(KERNEL_NAMES), out[-3000:]
        tests = json.loads((self.dir / "run.json").read_text())["tests"]
        whole, timed = {}, {}
        for entry in tests:
            name = entry["test_id"].split("[")[0].removeprefix("test_")
            ratio = (entry.get("time") or {}).get("ratio")
            whole[name] = Result(entry["verdict"] == "regressed", ratio)
            timed[name] = Result(time_status(entry) == "regressed", ratio)
            if whole[name].failed:  # which kernel, how far and why: a false failure can be read back from the log
                time_cell = entry.get("time") or {}
                where = f"slowdown {env.get('BUSY_SLOWDOWN_PCT', '0')}%, threads {env.get('TVM_NUM_THREADS', '-')}"
                shown = {k: time_cell.get(k) for k in ("ratio", "low", "high")}
                failing = [m for m in entry.get("metrics") or [] if m.get("status") == "regressed"]
                shown["regressed"] = {m["metric"]: m.get("note") or m.get("current") for m in failing}
                print(f"# tvmperf failed {name} ({where}): {json.dumps(shown)}", file=sys.stderr, flush=True)
        return {"tvmperf": whole, "tvmperf time": timed}


class PytestBenchmark:
    criteria = ("pytest-benchmark median:10%", "pytest-benchmark mean:5%")

    def __init__(self, root: Path):
        self.dir = root / "pytest_benchmark"
        self.dir.mkdir()
        (self.dir / "test_kernels.py").write_text(PYTEST_BENCHMARK_TEST)
        (self.dir / "pytest.ini").write_text("[pytest]\n")

    def _cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:tvmperf", "-p", "no:cacheprovider", *args]

    def record(self, env: dict) -> None:
        out = run(self._cmd("--benchmark-autosave"), self.dir, env)
        assert out.returncode == 0, out.stdout[-3000:]
        (saved,) = self.dir.glob(".benchmarks/*/0001_*.json")
        self.base = {b["name"].removeprefix("test_"): b["stats"] for b in json.loads(saved.read_text())["benchmarks"]}

    def trial(self, env: dict) -> dict[str, dict[str, Result]]:
        # one --benchmark-compare-fail with both expressions: the option takes nargs='+' and a
        # second occurrence replaces the first
        out = run(
            self._cmd(
                "--benchmark-compare=0001",
                "--benchmark-compare-fail",
                "median:10%",
                "mean:5%",
                "--benchmark-json=run.json",
            ),
            self.dir,
            env,
        )
        # a regression is raised from the terminal summary: pytest then prints no closing line
        assert out.returncode == 0 or "Performance has regressed" in out.stdout, out.stdout[-3000:]
        failed = set(re.findall(r"test_(\w+)[^\n]*? - Field '(\w+)' has failed", out.stdout))
        now = {
            b["name"].removeprefix("test_"): b["stats"]
            for b in json.loads((self.dir / "run.json").read_text())["benchmarks"]
        }
        return {
            f"pytest-benchmark {field}:{limit}": {
                k: Result((k, field) in failed, now[k][field] / self.base[k][field]) for k in KERNEL_NAMES
            }
            for field, limit in (("median", "10%"), ("mean", "5%"))
        }


class Pyperf:
    criteria = ("pyperf compare_to", "pyperf compare_to, >= 10%")

    def __init__(self, root: Path, processes: int):
        self.dir = root / "pyperf"
        self.dir.mkdir()
        (self.dir / "bench_kernel.py").write_text(PYPERF_SCRIPT)
        self.speed = ["--fast"] if processes <= 0 else [f"--processes={processes}"]
        self.n = 0

    def _bench(self, env: dict, kernel: str, out: Path) -> None:
        # pyperf's workers get a filtered environment: without --inherit-environ they would run
        # the unchanged kernel at TVM's default thread count whatever this run asked for
        done = run(
            [
                sys.executable,
                "bench_kernel.py",
                "--kernel",
                kernel,
                "--quiet",
                *self.speed,
                "-o",
                str(out),
                "--inherit-environ=BUSY_SLOWDOWN_PCT,TVM_NUM_THREADS,PYTHONPATH",
            ],
            self.dir,
            env,
        )
        assert done.returncode == 0, done.stdout[-3000:]

    def record(self, env: dict) -> None:
        for kernel in KERNEL_NAMES:
            self._bench(env, kernel, self.dir / f"base_{kernel}.json")

    def trial(self, env: dict) -> dict[str, dict[str, Result]]:
        self.n += 1
        plain, tenth = {}, {}
        for kernel in KERNEL_NAMES:
            out = self.dir / f"run{self.n}_{kernel}.json"
            self._bench(env, kernel, out)
            text = run(
                [sys.executable, "-m", "pyperf", "compare_to", f"base_{kernel}.json", out.name], self.dir, env
            ).stdout
            found = re.search(r"([\d.]+)x (slower|faster)", text)
            ratio = None if not found else float(found.group(1)) ** (1 if found.group(2) == "slower" else -1)
            significant = "not significant" not in text.lower() and ratio is not None
            plain[kernel] = Result(significant and ratio > 1, ratio)
            tenth[kernel] = Result(significant and ratio >= 1.10, ratio)
        return {"pyperf compare_to": plain, "pyperf compare_to, >= 10%": tenth}


def true_slowdowns(slowdowns: list[float], env: dict, root: Path) -> dict[str, float]:
    (root / "truth.py").write_text(TRUTH_SCRIPT)
    done = run([sys.executable, "truth.py", ",".join(f"{s:g}" for s in slowdowns)], root, env)
    found = re.search(r"TRUTH (.*)", done.stdout)
    assert found, done.stdout[-3000:]
    return json.loads(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=7, help="A/A rounds (each: every kernel, tool, load and thread count)"
    )
    parser.add_argument("--slow-rounds", type=int, default=2, help="of those, how many also run every slowdown")
    parser.add_argument("--pyperf-rounds", type=int, default=2, help="of those, how many pyperf takes part in")
    parser.add_argument(
        "--pyperf-slow-rounds", type=int, default=1, help="of those, how many pyperf runs the slowdowns in"
    )
    parser.add_argument("--slowdowns", default="10,25,50")
    parser.add_argument(
        "--loads", default="0,2", help="competing CPU-bound processes, one value per block of each round"
    )
    parser.add_argument("--threads", default="1,2", help="TVM_NUM_THREADS values")
    parser.add_argument("--pyperf-processes", type=int, default=0, help="pyperf worker processes (0: --fast)")
    parser.add_argument("--tools", default="tvmperf,pytest-benchmark,pyperf", help="which tools to run")
    args = parser.parse_args()
    chosen = {t.strip() for t in args.tools.split(",")}
    slowdowns = [0.0] + [float(s) for s in args.slowdowns.split(",") if s]
    threads = [t for t in args.threads.split(",") if t]
    loads = [int(n) for n in args.loads.split(",") if n]
    started = time.time()
    print(
        f"# {_cpu()}, {os.cpu_count()} cores; loadavg at start {os.getloadavg()[0]:.2f}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        flush=True,
    )
    env0 = dict(os.environ, PYTHONPATH=str(ROOT), BUSY_SLOWDOWN_PCT="0", TVM_NUM_THREADS=threads[0])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        truth = true_slowdowns(slowdowns, env0, root)
        print(
            "# true slowdowns (one process, both builds alternately): "
            + ", ".join(f"{k} +{s:g}%: {truth[f'{k} {s:g}'] - 1:+.0%}" for k in KERNEL_NAMES for s in slowdowns[1:]),
            flush=True,
        )
        # a project per thread count, its baselines recorded with that count and without load,
        # as a user records them
        tools_of: dict[str, list] = {}
        for thread in threads:
            (root / thread).mkdir()
            made = {
                "tvmperf": lambda t=thread: Tvmperf(root / t),
                "pytest-benchmark": lambda t=thread: PytestBenchmark(root / t),
                "pyperf": lambda t=thread: Pyperf(root / t, args.pyperf_processes),
            }
            tools_of[thread] = [make() for name, make in made.items() if name in chosen]
            for tool in tools_of[thread]:
                tool.record(dict(env0, TVM_NUM_THREADS=thread))
        caught: dict[tuple, list[bool]] = defaultdict(list)
        spread: dict[tuple, list[float]] = defaultdict(list)
        walls: dict[tuple, list[float]] = defaultdict(list)
        loadavg: dict[int, list[float]] = defaultdict(list)
        for i in range(args.rounds):
            for load in loads:
                with cpu_load(load, 3600.0):
                    for thread in threads:
                        for s in slowdowns if i < args.slow_rounds else slowdowns[:1]:
                            env = dict(env0, BUSY_SLOWDOWN_PCT=str(s), TVM_NUM_THREADS=thread)
                            for tool in tools_of[thread]:
                                if isinstance(tool, Pyperf) and (
                                    i >= args.pyperf_rounds or (s and i >= args.pyperf_slow_rounds)
                                ):
                                    continue
                                start = time.perf_counter()
                                try:
                                    results = tool.trial(env)
                                except AssertionError as failed:  # a run that gave no answer: shown, not counted
                                    print(
                                        f"# {type(tool).__name__} load {load} threads {thread} +{s:g}%: no answer:\n{failed}",
                                        flush=True,
                                    )
                                    continue
                                wall = (time.perf_counter() - start) / len(KERNEL_NAMES)
                                loadavg[load].append(os.getloadavg()[0])
                                for criterion, per_kernel in results.items():
                                    walls[(criterion, load, thread)].append(wall)
                                    for _kernel, result in per_kernel.items():
                                        caught[(criterion, load, thread, s)].append(result.failed)
                                        if s == 0 and result.ratio is not None:
                                            spread[(criterion, load, thread)].append(abs(result.ratio - 1))
            print(f"# round {i + 1} done, {time.time() - started:.0f} s", flush=True)
            # the table after every round: a run stopped early still reports what it measured
            criteria = [c for tool in tools_of[threads[0]] for c in tool.criteria]
            table(criteria, loads, threads, slowdowns, caught, spread, walls, loadavg, started)


def table(
    criteria: list[str],
    loads: list[int],
    threads: list[str],
    slowdowns: list[float],
    caught: dict[tuple, list[bool]],
    spread: dict[tuple, list[float]],
    walls: dict[tuple, list[float]],
    loadavg: dict[int, list[float]],
    started: float,
) -> None:
    print(
        f"\n{'tool (failed when)':28} {'load':>4} {'thr':>3} "
        + " ".join(f"{f'+{s:g}%':>7}" for s in slowdowns)
        + f" {'A/A spread':>10} {'s/kernel':>8}"
    )
    for name in criteria:
        for load in loads:
            for thread in threads:
                if not walls[(name, load, thread)]:
                    continue
                cells = " ".join(
                    f"{sum(c):>3}/{len(c):<3}" for c in (caught[(name, load, thread, s)] for s in slowdowns)
                )
                worst = max(spread[(name, load, thread)], default=float("nan"))
                wall = statistics.median(walls[(name, load, thread)])
                print(f"{name:28} {load:>4} {thread:>3} {cells} {worst:>9.1%} {wall:8.1f}", flush=True)
    print(
        f"# failed / runs at each slowdown, per kernel (+0% = false failures); A/A spread = largest |ratio - 1| "
        f"over the A/A runs; s/kernel = median wall of a run / its {len(KERNEL_NAMES)} kernels; load = CPU-bound "
        "jobs beside it; loadavg during the runs: "
        + ", ".join(f"load {n}: {min(v):.1f}-{max(v):.1f}" for n, v in loadavg.items())
        + f"; {(time.time() - started) / 60:.0f} min in all",
        flush=True,
    )


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


if __name__ == "__main__":
    main()
