"""Cost: the plugin's whole call phase for one test, against what a careful user would do
by hand, in fresh processes, as a user runs them.

Per workload:

- **plain**: a fresh Python process that compiles the workload (``tvm.compile`` /
  ``relax.build``) and makes one ``time_evaluator(number=1, repeat=15,
  min_repeat_ms=20)`` call: the seconds from the compile's start to the call's end
  (TVM's import left out on both sides: a test session imports TVM once for all its
  tests).
- **gate**: the test's call phase (``pytest --durations``) in a fresh pytest process,
  its baseline recorded before. Unchanged (the common case in CI: the baseline's own
  program, timed for the record only), with the simulated cost off and on (its counts
  are the baseline's). Then as a changed program is (``TVMPERF_SAME_PROGRAM=time``:
  timed side by side with the baseline's program rebuilt from its IR): the first pass,
  with the confirmation re-measure (forced by a 0.1% time threshold: the answer stays
  open), and with the simulated cost counted (``TVMPERF_SIMULATE_CACHE=off``) and from
  the plugin's cache of an earlier count (the default).
- **the peers, in the same run**: the same kernel as a pytest-benchmark test
  (``benchmark(f, *args)``, compiled in the test: its call phase) and as a pyperf script
  (``--fast``: the whole command's wall, its worker processes included).
- **where the time goes**: the first pass under cProfile, its call phase split into the
  plugin's steps (compile, the isolation child, the correctness checks and Hypothesis
  shapes, exact metrics, the baseline rebuilt from IR, the reference kernel, timing).

    python benchmarks/cost.py                 # idle
    python benchmarks/cost.py --load 2        # 2 CPU-bound jobs beside it (stop by themselves)
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _harness import ROOT
from _load import cpu_load

PROJECT_TEST = '''
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload, workloads


def reduction(n=2048, m=2048):
    """A ~5 ms TE reduction (the kind of kernel of the issue's measurement)."""
    a = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    b = te.compute((n,), lambda i: te.sum(a[i, k] * a[i, k], axis=k), name="B")
    return Workload(name="reduction", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [rng.random((n, m), dtype="float32")],
                    reference=lambda x: (x.astype("float64") ** 2).sum(axis=1).astype("float32"), rtol=1e-4)


@pytest.mark.tvmperf(executors=["prim"])
def test_reduction(tvmperf):
    tvmperf.check(reduction())


@pytest.mark.tvmperf(executors=["prim"])
def test_rgb2yuv(tvmperf):
    tvmperf.check(workloads.rgb2yuv())


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
'''

PLAIN = """
import sys, time
import numpy as np
import tvm
from tvm import relax
sys.path.insert(0, {project!r})
from pytest_tvmperf import workloads
from test_cost import reduction

name = sys.argv[1]
w = {{"test_reduction": reduction, "test_rgb2yuv": workloads.rgb2yuv, "test_mlp": lambda: workloads.mlp(batch=1)}}[name]()
inputs = w.inputs()
args = w.call_args(inputs)
expected = w.expected(inputs)
start = time.perf_counter()
dev = tvm.cpu()
from pytest_tvmperf.builder.targets import resolve_target
target = resolve_target("llvm").tvm_target()  # the host's target, as the gate builds for it
if name == "test_mlp":
    exe = tvm.compile(w.program, target=target)
    vm = relax.VirtualMachine(exe, dev)
    vm.set_input(w.entry, *[tvm.runtime.tensor(a, dev) for a in args])
    f = vm.time_evaluator("invoke_stateful", dev, number=1, repeat=15, min_repeat_ms=20)
    f(w.entry)
else:
    lib = tvm.compile(w.program, target=target)
    tensors = [tvm.runtime.tensor(a, dev) for a in args] + [tvm.runtime.empty(e.shape, str(e.dtype), dev) for e in expected]
    f = lib.mod.time_evaluator(w.entry, dev, number=1, repeat=15, min_repeat_ms=20)
    f(*tensors)
print("PLAIN", time.perf_counter() - start)
"""

#: the same three kernels as a pytest-benchmark user and a pyperf user would time them
PEER_KERNELS = """
import sys
import tvm
from tvm import relax
sys.path.insert(0, {project!r})
from pytest_tvmperf import workloads
from pytest_tvmperf.builder.targets import resolve_target
from test_cost import reduction

MAKERS = {{"test_reduction": reduction, "test_rgb2yuv": workloads.rgb2yuv, "test_mlp": lambda: workloads.mlp(batch=1)}}


def build(name):
    w = MAKERS[name]()
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(a, dev) for a in w.call_args(w.inputs())]
    target = resolve_target("llvm").tvm_target()
    if name == "test_mlp":
        return relax.VirtualMachine(tvm.compile(w.program, target=target), dev)[w.entry], args
    outs = [tvm.runtime.empty(e.shape, str(e.dtype), dev) for e in w.expected(w.inputs())]
    return tvm.compile(w.program, target=target).mod[w.entry], args + outs
"""

PYTEST_BENCHMARK = (
    PEER_KERNELS
    + """

def test_reduction(benchmark):
    f, args = build("test_reduction")
    benchmark(f, *args)


def test_rgb2yuv(benchmark):
    f, args = build("test_rgb2yuv")
    benchmark(f, *args)


def test_mlp(benchmark):
    f, args = build("test_mlp")
    benchmark(f, *args)
"""
)

PYPERF = (
    PEER_KERNELS
    + """
import pyperf

runner = pyperf.Runner(add_cmdline_args=lambda cmd, args: cmd.extend(("--kernel", args.kernel)))
runner.argparser.add_argument("--kernel", choices=sorted(MAKERS), required=True)
f, args = build(runner.parse_args().kernel)
runner.bench_func("kernel", f, *args)
"""
)

TESTS = ("test_reduction", "test_rgb2yuv", "test_mlp")
#: the plugin's steps, by the function that does each (cumulative seconds under cProfile)
STEPS = (
    ("compile", "executors.py", "compile"),
    ("isolation child (run once)", "prepare.py", "_run_in_child"),
    ("correctness (NumPy reference)", "prepare.py", "check_outputs"),
    ("Hypothesis shapes", "prepare.py", "_check_symbolic"),
    ("exact metrics (+ simulated)", "pipeline.py", "exact_metrics"),
    ("per-kernel times (diagnosis)", "timer.py", "kernel_times"),
    ("baseline rebuilt from IR", "sources.py", "baseline_source"),
    ("reference kernel (compile)", "session.py", "reference_sampler"),
    ("export for a/b", "sources.py", "export"),
    ("timing (a/b rounds)", "timer.py", "__call__"),
)


def pytest_cmd(*args: str) -> list[str]:
    # the project's test file named: the peers' folder beside it is not collected (its
    # pytest-benchmark tests would run too, and one of theirs be read as the gate's call phase)
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::UserWarning",
        "--durations=0",
        "-vv",
        *args,
        "test_cost.py",
    ]


def call_phase(output: str, test: str) -> float:
    found = re.search(rf"([\d.]+)s call\s+\S*{test}", output)
    if not found:
        raise SystemExit(f"no call duration of {test} in:\n{output[-3000:]}")
    return float(found.group(1))


def run(cmd: list[str], cwd: Path, env: dict) -> str:
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout


def breakdown(profile: Path) -> dict[str, float]:
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    got: dict[str, float] = {}
    for label, file, func in STEPS:
        got[label] = sum(
            v[3] for (f, _, name), v in stats.items() if name == func and f.endswith(file) and "pytest_tvmperf" in f
        )
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", type=int, default=0, help="competing CPU-bound processes")
    parser.add_argument("--only", choices=TESTS, help="one workload")
    parser.add_argument(
        "--repeat", type=int, default=3, help="fresh processes per cell; the median is shown (default 3)"
    )
    args = parser.parse_args()
    tests = (args.only,) if args.only else TESTS
    with tempfile.TemporaryDirectory() as tmp, cpu_load(args.load, 3600):
        project = Path(tmp)
        (project / "test_cost.py").write_text(PROJECT_TEST)
        env = dict(os.environ, TVMPERF_CACHE_DIR=str(project / "cache"), PYTHONPATH=str(ROOT))
        run(pytest_cmd("--tvmperf-update"), project, env)  # the baselines (and the simulated counts, stored)
        (project / "peers").mkdir()
        (project / "peers" / "test_bench.py").write_text(PYTEST_BENCHMARK.format(project=str(project)))
        (project / "peers" / "pytest.ini").write_text("[pytest]\n")
        (project / "peers" / "bench_pyperf.py").write_text(PYPERF.format(project=str(project)))
        rows = []
        steps: dict[str, dict[str, float]] = {}
        for test in tests:
            plain = run([sys.executable, "-c", PLAIN.format(project=str(project)), test], project, env)
            found = re.search(r"PLAIN ([\d.]+)", plain)
            if not found:
                raise SystemExit(f"the plain measurement of {test} failed:\n{plain[-3000:]}")
            t_plain = float(found.group(1))
            select = ["-k", test]

            def cell(*opts: str, env: dict = env, select: list = select, test: str = test) -> float:
                return statistics.median(
                    call_phase(run(pytest_cmd(*select, *opts), project, env), test) for _ in range(args.repeat)
                )

            first = cell("--tvmperf-simulate=off")  # unchanged: the baseline's own program
            unchanged_sim = cell("--tvmperf-simulate=on")  # its simulated counts are the baseline's
            # a changed program's path: timed side by side with the baseline's (rebuilt from its
            # IR), as TVMPERF_SAME_PROGRAM=time makes the unchanged one
            changed = dict(env, TVMPERF_SAME_PROGRAM="time")
            side = cell("--tvmperf-simulate=off", env=changed)
            confirmed = cell("--tvmperf-simulate=off", "--tvmperf-threshold=time=0.1%", env=changed)
            counted = cell("--tvmperf-simulate=on", env=dict(changed, TVMPERF_SIMULATE_CACHE="off"))
            stored = cell("--tvmperf-simulate=on", env=changed)
            profile = project / f"{test}.prof"
            out = run(
                [
                    sys.executable,
                    "-m",
                    "cProfile",
                    "-o",
                    str(profile),
                    *pytest_cmd(*select, "--tvmperf-simulate=off")[1:],
                ],
                project,
                env,
            )
            steps[test] = {"call phase (under cProfile)": call_phase(out, test), **breakdown(profile)}
            peers = project / "peers"
            bench = call_phase(
                run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:tvmperf",
                        "-p",
                        "no:cacheprovider",
                        "--durations=0",
                        "-vv",
                        "-k",
                        test,
                        "test_bench.py",
                    ],
                    peers,
                    env,
                ),
                test,
            )
            start = time.perf_counter()
            done = run(
                [
                    sys.executable,
                    "bench_pyperf.py",
                    "--fast",
                    "--quiet",
                    "--kernel",
                    test,
                    "-o",
                    str(peers / f"{test}.json"),
                ],
                peers,
                env,
            )
            pyperf_s = time.perf_counter() - start
            if "Mean" not in done and not (peers / f"{test}.json").exists():
                raise SystemExit(f"pyperf failed on {test}:\n{done[-3000:]}")
            rows.append((test, t_plain, first, unchanged_sim, side, confirmed, counted, stored, bench, pyperf_s))
    load = f"load {args.load} (CPU-bound jobs beside it on {os.cpu_count()} cores)" if args.load else "idle"
    print(
        f"cost of one test's call phase, {load}; median of {args.repeat} fresh processes per cell; "
        f"ratio to plain = compile + one time_evaluator(repeat=15, min_repeat_ms=20)"
    )
    print(
        f"{'test':16} {'plain':>8} {'unchanged':>15} {'+ sim. (base)':>15} {'changed: a/b':>15} {'+ confirmation':>15}"
        f" {'+ simulated':>15} {'+ sim. cached':>15} {'pytest-benchmark':>17} {'pyperf --fast':>15}"
    )
    for test, t_plain, *gate in rows:
        cells = " ".join(f"{g:6.2f} s {g / t_plain:4.1f}x" for g in gate)
        print(f"{test:16} {t_plain:6.2f} s {cells}")
    print(
        "unchanged: the baseline's own program (the default path: 6 rounds of it alone, no reference "
        "kernel), + its simulated counts (the baseline's); changed: the same test with "
        "TVMPERF_SAME_PROGRAM=time, timed side by side with the baseline's program rebuilt from its IR as a "
        "changed program is, + the confirmation forced (0.1% threshold), + the simulated cost counted "
        "(valgrind), + counted once before (the plugin's cache)"
    )
    print(
        "pytest-benchmark: its test's call phase (compile + benchmark(f, *args), its default rounds); "
        "pyperf --fast: the whole command (its 10 worker processes each import TVM and compile)"
    )
    print(
        "\nwhere the first pass's call phase goes (cumulative seconds under cProfile; steps nest: the "
        "isolation child and the correctness checks are inside compile's neighbour, prepare):"
    )
    labels = list(next(iter(steps.values())))
    print(f"{'step':32}" + "".join(f"{t:>16}" for t in steps))
    for label in labels:
        print(f"{label:32}" + "".join(f"{steps[t][label]:14.2f} s" for t in steps))
    print(
        textwrap.dedent("""
        plain: its own interval says nothing about another process; the gate's a/b interval compares
        with the baseline's own program timed side by side (docs/reliability.md).""")
    )


if __name__ == "__main__":
    main()
