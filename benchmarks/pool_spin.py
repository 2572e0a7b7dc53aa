"""TVM's thread-pool spin (``TVM_THREAD_POOL_SPIN_COUNT``) at 2 TVM threads: what the plugin's
bound (1,000, measure/threads.py) changes against TVM's default (300,000), each in fresh processes.

1. ``times``: back-to-back calls, idle (and with no spin at all, 0): the seed's rgb2yuv (``parallel``, about 1 ms) and a
   small parallel kernel (about 1 us), median of 15 repeats (``time_evaluator``).
2. ``exit``: a process that ran a parallel kernel, beside ``--jobs`` CPU-bound jobs: seconds
   from its last line to its exit (TVM joins its pool's workers at exit, and a worker spins
   its yields first; each waits for the jobs' time slices). Capped at ``--cap`` s.
3. ``busy``: two rgb2yuv tests with a NumPy peer in one pytest process, idle: how many were
   timed at 1 thread because the process's own spinning worker made the machine look busy.

    python benchmarks/pool_spin.py                      # all three, about 10 min on 2 cores
    python benchmarks/pool_spin.py --parts exit --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import run_pytest
from _load import cpu_load

CHILD = """
import sys, time
import numpy as np, tvm
from tvm import te, s_tir
from pytest_tvmperf import workloads

def parallel(n, split):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
    sch = s_tir.Schedule(te.create_prim_func([a, b]))
    (i,) = sch.get_loops(sch.get_sblock("b"))
    sch.parallel(sch.split(i, [None, split])[0])
    f = tvm.compile(sch.mod, target="llvm")
    return f, [tvm.runtime.tensor(np.ones(n, "float32")), tvm.runtime.tensor(np.zeros(n, "float32"))]

def median_s(f, args, number):
    return float(np.median(f.mod.time_evaluator(f.mod.entry_name, tvm.cpu(), number=number, repeat=15)(*args).results))

if sys.argv[1] == "times":
    w = workloads.rgb2yuv("parallel")
    f = tvm.compile(tvm.IRModule({"main": w.program}), target="llvm")
    rgb = [tvm.runtime.tensor(np.random.rand(1920, 1080, 3).astype("float32")),
           tvm.runtime.tensor(np.zeros((1920, 1080, 3), "float32"))]
    g, small = parallel(1 << 14, 1024)
    print(median_s(f, rgb, 20), median_s(g, small, 2000))
else:
    g, args = parallel(1 << 20, 4096)
    for _ in range(50):
        g(*args)
    print(time.time(), flush=True)
"""

PEERS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"], vs_numpy=100)
def test_first(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel"))

@pytest.mark.tvmperf(executors=["prim"], vs_numpy=100)
def test_second(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel"))
"""

SETTINGS = {"TVM default (300,000)": "300000", "tvmperf (1,000)": "1000"}
#: the times part also shows no spin at all: a worker woken for every call
TIME_SETTINGS = {**SETTINGS, "no spin (0)": "0"}


def env_for(spin: str) -> dict:
    return dict(os.environ, TVM_NUM_THREADS="2", TVM_THREAD_POOL_SPIN_COUNT=spin)


def child(mode: str, spin: str, cap: float) -> tuple[str, float]:
    """The child's printed line and, for ``exit``, the seconds from it to the child's exit
    (capped); a child that printed nothing (it failed) stops the script with its status."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, text=True, env=env_for(spin))
    line = proc.stdout.readline()
    try:
        proc.wait(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if not line.strip():
        raise SystemExit(f"pool_spin: the {mode} child printed nothing (exit status {proc.returncode})")
    return line, time.time() - float(line) if mode == "exit" else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="times,exit,busy")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per setting and part")
    parser.add_argument("--jobs", type=int, default=4, help="CPU-bound jobs beside the exit part")
    parser.add_argument("--cap", type=float, default=150, help="the longest an exit is waited for, s")
    args = parser.parse_args()
    parts = args.parts.split(",")
    print(f"# {os.cpu_count()} cores; load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; {time.ctime()}")
    if "times" in parts:
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in TIME_SETTINGS}
        for _ in range(args.runs):  # the settings alternate, so a drift touches each alike
            for name, spin in TIME_SETTINGS.items():
                big, small = child("times", spin, args.cap)[0].split()
                got[name].append((float(big), float(small)))
        for name, runs in got.items():
            big = ", ".join(f"{b * 1e3:.3f}" for b, _ in runs)
            small = ", ".join(f"{s * 1e6:.2f}" for _, s in runs)
            print(f"times, idle, {name}: rgb2yuv {big} ms; small kernel {small} us (one figure per process)")
    if "exit" in parts:
        waits: dict[str, list[float]] = {name: [] for name in SETTINGS}
        with cpu_load(args.jobs, 3600):
            for _ in range(args.runs):
                for name, spin in SETTINGS.items():
                    waits[name].append(child("exit", spin, args.cap)[1])
        for name, secs in waits.items():
            shown = ", ".join(f"{s:.1f}" for s in secs)
            print(
                f"exit beside {args.jobs} jobs, {name}: {shown} s (cap {args.cap:g} s; median {statistics.median(secs):.1f})"
            )
    if "busy" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            (project / "test_peers.py").write_text(PEERS)
            (project / "pytest.ini").write_text("[pytest]\ntvmperf_simulate = off\n")
            base = f"--tvmperf-baselines={project / 'baselines'}"
            run_pytest(["--tvmperf-update", base], cwd=project, env=env_for("1000"))
            for name, spin in SETTINGS.items():
                demoted, ratios = 0, []
                for _ in range(args.runs):
                    run_pytest(["--tvmperf-json=out.json", base], cwd=project, env=env_for(spin))
                    for test in json.loads((project / "out.json").read_text())["tests"]:
                        demoted += "timed at 1" in json.dumps(test)
                        ratios.append(f"{test['peers'][0]['ratio']:.2f}")
                print(
                    f"busy, idle, {name}: {demoted} of {2 * args.runs} tests timed at 1 thread (machine busy); "
                    f"TVM / NumPy {' '.join(ratios)}"
                )


if __name__ == "__main__":
    main()
