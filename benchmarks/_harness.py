"""Shared helpers of the benchmark scripts: run pytest in fresh processes, read verdicts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from pytest_tvmperf.judge.verdict import TEST_VERDICTS

ROOT = Path(__file__).resolve().parents[1]
#: the words of the summary table's verdict column
VERDICTS = tuple(v.value for v in TEST_VERDICTS)

# the synthetic workload of known cost: out[i] = sum_k a[i] * w_k over K steps, so
# its time grows linearly with K and a slowdown of s% is K = 200 * (1 + s/100)
BUSY_WORKLOAD = """
import os
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload

def busy(steps):
    n = 1 << 14
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    factor = float(np.sum(np.arange(steps, dtype=np.float64) * 1e-3 + 1.0))
    return Workload(name=f"busy(steps={steps})", program=te.create_prim_func([a, out]),
                    make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
                    reference=lambda x: x * np.float32(factor), rtol=1e-3, atol=1e-3)

"""

BUSY_TEST = (
    BUSY_WORKLOAD
    + """@pytest.mark.tvmperf(executors=["prim"])
def test_busy(tvmperf):
    slowdown = float(os.environ.get("BUSY_SLOWDOWN_PCT", "0"))
    tvmperf.check(busy(round(200 * (1 + slowdown / 100))))
"""
)


def run_pytest(args: list[str], cwd: Path = ROOT, env: dict | None = None) -> str:
    """Run pytest in a fresh process; its stdout (the summary table included)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::UserWarning", *args]
    # these scripts measure the timing path: an unchanged program (every A/A run) is timed
    # side by side, not passed as the baseline's own (--tvmperf-same-program=skip, the default)
    env = {**(os.environ if env is None else env)}
    env.setdefault("TVMPERF_SAME_PROGRAM", "time")
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.stdout


def verdicts(output: str) -> dict[str, str]:
    """test id -> verdict, from the tvmperf summary table."""
    result: dict[str, str] = {}
    in_table = False
    for line in output.splitlines():
        if "tvmperf summary" in line:
            in_table = True
            continue
        if in_table:
            if line.startswith("test ") or not line.strip():
                continue
            if line.startswith(("=", "-")) or "test(s):" in line:
                break
            if "[" not in line.split()[0]:  # a line after the rows (compile_s of a changed program, notes)
                continue
            cell = re.sub(r" \([a-z_, ]+\)$", "", line.rstrip())  # 'regressed (time)': the metrics that failed
            for verdict in VERDICTS:
                if cell.endswith(verdict):
                    result[line.split()[0]] = verdict
                    break
    return result


def ratios(output: str) -> list[str]:
    """The 'time a -> b (ratio (CI ...), mode)' evidence lines of failures and warnings."""
    return re.findall(r"time \S+ \S+ -> \S+ \S+ \(([^)]*\))", output)


def tally(all_verdicts: list[dict[str, str]]) -> Counter:
    counts: Counter = Counter()
    for v in all_verdicts:
        counts.update(v.values())
    return counts


def time_status(entry: dict) -> str:
    """The verdict of the time metric alone (not an exact metric that a change moved too)."""
    return next((m["status"] for m in entry.get("metrics") or [] if m["metric"] == "time"), "missing")
