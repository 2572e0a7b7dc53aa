"""What a real network costs a gate: the bundled DLA-34 (``workloads.dla34``), recorded and
gated by the plugin in fresh processes, against a plain measurement of the same precision.

For each load level (idle, and with ``--busy`` CPU-bound jobs beside it) and each pipeline
(``default``; ``tuned`` with ``--tune-trials N``, which first tunes in its own process, or
with ``--tuning-db DIR``, a database tuned before, such as the committed ``baselines/tuning``),
in a fresh project and a fresh build cache each time:

1. **plain**: a fresh process imports the network from torch (``torch.export`` and
   ``from_exported_program``, as the test does) and compiles it (``tvm.compile``, the default pipeline,
   the tuned one with the database) and times it with ``time_evaluator`` in as many
   samples as the gate took (``--plain-rounds``, default: the gate's rounds), and eager
   PyTorch on the same input;
2. **record**: ``pytest --tvmperf-update`` (``vs_torch=3``) in a fresh process;
3. **gate**: ``pytest`` on the unchanged code in a fresh process, its call phase read from
   ``--durations``.

It prints TVM time, torch time, compile time, tuning time, the record and gate wall times,
and the gate's call phase against the plain compile + measurement (the goal: <= 3x, 2x).

    python benchmarks/dla34.py --size 32 --width 0.25 --busy 2          # the CI size
    python benchmarks/dla34.py --size 224 --width 1.0 --busy 2          # the report's size
    python benchmarks/dla34.py --pipelines default,tuned --tuning-db baselines/tuning   # the bundled tuned one
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _load import cpu_load  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: more pytest options for the record and gate runs (--pytest-args)
EXTRA: list[str] = []

TEST = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["vm-bytecode"], vs_torch=3.0)
def test_dla34(tvmperf):
    tvmperf.check(workloads.dla34(size={size}, width={width}).with_pipeline("{pipeline}"))
"""

PLAIN = r"""
import json, sys, time
import numpy as np
import tvm
from tvm import relax
from pytest_tvmperf import workloads
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.targets import resolve_target
size, width, pipeline, rounds, db = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
start = time.perf_counter()  # from the torch module: the export and import are part of a plain compile too
w = workloads.dla34(size=size, width=width)
if pipeline == "tuned":  # the plugin's own tuned build (the database's best schedules applied)
    from pathlib import Path
    from pytest_tvmperf.builder.tuning_state import TuningView
    ex = get_executor("vm-bytecode").compile(w.with_pipeline("tuned"), resolve_target("llvm"),
                                             TuningView(Path(db))).executable
else:
    target = tvm.target.Target("llvm")
    ex = tvm.compile(w.program, target=target, relax_pipeline=relax.get_default_pipeline(target))
compile_s = time.perf_counter() - start
vm = relax.VirtualMachine(ex, tvm.cpu())
x = w.make_inputs(np.random.default_rng(0), {})
args = [tvm.runtime.tensor(a) for a in x]
f = vm.time_evaluator("main", tvm.cpu(), number=1, repeat=rounds, min_repeat_ms=20)
t0 = time.perf_counter()
res = f(*args)
measure_s = time.perf_counter() - t0
run = w.peers["torch"]()
run(*x)
tt = []
for _ in range(max(3, min(rounds, 10))):
    t1 = time.perf_counter(); run(*x); tt.append(time.perf_counter() - t1)
print(json.dumps({"compile_s": compile_s, "tvm_s": float(np.median(res.results)), "measure_s": measure_s,
                  "torch_s": float(np.median(tt)), "wall_s": compile_s + measure_s}))
"""


def fresh_env(cache: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    env["TVMPERF_CACHE_DIR"] = str(cache)
    return env


def pytest_run(project: Path, cache: Path, *args: str) -> tuple[float, str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:logging",
        "--durations=0",
        "-vv",
        "--tvmperf-peers=torch",
        *EXTRA,
        *args,
    ]
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=project, env=fresh_env(cache), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return time.perf_counter() - start, proc.stdout


def call_phase(output: str) -> float | None:
    found = re.search(r"([\d.]+)s call\s+\S*test_dla34", output)
    return float(found.group(1)) if found else None


def summary_line(output: str, word: str) -> str:
    return next((line.strip() for line in output.splitlines() if word in line), "")


def gate_rounds(project: Path) -> int:
    data = json.loads((project / "baselines" / "test_perf.json").read_text())
    (entry,) = data["tests"].values()
    (timing,) = entry["timings"].values()
    return int(timing["stats"]["rounds"])


def one(
    size: int,
    width: float,
    pipeline: str,
    busy: int,
    trials: int | None,
    plain_rounds: int | None,
    tuning_db: Path | None = None,
) -> dict:
    with tempfile.TemporaryDirectory(prefix="tvmperf-dla34-bench-") as tmp:
        project = Path(tmp)
        (project / "test_perf.py").write_text(TEST.format(size=size, width=width, pipeline=pipeline))
        (project / "pytest.ini").write_text("[pytest]\ntvmperf_baselines = baselines\n")
        row: dict = {"pipeline": pipeline, "busy": busy}
        with cpu_load(busy, 3600):
            if pipeline == "tuned" and tuning_db is not None:  # tuned before: the database is copied in
                shutil.copytree(tuning_db, project / "baselines" / "tuning")
            elif pipeline == "tuned":
                row["tune_s"], out = pytest_run(
                    project, project / "cache-tune", f"--tvmperf-tune={trials}", "--tvmperf-timing=off"
                )
            row["record_s"], out = pytest_run(project, project / "cache-record", "--tvmperf-update")
            row["record_out"] = out
            if "1 passed" not in out:
                row["error"] = out[-3000:]
                return row
            row["gate_s"], out = pytest_run(project, project / "cache-gate")
            row["gate_out"] = out
            row["call_s"] = call_phase(out)
            rounds = plain_rounds or gate_rounds(project)
            row["rounds"] = rounds
            plain = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PLAIN,
                    str(size),
                    str(width),
                    pipeline,
                    str(rounds),
                    str(project / "baselines" / "tuning"),
                ],
                env=fresh_env(project / "cache-plain"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            if plain.returncode != 0 or not plain.stdout.strip():
                row["error"] = f"the plain measurement failed:\n{plain.stderr[-3000:]}"
                return row
            row.update(json.loads(plain.stdout.strip().splitlines()[-1]))
            row["load"] = os.getloadavg()[0]
    return row


def tuning(row: dict) -> str:
    if row["pipeline"] != "tuned":
        return "-"
    return fmt(row["tune_s"]) if "tune_s" in row else "tuned before (--tuning-db)"


def fmt(s: float | None) -> str:
    return "-" if s is None else (f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--width", type=float, default=0.25)
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound jobs beside the loaded runs (0: idle only)")
    parser.add_argument(
        "--pipelines", default="default", help="default,tuned (tuned needs --tune-trials or --tuning-db)"
    )
    parser.add_argument("--tune-trials", type=int, default=None)
    parser.add_argument(
        "--tuning-db",
        type=Path,
        default=None,
        help="for 'tuned': a tuning database made before (e.g. the committed baselines/tuning) "
        "instead of --tune-trials",
    )
    parser.add_argument("--plain-rounds", type=int, default=None)
    parser.add_argument(
        "--pytest-args",
        default="",
        help="more options for the record and gate runs, e.g. '--tvmperf-simulate=off' (what the simulated cost adds)",
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    EXTRA.extend(shlex.split(args.pytest_args))
    rows = []
    for busy in sorted({0, args.busy}) if args.busy else (0,):
        for pipeline in args.pipelines.split(","):
            if pipeline == "tuned" and args.tuning_db is None and not args.tune_trials:
                parser.error("--pipelines tuned needs --tune-trials N or --tuning-db DIR")
            row = one(
                args.size,
                args.width,
                pipeline,
                busy,
                args.tune_trials,
                args.plain_rounds,
                args.tuning_db.resolve() if args.tuning_db else None,
            )
            rows.append(row)
            if "error" in row:
                print(f"{pipeline} busy={busy}: failed\n{row['error']}", flush=True)
                continue
            if args.verbose:
                print(row["gate_out"][-4000:])
            print(f"{pipeline} busy={busy}: {summary_line(row['gate_out'], 'most time:')}", flush=True)
    print(f"\ncommand: python benchmarks/dla34.py {shlex.join(sys.argv[1:])}")
    print(f"workloads.dla34(size={args.size}, width={args.width}); {os.cpu_count()} CPUs")
    print(
        "| pipeline | busy jobs | load avg | TVM | torch | compile | tuning | record wall | gate wall | gate call phase "
        "| plain compile + time_evaluator (rounds) | call / plain |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['pipeline']} | {r['busy']} | - | failed | | | | | | | | |")
            continue
        ratio = r["call_s"] / r["wall_s"] if r.get("call_s") and r.get("wall_s") else None
        print(
            f"| {r['pipeline']} | {r['busy']} | {r['load']:.1f} | {fmt(r['tvm_s'])} | {fmt(r['torch_s'])} | "
            f"{fmt(r['compile_s'])} | {tuning(r)} | {fmt(r['record_s'])} | {fmt(r['gate_s'])} | "
            f"{fmt(r['call_s'])} | {fmt(r['wall_s'])} ({r['rounds']}) | "
            f"{'-' if ratio is None else f'{ratio:.1f}x'} |"
        )


if __name__ == "__main__":
    main()
