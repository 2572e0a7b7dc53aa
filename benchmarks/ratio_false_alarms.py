"""False alarms of ratio gates (tvmperf.assert_ratio and vs_<peer>) at their limit.

A ratio gate compares two different programs measured side by side in one process.
The worst case for false alarms is a limit equal to the true ratio: then a gate should
say `exceeded` at most alpha/2 of the time (the rest: `inconclusive`, or `pass`). This
script estimates each gate's true ratio as the median over CALIBRATE fresh processes,
sets the limit there, and counts the verdicts of N more fresh processes:

- busy(200) / busy(200): the same program on both sides (true ratio exactly 1);
- mlp(batch="n", run_batch=4) / mlp(batch=4): dynamic vs static batch;
- rgb2yuv default / parallel schedule (prim);
- rgb2yuv vs its NumPy peer (vs_numpy).

    python benchmarks/ratio_false_alarms.py --processes 12

With ``--peer-intervals N`` it measures instead how narrow a peer ratio's interval
is (the trust issue saw the NumPy ratio of one test at 0.54x [0.00-59.71], then
15.35x [3.50-67.23], before threadpoolctl held BLAS at TVM's thread count): the MLP
(bound weights, vm-bytecode; NumPy's side is BLAS) and rgb2yuv (parallel, prim)
against every peer they have, recorded in N fresh processes, each ratio printed with
its interval, then the median width by peer, for each ``--threads`` value.

    python benchmarks/ratio_false_alarms.py --peer-intervals 10 --threads 1,2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _harness import BUSY_TEST, run_pytest

GATES = (
    BUSY_TEST.replace('@pytest.mark.tvmperf(executors=["prim"])\ndef test_busy', "def _unused")
    + """
from pytest_tvmperf import workloads

def limit(name):
    return float(os.environ.get(name, "100"))

@pytest.mark.tvmperf(executors=["prim"])
def test_same_program(tvmperf):
    tvmperf.assert_ratio(busy(200), busy(200), at_most=limit("LIMIT_SAME"))

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_dynamic_vs_static(tvmperf):
    tvmperf.assert_ratio(workloads.mlp(batch="n", run_batch=4), workloads.mlp(batch=4), at_most=limit("LIMIT_DYN"))

@pytest.mark.tvmperf(executors=["prim"])
def test_schedules(tvmperf):
    tvmperf.assert_ratio(workloads.rgb2yuv("default"), workloads.rgb2yuv("parallel"), at_most=limit("LIMIT_SCHED"))

@pytest.mark.tvmperf(executors=["prim"], vs_numpy=limit("LIMIT_PEER"))
def test_peer(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel"))
"""
)

LIMITS = {
    "test_same_program": "LIMIT_SAME",
    "test_dynamic_vs_static": "LIMIT_DYN",
    "test_schedules": "LIMIT_SCHED",
    "test_peer": "LIMIT_PEER",
}


PEER_TESTS = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, bind_params=True))

@pytest.mark.tvmperf(executors=["prim"])
def test_rgb2yuv(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel"))
"""


def machine_state() -> str:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    try:
        pressure = Path("/proc/pressure/cpu").read_text().split()[1]
    except OSError:
        pressure = "n/a"
    return f"load {load}, cpu pressure some {pressure}"


def peer_intervals(processes: int, threads: list[str]) -> None:
    """Each peer ratio with its interval, from fresh processes; the median width."""
    start = time.time()
    print(f"machine at start: {machine_state()}")
    rows: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_peers.py").write_text(PEER_TESTS)
        (project / "pytest.ini").write_text("[pytest]\n")
        for t in threads:
            env = dict(os.environ)
            env.pop("TVM_NUM_THREADS", None)
            if t:
                env["TVM_NUM_THREADS"] = t
            for i in range(processes):
                report = project / "out.json"
                report.unlink(missing_ok=True)
                run_pytest(
                    [
                        "--tvmperf-update",
                        "--tvmperf-peers=all",
                        "--tvmperf-json=out.json",
                        f"--tvmperf-baselines={project / 'base'}",
                    ],
                    cwd=project,
                    env=env,
                )
                for test in json.loads(report.read_text())["tests"]:
                    for peer in test.get("peers") or []:
                        key = (t or "default", test["test_id"].split("[")[0], peer["name"])
                        rows.setdefault(key, []).append((peer["ratio"], peer["low"], peer["high"]))
                print(
                    f"threads {t or 'default'}: process {i + 1}/{processes} at {time.time() - start:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"command: python benchmarks/ratio_false_alarms.py --peer-intervals {processes}"
        + (f" --threads {','.join(threads)}" if any(threads) else "")
    )
    print(
        f"{processes} fresh processes per row, {(time.time() - start) / 60:.1f} min; machine at end: {machine_state()}"
    )
    print(
        f"{'TVM threads':>11} {'test':12} {'peer':12} {'ratio min-max':>15} {'median high/low':>16} {'widest':>7}  each ratio [interval]"
    )
    for (t, test, peer), got in rows.items():
        widths = [high / low for _, low, high in got]
        each = " ".join(f"{r:.2f}x[{lo:.2f}-{hi:.2f}]" for r, lo, hi in got)
        print(
            f"{t:>11} {test:12} {peer:12} {min(r for r, _, _ in got):7.2f}-{max(r for r, _, _ in got):<7.2f} "
            f"{statistics.median(widths):16.2f} {max(widths):7.2f}  {each}"
        )
    sys.stdout.flush()


def ratios_and_statuses(results: dict) -> dict[str, tuple[float, str]]:
    """test function -> (ratio, status) of its relation or gated peer."""
    out = {}
    for test in results["tests"]:
        name = test["test_id"].split("[")[0]
        gate = test.get("relation") or next(iter(test.get("peers") or []), None)
        if name in LIMITS and gate:
            out[name] = (gate["ratio"], gate["status"])
    return out


def run(project: Path, env: dict) -> dict[str, tuple[float, str]]:
    report = project / "out.json"
    report.unlink(missing_ok=True)
    run_pytest(["--tvmperf-update", "--tvmperf-json=out.json", "--tvmperf-inconclusive=pass"], cwd=project, env=env)
    return ratios_and_statuses(json.loads(report.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=12)
    parser.add_argument("--calibrate", type=int, default=3)
    parser.add_argument(
        "--peer-intervals",
        type=int,
        default=0,
        metavar="N",
        help="instead: peer ratios and their intervals from N fresh processes",
    )
    parser.add_argument("--threads", default="", help="with --peer-intervals: TVM_NUM_THREADS values, e.g. 1,2")
    args = parser.parse_args()
    if args.peer_intervals:
        peer_intervals(args.peer_intervals, [t for t in args.threads.split(",") if t] or [""])
        return
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_gates.py").write_text(GATES)
        (project / "pytest.ini").write_text("[pytest]\n")
        calibration = [run(project, dict(os.environ)) for _ in range(args.calibrate)]
        limits = {name: statistics.median(c[name][0] for c in calibration) for name in LIMITS}
        limits["test_same_program"] = 1.0  # known exactly
        env = dict(os.environ, **{LIMITS[name]: f"{value:.6g}" for name, value in limits.items()})
        counts = {name: Counter() for name in LIMITS}
        seen = {name: [] for name in LIMITS}
        for _ in range(args.processes):
            for name, (ratio, status) in run(project, env).items():
                counts[name][status] += 1
                seen[name].append(ratio)
    print(f"command: python benchmarks/ratio_false_alarms.py --processes {args.processes} --calibrate {args.calibrate}")
    print(f"{'gate':24} {'limit':>7} {'ratio min-max':>15} {'exceeded':>9} {'inconclusive':>13} {'pass':>5}")
    for name in LIMITS:
        spread = f"{min(seen[name]):.3f}-{max(seen[name]):.3f}" if seen[name] else "-"
        c = counts[name]
        print(f"{name:24} {limits[name]:7.3f} {spread:>15} {c['exceeded']:>9} {c['inconclusive']:>13} {c['pass']:>5}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
