"""Simulated cost (measure/simulate.py): what it costs, whether its counts repeat, and
what it detects. Each measurement is one fresh process with its own measuring process
under callgrind (``--child``), so start-up is paid and timed every time.

    python benchmarks/simulate.py                       # everything below, ~10 min on 2 loaded cores
    python benchmarks/simulate.py --runs 2 --load 0     # quicker

Prints: the measuring process's start-up and each kernel's simulation time; the per-kernel
counts of ``--runs`` fresh processes with ``--load`` CPU-bound jobs running (identical?),
then with ``TVM_NUM_THREADS=1`` and with the wall-time build for the host ``mcpu``
(the simulated build stays pinned, so the counts must not move); the known-cost harness
(+1/+2/+5/+10% more steps) against a 1% ``cpu_instructions`` gate; and a memory-layout
regression (a matmul reading B column-wise instead of a transposed copy row-wise) in
``est_cycles`` next to ``cpu_instructions``.

    python benchmarks/simulate.py --order               # the order table only, ~3-4 min

``--order``: a suite of four tests (multiply 64x64 on ``prim``, the MLP on ``vm-bytecode``,
the small ONNX MLP on ``vm-bytecode`` and ``vm-compiled``) run as plugin sessions in fresh
processes: in file order, each test alone (``-k``), in reverse order, and under ``-n 2``;
per test, its counts in each (``cpu_instructions`` total and its ``[runtime]`` line,
``est_cycles`` total) and whether every per-kernel count and exact metric was identical.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _load import cpu_load  # noqa: E402

SLOWDOWNS = (0, 1, 2, 5, 10)


def busy(steps: int, n: int = 1 << 14):
    """The known-cost harness's workload (benchmarks/_harness.py): K steps per element."""
    from tvm import te

    from pytest_tvmperf import Workload

    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    return Workload(
        name=f"busy_{steps}_{n}",
        program=te.create_prim_func([a, out]).with_attr("global_symbol", "busy"),
        make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
        reference=lambda x: x,
        entry="busy",
    )


def matmul(n: int, transposed_b: bool):
    """C = A @ B; B given as (K, N) (read column-wise in the k loop) or as its transpose (N, K)."""
    from tvm import te

    from pytest_tvmperf import Workload

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    get = (lambda i, j: b[j, i]) if transposed_b else (lambda i, j: b[i, j])
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * get(k, j), axis=k), name="C")
    return Workload(
        name=f"matmul_{'bt' if transposed_b else 'b'}",
        program=te.create_prim_func([a, b, c]).with_attr("global_symbol", "mm"),
        make_inputs=lambda rng, dims: [rng.standard_normal((n, n)).astype("float32")] * 2,
        reference=lambda x, y: x,
        entry="mm",
    )


def child(out: Path, host_mcpu: bool, only: str = "") -> None:
    """One fresh process: compile, then simulate each workload in one measuring process."""

    from pytest_tvmperf import workloads
    from pytest_tvmperf.builder.executor_choice import get_executor
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.measure.simulate import SimulatedCost

    target = resolve_target("llvm")  # the wall-time build's target; the simulated build is pinned regardless
    # K a multiple of LLVM's 32-wide vectorized, unrolled k loop (at K = 200, +2% steps ran
    # the same instructions: the remainder loop absorbed them; README)
    cases = [("busy", busy(round(3200 * (1 + s / 100)), 1 << 10), "prim", f"busy3200+{s}%") for s in SLOWDOWNS]
    # +s% work that runs the same code: s% more elements, the same K (the instructions of the
    # K-scaled harness do not follow K: LLVM unrolls and vectorizes each trip count its own way)
    cases += [("busyN", busy(320, round(10000 * (1 + s / 100))), "prim", f"busyN+{s}%") for s in SLOWDOWNS]
    cases += [
        ("mm", matmul(128, False), "prim", "matmul_B_colwise"),
        ("mm", matmul(128, True), "prim", "matmul_Bt_rowwise"),
        ("mul", workloads.multiply(256, 256), "prim", "multiply_256"),
        ("mlp", workloads.mlp(batch=1), "vm-bytecode", "mlp_vm_bytecode"),
    ]
    cases = [c for c in cases if not only or c[3].startswith(tuple(only.split(",")))]
    source = SimulatedCost()
    result: dict = {"cases": {}}
    try:
        for _, workload, executor, label in cases:
            inputs = workload.inputs()
            args = [*inputs, *(a for _, a in workload.params)]
            expected = workload.expected(inputs)
            out_specs = [(e.shape, str(e.dtype)) for e in expected]
            compiled = None
            if host_mcpu:  # the wall-time build, as the plugin makes it (must not change the counts)
                compiled = get_executor(executor).compile(workload, target)
            prep = Prepared(workload, executor, target, compiled, inputs, args, expected, out_specs, 0.0)
            started = time.monotonic()
            counts = source.collect(prep, None)
            result["cases"][label] = {"s": time.monotonic() - started, **counts}
            if "startup_s" not in result and source._process is not None:
                result["startup_s"] = source._process.startup_s
    finally:
        source.close()
    out.write_text(json.dumps(result, indent=1, sort_keys=True))


def run_child(out: Path, env: dict, host_mcpu: bool = False, only: str = "") -> dict:
    cmd = [sys.executable, __file__, "--child", str(out), "--only", only] + (["--host-mcpu"] if host_mcpu else [])
    subprocess.run(cmd, env=env, check=True)
    return json.loads(out.read_text())


def counts_only(result: dict) -> dict:
    return {label: {m: c[m] for m in ("cpu_instructions", "est_cycles")} for label, c in result["cases"].items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--host-mcpu", action="store_true")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=2, help="CPU-bound jobs running during the runs")
    parser.add_argument("--out", default="/tmp/tvmperf-simulate-bench")
    parser.add_argument("--only", default="", help="comma-separated case prefixes (busy3200,busyN,matmul,mlp,multiply)")
    parser.add_argument("--order", action="store_true", help="only the order table (full run, alone, reversed, -n 2)")
    ns = parser.parse_args()
    if ns.child:
        child(Path(ns.child), ns.host_mcpu, ns.only)
        return
    if ns.order:
        order(Path(ns.out))
        return
    folder = Path(ns.out)
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TVMPERF_SIMULATE_CACHE="off")  # what a measurement costs, not a stored count
    results = []
    with cpu_load(ns.load, 3600):
        for i in range(ns.runs):
            results.append(run_child(folder / f"run{i}.json", env, only=ns.only))
            r = results[-1]
            print(
                f"run {i + 1}/{ns.runs} (load {ns.load} jobs): start-up {r['startup_s']:.1f} s; per kernel "
                + ", ".join(f"{k} {c['s']:.1f} s" for k, c in r["cases"].items()),
                flush=True,
            )
    variants = {
        "TVM_NUM_THREADS=1": run_child(folder / "threads1.json", {**env, "TVM_NUM_THREADS": "1"}, only=ns.only),
        "host-mcpu wall-time build": run_child(folder / "host.json", env, host_mcpu=True, only=ns.only),
    }
    first = counts_only(results[0])
    same = all(counts_only(r) == first for r in results[1:])
    print(f"\ncounts identical in {ns.runs} fresh processes under load: {same}")
    for name, r in variants.items():
        print(f"counts identical with {name}: {counts_only(r) == first}")
    if not same:
        for label in first:
            vals = [sum(counts_only(r)[label]["cpu_instructions"].values()) for r in results]
            cyc = [sum(counts_only(r)[label]["est_cycles"].values()) for r in results]
            print(f"  {label}: instructions {sorted(set(vals))}, est_cycles {sorted(set(cyc))}")
    total = {label: {m: sum(v.values()) for m, v in c.items()} for label, c in first.items()}
    if "busy3200+0%" in total:
        detection(total, "busy3200", "K = 3200 x (1 + s%) steps, 1024 elements", ns.runs, same)
    if "busyN+0%" in total:
        detection(total, "busyN", "K = 320 steps, 10000 x (1 + s%) elements", ns.runs, same)
    if "matmul_Bt_rowwise" in total:
        b, bt = total["matmul_Bt_rowwise"], total["matmul_B_colwise"]
        print("\nmemory layout, matmul 128 (B read column-wise vs a transposed B read row-wise):")
        for m in ("cpu_instructions", "est_cycles"):
            print(f"  {m}: {b[m]} -> {bt[m]} ({bt[m] / b[m] - 1:+.1%})")
    print("\nper-kernel instructions of the first run:")
    for label, c in first.items():
        print(f"  {label}: " + ", ".join(f"{k}={v}" for k, v in sorted(c["cpu_instructions"].items())))


ORDER_SUITE = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["prim"])
def test_multiply(tvmperf):
    tvmperf.check(workloads.multiply(64, 64))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))


@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_onnx(tvmperf):
    tvmperf.check(workloads.small_mlp_onnx())
"""

ORDER_CONFTEST = """
import os


def pytest_collection_modifyitems(items):
    if os.environ.get("TVMPERF_BENCH_REVERSE") == "1":
        items.reverse()
"""


def order_session(folder: Path, name: str, args: list[str], env: dict) -> dict:
    """One plugin session in a fresh process: {test id: its exact metrics} from --tvmperf-json."""
    json_path = folder / f"{name}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--tvmperf-simulate=on",
        "--tvmperf-timing=off",
        "--tvmperf-peers=none",
        f"--tvmperf-json={json_path}",
        *args,
    ]
    done = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not json_path.exists():
        raise SystemExit(f"{name}: no results ({' '.join(args)}):\n{done.stdout[-3000:]}")
    return {t["test_id"]: t["record"]["exact"] for t in json.loads(json_path.read_text())["tests"]}


def order(out: Path) -> None:
    """The order table: a test's counts in a full run, alone, reversed and under -n 2."""
    folder = out / "order"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_suite.py").write_text(ORDER_SUITE)
    (folder / "conftest.py").write_text(ORDER_CONFTEST)
    env = {k: v for k, v in os.environ.items() if k != "TVMPERF_BENCH_REVERSE"}
    env["TVMPERF_SIMULATE_CACHE"] = "off"  # every session measures: the stored counts would hide an order effect
    started = time.monotonic()
    runs = {"full run": order_session(folder, "full", [], env)}
    alone: dict = {}
    for test in runs["full run"]:
        name, _, params = test.partition("[")
        expr = name + (" and " + params.split("-")[-1].rstrip("]") if name == "test_onnx" else "")
        alone.update(order_session(folder, f"alone_{len(alone)}", ["-k", expr], env))
    runs["alone (-k)"] = alone
    runs["reversed"] = order_session(folder, "reversed", [], {**env, "TVMPERF_BENCH_REVERSE": "1"})
    try:
        import xdist  # noqa: F401

        runs["-n 2"] = order_session(folder, "xdist", ["-n", "2"], env)
    except ImportError:
        print("(pytest-xdist is not installed: no -n 2 column)")
    print(
        f"\norder: {len(runs) + len(alone) - 1} plugin sessions, {time.monotonic() - started:.0f} s; per test "
        "cpu_instructions (its [runtime] line) / est_cycles in each:"
    )
    labels = list(runs)
    print("| test | " + " | ".join(labels) + " | identical |")
    print("|---" * (len(labels) + 2) + "|")
    for test, first in runs["full run"].items():
        cells = []
        for label in labels:
            per_kernel = runs[label][test]["per_kernel"]
            instr, cycles = per_kernel["cpu_instructions"], per_kernel["est_cycles"]
            cells.append(f"{sum(instr.values())} ({instr.get('[runtime]', 0)}) / {sum(cycles.values())}")
        same = all(runs[label][test] == first for label in labels)
        print(f"| {test} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")
        for label in labels:  # what moved, kernel by kernel (and any other exact metric)
            got = runs[label][test]
            for key in sorted(set(first) | set(got)):
                if key != "per_kernel" and first.get(key) != got.get(key):
                    print(f"    {label}: {key} {first.get(key)} -> {got.get(key)}")
            for metric, kernels in first["per_kernel"].items():
                for kernel, count in kernels.items():
                    now = got["per_kernel"].get(metric, {}).get(kernel)
                    if now != count:
                        print(f"    {label}: {metric} {kernel} {count} -> {now} ({now - count:+d})")


def detection(total: dict, name: str, what: str, runs: int, same: bool) -> None:
    print(f"\ndetection, known-cost harness ({what}), 1% cpu_instructions gate:")
    base = total[f"{name}+0%"]
    for s in SLOWDOWNS[1:]:
        now = total[f"{name}+{s}%"]
        grow = now["cpu_instructions"] / base["cpu_instructions"] - 1
        print(
            f"  +{s}%: cpu_instructions {base['cpu_instructions']} -> {now['cpu_instructions']} ({grow:+.2%}): "
            f"{'caught' if grow > 0.01 else 'passed'} in {runs}/{runs} runs (counts identical: {same}); "
            f"est_cycles {now['est_cycles'] / base['est_cycles'] - 1:+.2%}"
        )


if __name__ == "__main__":
    main()
