"""The intended-change flow of docs/ci.md, on a real clock, as a team lives it (issue 59).

In a fresh project in a temporary git repository with two test files (an MLP, and a TE
multiply beside it), the suite is recorded on ``main`` and committed. A pull request makes the
MLP slower on purpose (its weights passed at run time instead of bound as constants: more VM
instructions, about 2.1-2.3x the time), re-records the whole suite, commits, and is gated against
``main`` as CI gates it: without the approval, then with ``--tvmperf-approved-change=on``; last,
the changed entry's time edited by hand. Each step is a fresh pytest process timed by the real
clock (the project's own tests use a fake timer). It prints each step's outcome line, the
re-record's summary and ``git diff --numstat``, and the verdict lines.

    python benchmarks/change_flow.py
    PYTHONPATH=<another checkout> python benchmarks/change_flow.py   # another version of the plugin
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

MLP = """
import os
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(bind_params=os.environ.get("MLP_CHANGE") != "1"))
"""

KERNEL = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["prim"])
def test_multiply(tvmperf):
    tvmperf.check(workloads.multiply(m=512, n=512))
"""

CONFTEST = """
def pytest_configure(config):  # the simulated cost off: the gate's verdicts, in seconds
    from pytest_tvmperf.measure import metric_sources
    metric_sources.SOURCES = tuple(s for s in metric_sources.SOURCES if not s.endswith(":SimulatedCost"))
"""

MLP_ID = "test_mlp[llvm-vm-bytecode]"

sys.path.insert(0, str(Path(__file__).parent))
from layer_change import git, run  # noqa: E402 - the same fresh-process harness


def pytest(cwd: Path, *args: str, change: bool = False) -> str:
    env = {"MLP_CHANGE": "1" if change else "0", "TVMPERF_CACHE_DIR": str(cwd / ".cache")}
    return run(cwd, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, env=env)


def lines(out: str, *needles: str) -> list[str]:
    return [x.rstrip() for x in out.splitlines() if any(n in x for n in needles)]


def show(step: str, out: str, *needles: str) -> None:
    outcome = next((x for x in reversed(out.splitlines()) if " in " in x and ("passed" in x or "failed" in x)), "?")
    print(f"{step}\n  {outcome.strip('= ')}")
    for x in lines(out, *needles):
        print(f"    {x.strip()[:220]}")


def main() -> int:
    import pytest_tvmperf

    print(f"plugin: {Path(pytest_tvmperf.__file__).parent}")
    with tempfile.TemporaryDirectory(prefix="tvmperf-change-flow-") as tmp:
        cwd = Path(tmp)
        (cwd / "test_model.py").write_text(MLP)
        (cwd / "test_kernel.py").write_text(KERNEL)
        (cwd / "conftest.py").write_text(CONFTEST)
        (cwd / ".gitignore").write_text(".cache/\n__pycache__/\n")
        out = pytest(cwd, "--tvmperf-update")
        show("1. main: the suite recorded (pytest --tvmperf-update)", out, "baselines written")
        git(cwd, "init", "-q", "-b", "main")
        git(cwd, "add", "-A")
        git(cwd, "commit", "-qm", "baselines")
        kernel_before = (cwd / "baselines" / "test_kernel.json").read_bytes()
        git(cwd, "checkout", "-qb", "pr")

        out = pytest(cwd, "--tvmperf-update", change=True)
        show("2. the PR: the MLP's weights passed at run time; the whole suite re-recorded", out, "baselines written")
        same = (cwd / "baselines" / "test_kernel.json").read_bytes() == kernel_before
        print(f"  the untouched file baselines/test_kernel.json byte for byte as on main: {same}")
        git(cwd, "add", "-A")
        print("  git diff --cached --numstat -- baselines (added, removed, file):")
        for x in git(cwd, "diff", "--cached", "--numstat", "--", "baselines").splitlines():
            print(f"    {x}")
        git(cwd, "commit", "-qm", "re-record")
        entry = json.loads((cwd / "baselines" / "test_model.json").read_text())["tests"][MLP_ID]
        (timing,) = entry["timings"].values()
        print(f"  the PR's entry: median {timing['median_s'] * 1e3:.3g} ms")

        out = pytest(cwd, "--tvmperf-baselines-ref=main", change=True)
        show("3. gated against main, not approved", out, "unapproved change", "this change re-recorded", "time ")
        out = pytest(cwd, "--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on", change=True)
        show("4. approved (--tvmperf-approved-change=on)", out, "approved", "unverified", "the entry says")

        timing["samples_s"] = [s / 1.7 for s in timing["samples_s"]]  # by hand: the base's time
        timing["median_s"] /= 1.7
        data = json.loads((cwd / "baselines" / "test_model.json").read_text())
        data["tests"][MLP_ID] = entry
        (cwd / "baselines" / "test_model.json").write_text(json.dumps(data))
        git(cwd, "commit", "-qam", "edited by hand")
        out = pytest(cwd, "--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on", change=True)
        show("5. the entry's time divided by 1.7 by hand, approved", out, "unverified", "the entry says")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
