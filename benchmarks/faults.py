"""Kill updates at many points and check that no baseline or artifact is lost.

A scratch project with three tests (the middle one a kernel with an unresolved extern
symbol, which crashes whatever process runs it) is recorded once. Then, per point
k = 1..POINTS and per signal (SIGKILL, SIGINT), an update with changed programs (so
every artifact changes) is started in a fresh process and sent the signal at k/POINTS
of the time a whole update takes. After each run every baseline file must parse, and
every artifact it names must exist and match its sha256; no test id recorded before
may be missing. Finally one clean update and one gate run must pass, with the
crashing test failing alone, and no temporary file may be left.

    python benchmarks/faults.py --points 20
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import FAKE_TIMER_CONFTEST  # noqa: E402

from pytest_tvmperf.store.files import BaselineError, load_baselines  # noqa: E402

PROJECT_TEST = '''
import os
import numpy as np
import pytest
from tvm import te, tirx
from pytest_tvmperf import Workload

def scale(k, n=64):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * k, name="B")
    return Workload(name=f"scale{k:g}", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(n, "float32")], reference=lambda x: x * np.float32(k))

def crashing():
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: tirx.call_extern("float32", "tvmperf_no_such_symbol", a[i]), name="B")
    return Workload(name="crashing", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(16, "float32")], reference=lambda x: x)

K = float(os.environ.get("FAULT_K", "2"))

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(scale(K))

@pytest.mark.tvmperf(executors=["prim"])
def test_m_crash(tvmperf):
    tvmperf.check(crashing())

@pytest.mark.tvmperf(executors=["prim"])
def test_z(tvmperf):
    tvmperf.check(scale(K + 1))
'''

IDS = {"test_a[llvm-prim]", "test_z[llvm-prim]"}


def pytest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def env_for(k: float) -> dict:
    env = dict(os.environ, FAULT_K=str(k))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def check(project: Path) -> tuple[int, list[str]]:
    """Files checked, and the problems found (lost or mismatched)."""
    base = project / "baselines"
    checked, problems = 0, []
    path = base / "test_perf.json"
    checked += 1
    try:
        records = load_baselines(path)
    except BaselineError as exc:
        return checked, [f"unreadable: {exc}"]
    for missing in sorted(IDS - set(records)):
        problems.append(f"lost: {missing}")
    for test_id, record in records.items():
        for timing in record.timings.values():
            if timing.artifact:
                checked += 1
                file = base / timing.artifact
                if not file.exists():
                    problems.append(f"{test_id}: artifact {timing.artifact} missing")
                elif hashlib.sha256(file.read_bytes()).hexdigest() != timing.artifact_sha256:
                    problems.append(f"{test_id}: artifact {timing.artifact} does not match its sha256")
    return checked, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "conftest.py").write_text(FAKE_TIMER_CONFTEST)
        (project / "test_perf.py").write_text(PROJECT_TEST)
        started = time.perf_counter()
        first = subprocess.run(pytest_cmd("--tvmperf-update"), cwd=project, env=env_for(2), capture_output=True, text=True)
        whole = time.perf_counter() - started
        assert "baselines written for 2 test(s)" in first.stdout, first.stdout[-3000:]
        runs, checked_total, lost = 1, 0, []
        for point in range(1, args.points + 1):
            for sig in (signal.SIGKILL, signal.SIGINT):
                k = 2 + runs  # another program each run: every artifact changes
                proc = subprocess.Popen(pytest_cmd("--tvmperf-update"), cwd=project, env=env_for(k),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    proc.wait(timeout=whole * point / args.points)
                except subprocess.TimeoutExpired:
                    proc.send_signal(sig)
                    proc.wait()
                runs += 1
                checked, problems = check(project)
                checked_total += checked
                lost += [f"run {runs} ({sig.name} at {point}/{args.points}): {p}" for p in problems]
        final = subprocess.run(pytest_cmd("--tvmperf-update"), cwd=project, env=env_for(100), capture_output=True, text=True)
        gate = subprocess.run(pytest_cmd(), cwd=project, env=env_for(100), capture_output=True, text=True)
        runs += 2
        checked, problems = check(project)
        checked_total += checked
        lost += [f"final: {p}" for p in problems]
        if "2 passed, 1 failed" not in final.stdout.replace("1 failed, 2 passed", "2 passed, 1 failed"):
            lost.append(f"final update: {final.stdout.splitlines()[-1:]}")
        if "2 passed, 1 failed" not in gate.stdout.replace("1 failed, 2 passed", "2 passed, 1 failed"):
            lost.append(f"gate run: {gate.stdout.splitlines()[-1:]}")
        leftovers = [p.name for p in (project / "baselines").rglob(".*tmp*")]
        so_files = len(list((project / "baselines").rglob("*.so")))
        print(f"one whole update: {whole:.1f} s; {args.points} kill points x (SIGKILL, SIGINT), a crashing test in the middle")
        print("| runs | files checked | files lost or mismatched | temporary files left | artifacts on disk (named: 2) |")
        print("|---|---|---|---|---|")
        print(f"| {runs} | {checked_total} | {len(lost)} | {len(leftovers)} | {so_files} |")
        for line in lost:
            print(f"  {line}")


if __name__ == "__main__":
    main()
