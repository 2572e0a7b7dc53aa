"""Time verdicts on a loaded runner: what the gate catches and what it falsely fails, idle and
beside CPU-bound jobs, at 1 and 2 TVM threads, each run a fresh pytest process.

Four tests in one generated project, judged in every run:

- ``test_ab``: the synthetic reduction (``_harness.busy``), slowed by a real compute change
  that keeps its inputs (K = 200 * (1 + s) steps): gated a/b against the baseline's program;
- ``test_shape``: the same kernel slowed by a larger input (n = 16384 * (1 + s) elements,
  the workload's name unchanged): the baseline's program cannot take today's inputs, so
  it is timed a/b on inputs of its own signature (16384 elements) beside today's program
  on today's (mode "a/b, baseline on its own inputs (shapes changed: ...)");
- ``test_peer_far``: the seed's rgb2yuv (parallel) against NumPy with ``vs_numpy`` set to half
  the ratio measured idle (the ratio is 2x past its limit): must be ``exceeded``;
- ``test_peer_aa``: the same with ``vs_numpy`` at 3x the idle ratio: must never fail.

Counted: the time metric's own verdict (``regressed``), with the simulated cost off, so an
exact metric that the compute change moves too cannot stand in for the time gate.

Per load (``--loads``: CPU-bound jobs, benchmarks/_load.py, stopped at the end of the block)
and thread count (``--threads``: TVM_NUM_THREADS), after recording the baselines idle at that
thread count: ``--aa`` runs unchanged (the A/A false failures of test_ab and test_shape), then
``--trials`` runs at each slowdown of ``--slowdowns`` (caught: ``regressed``). The peer tests
are judged in every run. The blocks of one round are interleaved (each load and thread count
once per round) so that the machine's drift touches them alike.

    python benchmarks/under_load.py                                   # the full table (hours)
    python benchmarks/under_load.py --aa 5 --trials 3 --threads 1     # a reduced pass
    python benchmarks/under_load.py --aa 10 --trials 2 --copies 5     # 5 verdicts per process

With ``--copies N`` each process judges N copies of test_ab and test_shape (each its own
baseline entry), so the counts are verdicts, N per process: cheaper, but the copies of one
process share its state (and its load), so they are not N independent processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from _harness import BUSY_WORKLOAD, run_pytest, time_status
from _load import cpu_load

TESTS = (
    BUSY_WORKLOAD
    + """
from pytest_tvmperf import workloads

SLOWDOWN = float(os.environ.get("BUSY_SLOWDOWN_PCT", "0"))

def shaped(scale):
    n = int(round((1 << 14) * scale / 64)) * 64
    steps = 200
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    factor = float(np.sum(np.arange(steps, dtype=np.float64) * 1e-3 + 1.0))
    return Workload(name="shaped", program=te.create_prim_func([a, out]),
                    make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
                    reference=lambda x: x * np.float32(factor), rtol=1e-3, atol=1e-3)

COPIES = range(int(os.environ.get("UNDER_LOAD_COPIES", "1")))

@pytest.mark.tvmperf(executors=["prim"])
@pytest.mark.parametrize("copy", COPIES)
def test_ab(tvmperf, copy):
    tvmperf.check(busy(round(200 * (1 + SLOWDOWN / 100))))

@pytest.mark.tvmperf(executors=["prim"])
@pytest.mark.parametrize("copy", COPIES)
def test_shape(tvmperf, copy):
    tvmperf.check(shaped(1 + SLOWDOWN / 100))

@pytest.mark.tvmperf(executors=["prim"], vs_numpy=float(os.environ.get("PEER_FAR", "100")))
def test_peer_far(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel"))

@pytest.mark.tvmperf(executors=["prim"], vs_numpy=float(os.environ.get("PEER_AA", "100")))
def test_peer_aa(tvmperf):
    tvmperf.check(workloads.rgb2yuv("parallel"))
"""
)


def machine_state() -> str:
    return "load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(project: Path, env: dict, *extra: str) -> dict[str, list[dict]]:
    """One fresh pytest process; test function -> its results entries (one per copy)."""
    report = project / "out.json"
    report.unlink(missing_ok=True)
    out = run_pytest(["--tvmperf-json=out.json", *extra], cwd=project, env=env)
    if not report.exists():
        raise SystemExit(f"no results file; pytest said:\n{out[-3000:]}")
    entries: dict[str, list[dict]] = defaultdict(list)
    for t in json.loads(report.read_text())["tests"]:
        entries[t["test_id"].split("[")[0]].append(t)
    return entries


def save(path: Path, got: dict[str, list[dict]], **where: object) -> None:
    """Append one process's time and peer cells, one JSON line each, with ``where`` it ran."""
    with path.open("a") as f:
        for name, entries in got.items():
            for copy, entry in enumerate(entries):
                time_cell = next((m for m in entry.get("metrics") or [] if m["metric"] == "time"), None)
                settled = (entry.get("time") or {}).get("settled")  # the later looks a borderline verdict took
                cells = {"time": time_cell, "settled": settled, "peers": entry.get("peers") or []}
                f.write(json.dumps({**where, "test": name, "copy": copy, **cells}) + "\n")


def peer_ratio(entry: dict) -> tuple[float, str] | None:
    peer = next(iter(entry.get("peers") or []), None)
    return None if peer is None else (peer["ratio"], peer["status"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", default="0,2,4")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--aa", type=int, default=50, help="unchanged runs per load and thread count")
    parser.add_argument("--trials", type=int, default=10, help="runs per slowdown, load and thread count")
    parser.add_argument("--slowdowns", default="10,25,50")
    parser.add_argument(
        "--threshold",
        type=float,
        default=10,
        help="the time limit in percent (tvmperf_threshold = time=N%%): a slowdown is only a failure past it",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=1,
        help="copies of test_ab and test_shape judged in each process (each its own baseline entry "
        "and verdict): N verdicts per fresh process, the table's counts are verdicts",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=0,
        help="stop after the round that passes this many minutes (0: run every round); the table says how "
        "many rounds ran. The rounds interleave the slowdowns, so a partial table counts each of them",
    )
    parser.add_argument(
        "--save",
        default="",
        help="append each verdict's time cell (ratio, interval, confidence, status, note) and each peer cell, "
        "with its load, threads, test and slowdown, to this JSON-lines file (to study the intervals afterwards)",
    )
    args = parser.parse_args()
    loads = [int(x) for x in args.loads.split(",")]
    threads = [t for t in args.threads.split(",") if t]
    changed = [int(s) for s in args.slowdowns.split(",")]
    # round-robin: A/A and every slowdown in turn, so that a run stopped early (--minutes) counts each
    per_aa = max(1, args.aa // max(1, args.trials)) if args.trials else args.aa
    slowdowns: list[int] = []
    aa_left, trials_left = args.aa, args.trials
    while aa_left or trials_left:
        take = min(per_aa, aa_left)
        slowdowns += [0] * take
        aa_left -= take
        if trials_left:
            slowdowns += changed
            trials_left -= 1
    done = 0
    start = time.time()
    print(f"machine at start: {machine_state()}", flush=True)
    # (load, threads, test, slowdown) -> Counter of verdicts; peers: (load, threads, test) -> statuses
    counts: dict[tuple, Counter] = defaultdict(Counter)
    shown: dict[tuple, list[str]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_load.py").write_text(TESTS)
        # the time verdict alone: the simulated cost (which a compute change moves too) is off
        (project / "pytest.ini").write_text(
            f"[pytest]\ntvmperf_threshold = time={args.threshold:g}%\ntvmperf_simulate = off\n"
        )
        envs = {}
        for t in threads:
            env = dict(os.environ, TVM_NUM_THREADS=t, BUSY_SLOWDOWN_PCT="0", UNDER_LOAD_COPIES=str(args.copies))
            base = project / f"baselines-{t}"
            recorded = run(project, env, "--tvmperf-update", f"--tvmperf-baselines={base}")
            ratio = statistics.median(
                r
                for r in (peer_ratio(recorded["test_peer_aa"][0]), peer_ratio(recorded["test_peer_far"][0]))
                if r
                for r in [r[0]]
            )
            envs[t] = dict(env, PEER_FAR=f"{ratio / 2:.4g}", PEER_AA=f"{ratio * 3:.4g}")
            print(
                f"threads {t}: TVM / NumPy idle {ratio:.3f}x: vs_numpy {ratio / 2:.4g} (far), {ratio * 3:.4g} (A/A)",
                flush=True,
            )
        for i, slowdown in enumerate(slowdowns):
            for load in loads:
                with cpu_load(load, 3600):
                    for t in threads:
                        env = dict(envs[t], BUSY_SLOWDOWN_PCT=str(slowdown))
                        got = run(project, env, f"--tvmperf-baselines={project / f'baselines-{t}'}")
                        if args.save:
                            save(Path(args.save), got, load=load, threads=t, slowdown=slowdown, round=i + 1)
                        for name in ("test_ab", "test_shape"):
                            for entry in got.get(name) or [None] * args.copies:
                                verdict = time_status(entry) if entry else "missing"
                                counts[(load, t, name, slowdown)][verdict] += 1
                                time_cell = (entry or {}).get("time") or {}
                                if time_cell.get("ratio"):
                                    shown[(load, t, name, slowdown)].append(
                                        f"{time_cell['ratio']:.2f}[{time_cell['low']:.2f}-{time_cell['high']:.2f}]"
                                    )
                        for name in ("test_peer_far", "test_peer_aa"):
                            cell = peer_ratio(got[name][0]) if got.get(name) else None
                            counts[(load, t, name, None)][cell[1] if cell else "missing"] += 1
                            if cell:
                                shown[(load, t, name, None)].append(f"{cell[0]:.2f}")
            done = i + 1
            print(
                f"run {i + 1}/{len(slowdowns)} (slowdown {slowdown}%) at {time.time() - start:.0f} s, "
                f"{machine_state()}",
                file=sys.stderr,
                flush=True,
            )
            if i + 1 < len(slowdowns):
                print(f"\n-- after {i + 1} rounds --", flush=True)
                print_table(args, loads, threads, counts, shown)
            if args.minutes and time.time() - start > args.minutes * 60:
                break
    print(
        f"command: python benchmarks/under_load.py --loads {args.loads} --threads {args.threads} "
        f"--aa {args.aa} --trials {args.trials} --slowdowns {args.slowdowns} --copies {args.copies}"
        + (f" --threshold {args.threshold:g}" if args.threshold != 10 else "")
        + (f" --minutes {args.minutes:g}" if args.minutes else "")
    )
    print(f"{(time.time() - start) / 60:.1f} min, {done} of {len(slowdowns)} rounds; machine at end: {machine_state()}")
    print_table(args, loads, threads, counts, shown)


def print_table(args: argparse.Namespace, loads: list[int], threads: list[str], counts: dict, shown: dict) -> None:
    print(
        "| busy jobs | threads | a/b A/A false failures | a/b +"
        + " | a/b +".join(args.slowdowns.split(","))
        + " | shape A/A false failures | shape +"
        + " | shape +".join(args.slowdowns.split(","))
        + " | peer 2x past its limit: exceeded | peer A/A: false failures |"
    )
    for load in loads:
        for t in threads:
            cells = []
            for name in ("test_ab", "test_shape"):
                for s in [0] + [int(x) for x in args.slowdowns.split(",")]:
                    c = counts[(load, t, name, s)]
                    cells.append(f"{c['regressed']}/{sum(c.values())}")
            far, aa = counts[(load, t, "test_peer_far", None)], counts[(load, t, "test_peer_aa", None)]
            cells.append(f"{far['exceeded']}/{sum(far.values())}")
            cells.append(f"{aa['exceeded']}/{sum(aa.values())}")
            print(f"| {load} | {t} | " + " | ".join(cells) + " |")
    print("\nratios [intervals] seen:")
    for key, values in sorted(shown.items(), key=lambda kv: str(kv[0])):
        print(
            f"  load {key[0]} threads {key[1]} {key[2]} +{key[3] if key[3] is not None else '-'}%: " + " ".join(values)
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
