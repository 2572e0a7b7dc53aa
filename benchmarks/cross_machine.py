"""Cross-machine false fails: unchanged code recorded on one machine kind, gated on another.

The A/A suite of the trust issue (``false_alarms.py --suite aa``: mlp(batch=1,
bind_params=True) under vm-bytecode and vm-compiled, rgb2yuv default and parallel; 4
verdicts a process) is recorded once per machine kind, then gated from fresh processes
of another kind against that baseline, in both directions, with
``--tvmperf-other-machine=normalized`` and with the default (``skip``). With no
baseline of its own fingerprint a run has no a/b artifact to time against, so this is
the comparison with stored numbers that another machine makes.

The second kind is emulated on this machine by a conftest that patches what the
plugin detects:

- ``mcpu``: the host CPU as LLVM sees it is ``x86-64-v2`` (workload and reference
  kernel compiled for it, as ``tests/test_xdist.py`` pins it); same CPU model name;
- ``model+mcpu``: the same, and a different CPU model name in the fingerprint (what
  a real other machine records);
- ``threads2``: ``TVM_NUM_THREADS=2`` instead of TVM's default of 1 here.

    python benchmarks/cross_machine.py --processes 5

``--rebuilt N`` measures the portable a/b mode instead (the default ``--tvmperf-update``
form: the baseline's IR, rebuilt on the machine that gates): the A/A suite recorded
as one kind and gated from N fresh processes as the other, in both directions of
``native``/``mcpu`` (a library built for the recorded target could not run as the
other's, the IR rebuilt can); then the known-cost workload (``_harness.BUSY_TEST``)
recorded as ``mcpu`` and gated natively ``--detect N`` times unchanged and +10% slower.

    python benchmarks/cross_machine.py --rebuilt 13 --detect 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _harness import BUSY_TEST, run_pytest
from false_alarms import AA_TEST

CONFTEST = """
import os

import tvm
import pytest_tvmperf.measure.host_machine as machine

_mcpu = os.environ.get("EMULATE_MCPU")
if _mcpu:  # what targets.host_llvm_config asks for the host CPU
    tvm.target.codegen.llvm_get_system_cpu = lambda: _mcpu
_model = os.environ.get("EMULATE_CPU_MODEL")
if _model:  # the CPU model name in the machine fingerprint
    machine.cpu_model = lambda: _model
"""

KINDS = {
    "native": {},
    "mcpu": {"EMULATE_MCPU": "x86-64-v2"},
    "model+mcpu": {"EMULATE_MCPU": "x86-64-v2", "EMULATE_CPU_MODEL": "Emulated other x86-64 CPU (x86-64-v2)"},
    "threads2": {"TVM_NUM_THREADS": "2"},
}
PAIRS = [("native", "mcpu"), ("native", "model+mcpu"), ("native", "threads2")]


def print_table(rows, ratios, third: str) -> None:
    """One line per (recorded on, gated on, ``third``) with its verdict counts and time ratios."""
    print(
        f"{'recorded on':12} {'gated on':12} {third:16} {'verdicts':>8} {'pass':>5} {'inconclusive':>13} "
        f"{'improved':>9} {'regressed':>10} {'time ratio min-max':>19}"
    )
    for key, c in rows.items():
        recorded, gated, kind = key
        r = ratios[key]
        spread = f"{min(r):.2f}-{max(r):.2f}" if r else "not gated"
        print(
            f"{recorded:12} {gated:12} {kind:16} {sum(c.values()):8d} {c['pass']:5d} {c['inconclusive']:13d} "
            f"{c['improved']:9d} {c['regressed']:10d} {spread:>19}"
        )


def machine_state() -> str:
    load = Path("/proc/loadavg").read_text().split()[:3]
    try:
        pressure = Path("/proc/pressure/cpu").read_text().split()[1]
    except OSError:
        pressure = "n/a"
    return f"load {' '.join(load)}, cpu pressure some {pressure}"


def env_of(kind: str, tvm_threads: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("EMULATE_MCPU", "EMULATE_CPU_MODEL")}
    env.pop("TVM_NUM_THREADS", None)
    if tvm_threads:
        env["TVM_NUM_THREADS"] = tvm_threads
    env.update(KINDS[kind])
    return env


def results(project: Path, args: list[str], env: dict) -> list[dict]:
    report = project / "out.json"
    report.unlink(missing_ok=True)
    out = run_pytest([*args, "--tvmperf-json=out.json", "--tvmperf-inconclusive=pass"], cwd=project, env=env)
    if not report.exists():
        raise SystemExit(f"no results JSON; pytest said:\n{out[-3000:]}")
    return json.loads(report.read_text())["tests"]


def rebuilt_mode(processes: int, detect: int, threads: str | None) -> None:
    """The portable a/b mode: baselines stored as IR by one kind, gated by another."""
    start = time.time()
    print(f"machine at start: {machine_state()}", flush=True)
    rows: dict[tuple[str, str, str], Counter] = {}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    modes: Counter = Counter()
    examples: list[str] = []

    def gate(project: Path, recorded: str, gated: str, suite: str, extra_env: dict | None = None) -> None:
        key = (recorded, gated, suite)
        rows.setdefault(key, Counter())
        ratios.setdefault(key, [])
        env = {**env_of(gated, threads), **(extra_env or {})}
        for t in results(project, [f"--tvmperf-baselines={project / ('base-' + recorded)}"], env):
            rows[key][t["verdict"]] += 1
            time_ = t.get("time") or {}
            modes[time_.get("mode")] += 1
            if time_.get("ratio") is not None:
                ratios[key].append(time_["ratio"])
            if t["verdict"] == "regressed" and "+10%" not in suite and len(examples) < 5:
                examples.append(f"{recorded} -> {gated}: {t['test_id']}: {t['message'][:400]}")

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_aa.py").write_text(AA_TEST)
        (project / "conftest.py").write_text(CONFTEST)
        (project / "pytest.ini").write_text("[pytest]\n")
        for kind in ("native", "mcpu"):  # the default form of --tvmperf-update: IR
            tests = results(
                project,
                ["--tvmperf-update", f"--tvmperf-baselines={project / ('base-' + kind)}"],
                env_of(kind, threads),
            )
            assert len(tests) == 4 and all(t["verdict"] == "recorded" for t in tests), [t["verdict"] for t in tests]
        for _ in range(processes):
            for recorded, gated in (("native", "mcpu"), ("mcpu", "native")):
                gate(project, recorded, gated, "A/A suite")
        print(f"A/A done at {time.time() - start:.0f} s: {rows}", file=sys.stderr, flush=True)
    if detect:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            (project / "test_busy.py").write_text(BUSY_TEST)
            (project / "conftest.py").write_text(CONFTEST)
            (project / "pytest.ini").write_text("[pytest]\n")
            tests = results(
                project,
                ["--tvmperf-update", f"--tvmperf-baselines={project / 'base-mcpu'}"],
                {**env_of("mcpu", threads), "BUSY_SLOWDOWN_PCT": "0"},
            )
            assert [t["verdict"] for t in tests] == ["recorded"], tests
            for _ in range(detect):
                gate(project, "mcpu", "native", "busy, unchanged", {"BUSY_SLOWDOWN_PCT": "0"})
                gate(project, "mcpu", "native", "busy, +10%", {"BUSY_SLOWDOWN_PCT": "10"})
    print(
        f"command: python benchmarks/cross_machine.py --rebuilt {processes} --detect {detect}"
        + (f" --threads {threads}" if threads else "")
    )
    print(f"{(time.time() - start) / 60:.1f} min; machine at end: {machine_state()}; time modes: {dict(modes)}")
    print_table(rows, ratios, "suite")
    for e in examples:
        print("example:", e)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5, help="fresh gating processes per direction (normalized)")
    parser.add_argument("--default-processes", type=int, default=1, help="the same with the default policy (skip)")
    parser.add_argument(
        "--threads",
        default=os.environ.get("TVM_NUM_THREADS", ""),
        help="TVM_NUM_THREADS of the kinds other than threads2 (default: TVM's own)",
    )
    parser.add_argument(
        "--rebuilt",
        type=int,
        default=0,
        help="measure the portable a/b mode (IR rebuilt here) instead: gating processes per direction",
    )
    parser.add_argument("--detect", type=int, default=0, help="with --rebuilt: known-cost trials, unchanged and +10%%")
    args = parser.parse_args()
    if args.rebuilt or args.detect:
        rebuilt_mode(args.rebuilt, args.detect, args.threads)
        return
    start = time.time()
    print(f"machine at start: {machine_state()}", flush=True)
    rows: dict[tuple[str, str, str], Counter] = {}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    examples: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_aa.py").write_text(AA_TEST)
        (project / "conftest.py").write_text(CONFTEST)
        (project / "pytest.ini").write_text("[pytest]\n")
        kinds = sorted({k for pair in PAIRS for k in pair})
        for kind in kinds:  # one baseline per machine kind
            tests = results(
                project,
                ["--tvmperf-update", f"--tvmperf-baselines={project / ('base-' + kind)}"],
                env_of(kind, args.threads),
            )
            assert len(tests) == 4 and all(t["verdict"] == "recorded" for t in tests), [t["verdict"] for t in tests]
            machine = next(iter(tests[0]["record"]["timings"].values()))["machine"]
            print(
                f"recorded {kind}: {machine['cpu_model']}, mcpu {json.loads(machine['target']).get('mcpu')}, "
                f"{machine['tvm_threads']} TVM thread(s) at {time.time() - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        for policy, count in (("normalized", args.processes), ("skip (default)", args.default_processes)):
            extra = ["--tvmperf-other-machine=normalized"] if policy == "normalized" else []
            for a, b in PAIRS:
                for recorded, gated in ((a, b), (b, a)):
                    key = (recorded, gated, policy)
                    rows[key], ratios[key] = Counter(), []
                    for _ in range(count):
                        for t in results(
                            project,
                            [f"--tvmperf-baselines={project / ('base-' + recorded)}", *extra],
                            env_of(gated, args.threads),
                        ):
                            rows[key][t["verdict"]] += 1
                            time_ = t.get("time") or {}
                            if time_.get("ratio") is not None:
                                ratios[key].append(time_["ratio"])
                            if t["verdict"] == "regressed" and len(examples) < 5:
                                examples.append(f"{recorded} -> {gated}: {t['test_id']}: {t['message'][:400]}")
                    print(
                        f"{policy}: recorded {recorded}, gated {gated}: {dict(rows[key])} at {time.time() - start:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    total = Counter()
    for c in rows.values():
        total.update(c)
    print(
        f"command: python benchmarks/cross_machine.py --processes {args.processes} "
        f"--default-processes {args.default_processes}" + (f" --threads {args.threads}" if args.threads else "")
    )
    print(f"A/A suite (4 verdicts a process), {(time.time() - start) / 60:.1f} min; machine at end: {machine_state()}")
    print_table(rows, ratios, "policy")
    print(
        f"{'all':12} {'':12} {'':16} {sum(total.values()):8d} {total['pass']:5d} {total['inconclusive']:13d} "
        f"{total['improved']:9d} {total['regressed']:10d}"
    )
    other = {k: v for k, v in total.items() if k not in ("pass", "inconclusive", "improved", "regressed")}
    if other:
        print(f"other verdicts: {other}")
    for e in examples:
        print("example:", e)


if __name__ == "__main__":
    main()
