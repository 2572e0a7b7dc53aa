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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _harness import BUSY_TEST, run_pytest

GATES = BUSY_TEST.replace("@pytest.mark.tvmperf(executors=[\"prim\"])\ndef test_busy", "def _unused") + '''
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
'''

LIMITS = {"test_same_program": "LIMIT_SAME", "test_dynamic_vs_static": "LIMIT_DYN",
          "test_schedules": "LIMIT_SCHED", "test_peer": "LIMIT_PEER"}


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
    args = parser.parse_args()
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
