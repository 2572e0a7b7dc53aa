"""The real upgrade report (issue 25): the bundled perf suite and the DLA-34 conv2d layers,
today's TVM against another release, side by side, as a user would run it.

It writes a scratch project with the bundled suite's model files (tests/perf: the MLPs,
RGB->YUV, the dynamic batch, ONNX, torch.export; not the CUDA file: the comparison is for
llvm targets) and one file with every ``workloads.dla_conv`` layer at full size, default
pipeline, then runs in a fresh process

    TVM_NUM_THREADS=1 pytest <scratch> --tvmperf-against-tvm=VERSION \\
        --tvmperf-against-tvm-report-only --tvmperf-against-tvm-packages=onnx,onnxruntime,torch \\
        --tvmperf-json=<scratch>/results.json

and prints, per version, the suite's summary and one row per test: its class, the a/b
ratio with its interval, and the verdict line (which metric moved, the kernel that moved
most and by how much). The other version's environment is made once per machine in the
plugin's cache (a minute or two from the index, with torch; reused after).

    python benchmarks/upgrade.py                       # against 0.26.0 and 0.25.0
    python benchmarks/upgrade.py --versions 0.26.0 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DLA_TEST = '''
import pytest

from pytest_tvmperf import workloads
from pytest_tvmperf.workloads.dla import DLA_LAYERS


@pytest.mark.tvmperf(executors=["vm-bytecode"])
@pytest.mark.parametrize("layer", list(DLA_LAYERS))
def test_dla_conv(tvmperf, layer):
    """The DLA-34 conv2d layers of the report (workloads.dla_conv), full size, default pipeline."""
    tvmperf.check(workloads.dla_conv(layer))
'''

PYPROJECT = """[tool.pytest.ini_options]
tvmperf_baselines = "baselines"
"""


def scratch_project(where: Path) -> Path:
    tests = where / "tests"
    tests.mkdir(parents=True)
    for name in ("test_workloads.py", "test_models.py"):
        shutil.copy(ROOT / "tests" / "perf" / name, tests / name)
    (tests / "test_dla.py").write_text(DLA_TEST)
    # the committed tuning database of the tuned tests (records for the CPU they were tuned on;
    # on another CPU those tests skip with the reason, as they do in tests/perf)
    shutil.copytree(ROOT / "baselines" / "tuning", where / "baselines" / "tuning")
    (where / "pyproject.toml").write_text(PYPROJECT)
    return where


def run(project: Path, version: str, threads: int, packages: str) -> tuple[dict, str, float]:
    results = project / f"results-{version}.json"
    env = {**os.environ, "TVM_NUM_THREADS": str(threads)}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests",
        "-q",
        "-p",
        "no:cacheprovider",
        "-rs",
        f"--tvmperf-against-tvm={version}",
        "--tvmperf-against-tvm-report-only",
        f"--tvmperf-json={results}",
    ]
    if packages:
        cmd.append(f"--tvmperf-against-tvm-packages={packages}")
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    took = time.monotonic() - started
    if not results.exists():
        raise SystemExit(f"pytest exited {proc.returncode} without results:\n{proc.stdout[-4000:]}")
    return json.loads(results.read_text()), proc.stdout, took


def report(version: str, data: dict, output: str, took: float, threads: int) -> None:
    upgrade = data.get("upgrade") or {}
    print(f"## TVM {upgrade.get('today', '?')} against {version} (TVM_NUM_THREADS={threads}, {took:.0f} s)")
    print()
    counts = upgrade.get("counts", {})
    print(", ".join(f"{n} {c}" for c, n in counts.items() if n) or "no test compared")
    print()
    print("| test | class | today/other [interval] | verdict |")
    print("|---|---|---|---|")
    for row in upgrade.get("tests", []):
        ratio = row.get("ratio")
        interval = (
            f"{ratio:.2f}x [{row['low']:.2f}-{row['high']:.2f}]"
            if ratio is not None and row.get("low") is not None
            else "-"
        )
        line = row.get("line", "").replace("|", "/")
        mark = " (past threshold)" if row.get("past_threshold") else ""
        print(f"| {row['test']} | {row['class']}{mark} | {interval} | {line} |")
    skipped = [line for line in output.splitlines() if line.startswith(("SKIPPED", "ERROR", "FAILED"))]
    if skipped:
        print()
        print("skipped, failed or errors:")
        for line in skipped:
            print(f"  {line[:240]}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="0.26.0,0.25.0", help="releases to compare with (default 0.26.0,0.25.0)")
    parser.add_argument("--threads", type=int, default=1, help="TVM_NUM_THREADS (default 1)")
    parser.add_argument(
        "--packages",
        default="onnx,onnxruntime,torch",
        help="--tvmperf-against-tvm-packages (default onnx,onnxruntime,torch)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch project and print where")
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="tvmperf-upgrade-"))
    try:
        project = scratch_project(where / "project")
        for version in [v.strip() for v in args.versions.split(",") if v.strip()]:
            data, output, took = run(project, version, args.threads, args.packages)
            report(version, data, output, took, args.threads)
    finally:
        if args.keep:
            print(f"scratch project kept: {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
