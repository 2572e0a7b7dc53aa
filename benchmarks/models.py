"""Where TVM stands: the bundled model workloads under each compile pipeline, next to
the peer frameworks (NumPy, eager PyTorch, onnxruntime), timed in one process.

For each workload, every pipeline (default, unfused, dlight, tuned) is compiled with
the ``vm-bytecode`` executor for the host ``llvm`` target and checked against the
workload's reference; each peer (the workload's own ``peers``) is checked too. Then
all of them are timed together by the plugin's ``TvmTimer``: one sample of each per
round, in an order that rotates every round, with PyTorch on TVM's thread count, as
``--tvmperf-peers`` times them. Ratios are medians of the per-round ratios, with a
95% bootstrap interval (this process only: another process moves every time by a
few percent, README "How reliable is it?").

``tuned`` uses the MetaSchedule database in ``--tuning-db`` (default
``baselines/tuning``) and is timed only when it has a record for every tunable kernel
of the workload; kernels with symbolic shapes cannot be tuned and keep their untuned
form (noted). Untuned full-size DLA layers take most of a second per call: variants
slower than 0.1 s per call are timed in ``--slow-rounds`` rounds (or left out with
``--skip-slow``), and the fast ones of that workload in as many rounds, each sample
proportionally longer.

    python benchmarks/models.py                          # all workloads, all pipelines
    python benchmarks/models.py --workloads mlp,dla_stem --pipelines default,tuned --markdown
"""

from __future__ import annotations

import argparse
import math
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pytest_tvmperf import workloads
from pytest_tvmperf.builder.correctness import check_outputs
from pytest_tvmperf.builder.executors import CompileError
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.measure.host_machine import current_machine
from pytest_tvmperf.builder.timer import TimingTask, TvmTimer, python_sampler
from pytest_tvmperf.builder.pipelines import tuning_module
from pytest_tvmperf.result.text import fmt_time
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.measure.threads import same_threads, tvm_threads
from pytest_tvmperf.judge.timestats import bootstrap_se_log_ratio
from pytest_tvmperf.workload import PIPELINES, PeerUnavailable

ROOT = Path(__file__).resolve().parents[1]
#: a variant slower than this per call is "slow": --slow-rounds rounds, or --skip-slow
SLOW_S = 0.1
PEERS = ("numpy", "torch", "onnxruntime")
Z95 = 1.96


@dataclass(frozen=True)
class Case:
    label: str  # how the workload is written in Python, the table's row name
    make: Callable[[], Any]
    tune_k: str | None  # the -k of the tests/perf test that tunes it, if any


CASES: dict[str, Case] = {
    "mlp": Case("mlp(batch=1)", lambda: workloads.mlp(batch=1), "test_mlp_pipelines and tuned"),
    "mlp_dyn": Case('mlp(batch="n", run_batch=4)', lambda: workloads.mlp(batch="n", run_batch=4), None),
    "torch_mlp_dyn": Case('torch_mlp(batch="n")', lambda: workloads.torch_mlp(batch="n"), None),
    "dla_stem": Case('dla_conv("stem")', lambda: workloads.dla_conv("stem"), "test_dla_conv_tuned and stem"),
    "dla_level4_1x1": Case(
        'dla_conv("level4_1x1")', lambda: workloads.dla_conv("level4_1x1"), "test_dla_conv_tuned and level4_1x1"
    ),
    "small_mlp_onnx": Case("small_mlp_onnx()", lambda: workloads.small_mlp_onnx(), None),
}


@dataclass
class Variant:
    """One column of a workload's row: a TVM pipeline (``tvm:<pipeline>``) or a peer."""

    name: str
    cell: str = ""  # what the time table shows when it was not timed
    note: str = ""  # why, or something worth knowing about the timed one
    run: Callable[[], Any] | None = None  # the probe call's function (for the slow check)
    make_sampler: Callable[[int], Callable[[], float]] | None = None  # min_repeat_ms -> sampler
    probe_s: float = 0.0
    samples: tuple[float, ...] = ()

    @property
    def slow(self) -> bool:
        return self.probe_s > SLOW_S

    @property
    def median(self) -> float | None:
        return float(statistics.median(self.samples)) if self.samples else None


@dataclass
class Row:
    key: str
    label: str
    variants: dict[str, Variant] = field(default_factory=dict)
    rounds: int = 0
    problem: str = ""
    seconds: float = 0.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def first_line(exc: BaseException) -> str:
    text = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def tune_hint(case: Case) -> str:
    if case.tune_k:
        return f"tvmperf tune --trials N tests/perf -k '{case.tune_k}'"
    return (
        "tvmperf tune --trials N tests/perf -k ... (no test in tests/perf tunes it: "
        "add one with .with_pipeline('tuned'))"
    )


def tuned_state(case: Case, workload: Any, target: Any, db: Path) -> tuple[str | None, str]:
    """(why 'tuned' cannot be timed or None, a note about it)."""
    from pytest_tvmperf.builder import tuning

    tvm_target = target.tvm_target()
    try:
        state = tuning.inspect(tuning_module(workload, tvm_target), tvm_target, db)
    except tuning.TuningError as exc:
        return f"n/a ({exc})", ""
    except Exception as exc:  # TVM's own error types, from fusing the module
        return f"n/a (its kernels cannot be inspected: {first_line(exc)})", ""
    if state.missing:
        where = " (it has records for other targets)" if state.other_targets else ""
        return (
            f"not in the database: {len(state.missing)} of {len(state.tasks)} kernel(s) have no record{where} "
            f"(run: {tune_hint(case)})"
        ), ""
    if not state.tasks:
        return None, (
            f"nothing to tune: its {len(state.untunable)} kernel(s) have symbolic shapes, "
            "so 'tuned' compiles them untuned"
        )
    note = f"{len(state.tasks)} kernel(s) tuned, records {state.records_hash}"
    if state.untunable:
        note += f", {len(state.untunable)} untunable left as they are"
    return None, note


def reprobe(v: Variant) -> None:
    """One call timed as the samples will be: the first call (the check) also pays
    for first-use work (a VM, lazy initialization) and can look slow."""
    v.probe_s = v.make_sampler(1)()


def prepare_tvm(
    case: Case,
    workload: Any,
    pipeline: str,
    target: Any,
    db: Path,
    args: list,
    inputs: list,
    expected: list,
    out_specs: list,
) -> Variant:
    v = Variant(f"tvm:{pipeline}")
    tuning_db = None
    if pipeline == "tuned":
        problem, note = tuned_state(case, workload, target, db)
        v.note = f"tuned: {note}" if note else ""
        if problem:
            v.cell = "not tuned" if problem.startswith("not in") else "n/a"
            v.note = f"tuned: {problem}"
            return v
        tuning_db = db
    start = time.perf_counter()
    try:
        compiled = get_executor("vm-bytecode").compile(workload.with_pipeline(pipeline), target, tuning_db=tuning_db)
    except CompileError as exc:
        v.cell, v.note = "compile failed", f"{pipeline}: {str(exc).splitlines()[0]}"
        return v
    compile_s = time.perf_counter() - start
    try:
        got = compiled.run(args, out_specs)
    except Exception as exc:  # TVM's own error types
        v.cell, v.note = "failed", f"{pipeline}: compiled, but running it failed ({first_line(exc)})"
        return v
    mismatch = check_outputs(got, expected, workload.rtol, workload.atol)
    if mismatch:
        v.cell, v.note = "wrong", f"{pipeline}: does not match the reference: {mismatch.message().splitlines()[0]}"
        return v
    v.make_sampler = lambda ms: compiled.sampler(args, out_specs, ms)
    reprobe(v)
    log(f"  {v.name:12} compiled in {compile_s:.1f} s, checked; one call {fmt_time(v.probe_s)}")
    return v


def prepare_peer(name: str, workload: Any, inputs: list, expected: list) -> Variant:
    v = Variant(name)
    factory = workload.peers.get(name)
    if factory is None:
        v.cell = "-"
        return v
    try:
        run = factory()
    except (ImportError, PeerUnavailable) as exc:
        v.cell, v.note = "n/a", f"{name}: n/a ({exc})"
        return v
    try:
        with same_threads(tvm_threads()):
            got = run(*inputs)
    except Exception as exc:  # a framework's own error types
        v.cell, v.note = "failed", f"{name}: failed ({first_line(exc)})"
        return v
    got = [np.asarray(g) for g in got] if isinstance(got, (list, tuple)) else [np.asarray(got)]
    mismatch = check_outputs(got, expected, workload.rtol, workload.atol)
    if mismatch:
        v.cell, v.note = "wrong", f"{name}: does not match the reference: {mismatch.message().splitlines()[0]}"
        return v
    v.make_sampler = lambda ms: python_sampler(run, inputs, ms)
    with same_threads(tvm_threads()):
        reprobe(v)
    log(f"  {name:12} checked; one call {fmt_time(v.probe_s)}")
    return v


def measure(case: Case, key: str, args: argparse.Namespace, target: Any, db: Path) -> Row:
    row = Row(key, case.label)
    started = time.perf_counter()
    try:
        workload = case.make()
    except ImportError as exc:
        row.problem = f"n/a ({exc})"
        return row
    except Exception as exc:  # WorkloadError, a frontend's error
        row.problem = f"n/a (the workload cannot be built: {first_line(exc)})"
        return row
    inputs = workload.inputs()
    run_args = [*inputs, *(a for _, a in workload.params)]
    expected = workload.expected(inputs)
    out_specs = [(e.shape, str(e.dtype)) for e in expected]
    for pipeline in args.pipelines:
        v = prepare_tvm(case, workload, pipeline, target, db, run_args, inputs, expected, out_specs)
        row.variants[v.name] = v
    for name in PEERS:
        row.variants[name] = prepare_peer(name, workload, inputs, expected)

    timed = [v for v in row.variants.values() if v.make_sampler is not None]
    if args.skip_slow:
        for v in timed:
            if v.slow:
                v.cell, v.note = "skipped", f"{v.name}: skipped (--skip-slow: {fmt_time(v.probe_s)} per call)"
        timed = [v for v in timed if not v.slow]
    if not timed:
        row.seconds = time.perf_counter() - started
        return row
    any_slow = any(v.slow for v in timed)
    row.rounds = args.slow_rounds if any_slow else args.rounds
    # fast variants of a workload timed in few rounds: longer samples, about as much timed time
    fast_ms = args.min_repeat_ms * max(1, math.ceil(args.rounds / row.rounds))
    samplers = {v.name: v.make_sampler(1 if v.slow else fast_ms) for v in timed}
    log(
        f"  timing {len(samplers)} variants, {row.rounds} rounds"
        f"{f' (slow variants present; fast ones {fast_ms} ms per sample)' if any_slow else ''}"
    )
    task = TimingTask(workload=lambda: 1.0, peers=samplers)  # every variant is a "peer"; the workload slot idles
    with same_threads(tvm_threads()):
        result = TvmTimer()(task, row.rounds)
    for name, values in result.peers:
        row.variants[name].samples = values
    row.seconds = time.perf_counter() - started
    return row


# ----------------------------------------------------------------------- output


def fmt_ratio(r: float) -> str:
    if r >= 100:
        return f"{r:.0f}"
    if r >= 10:
        return f"{r:.1f}"
    return f"{r:.2f}"


def ratio_cell(a: Variant, b: Variant) -> str:
    """a/b: the median of the per-round ratios, with a 95% bootstrap interval."""
    if not a.samples or not b.samples:
        return ""
    ratios = [x / y for x, y in zip(a.samples, b.samples)]
    mid = float(np.median(ratios))
    se = bootstrap_se_log_ratio(ratios, None)
    low, high = mid * math.exp(-Z95 * se), mid * math.exp(Z95 * se)
    return f"{fmt_ratio(mid)}x [{fmt_ratio(low)}-{fmt_ratio(high)}]"


def time_table(rows: list[Row], pipelines: list[str]) -> tuple[list[str], list[list[str]]]:
    peers = [p for p in PEERS if any(p in r.variants and r.variants[p].cell != "-" for r in rows)]
    header = ["workload", "rounds", *(f"TVM {p}" for p in pipelines), *peers]
    body = []
    for r in rows:
        if r.problem:
            body.append([r.label, "-", *(["n/a"] * (len(header) - 2))])
            continue
        cells = [r.label, str(r.rounds or "-")]
        for name in [*(f"tvm:{p}" for p in pipelines), *peers]:
            v = r.variants[name]
            cells.append(fmt_time(v.median) if v.samples else (v.cell or "n/a"))
        body.append(cells)
    return header, body


def ratio_table(rows: list[Row], pipelines: list[str]) -> tuple[list[str], list[list[str]]]:
    """One row per timed TVM pipeline of each workload: its time over the tuned build's
    (for the others: the speedup tuning gives) and over each peer's."""
    peers = [p for p in PEERS if any(p in r.variants and r.variants[p].samples for r in rows)]
    with_tuned = "tuned" in pipelines
    header = ["workload", "TVM pipeline", *(["/ TVM tuned"] if with_tuned else []), *(f"/ {p}" for p in peers)]
    body = []
    for r in rows:
        for p in pipelines:
            v = r.variants.get(f"tvm:{p}")
            if v is None or not v.samples:
                continue
            cells = [r.label, p]
            if with_tuned:
                tuned = r.variants["tvm:tuned"]
                cells.append("" if p == "tuned" else ratio_cell(v, tuned))
            cells += [ratio_cell(v, r.variants[q]) if q in r.variants else "" for q in peers]
            body.append([c or "-" for c in cells])
    return header, body


def render(header: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    return lines + ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in body]


def versions() -> str:
    out = [f"numpy {np.__version__}"]
    for module in ("torch", "onnxruntime"):
        mod = sys.modules.get(module)
        if mod is None:
            try:
                mod = __import__(module)
            except ImportError:
                out.append(f"{module} not installed")
                continue
        out.append(f"{module} {mod.__version__}")
    return ", ".join(out)


def command_line() -> str:
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = sys.argv[0]
    return shlex.join(["python", shown, *sys.argv[1:]])


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workloads: " + ", ".join(f"{k} = {c.label}" for k, c in CASES.items()),
    )
    parser.add_argument("--workloads", default=",".join(CASES), help="comma list of workload keys (default: all)")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="comma list (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of interleaved samples (default: %(default)s)")
    parser.add_argument(
        "--slow-rounds",
        type=int,
        default=3,
        help=f"rounds for a workload with a variant slower than {SLOW_S:g} s per call (default: %(default)s)",
    )
    parser.add_argument("--min-repeat-ms", type=int, default=20, help="length of one sample (default: %(default)s)")
    parser.add_argument(
        "--skip-slow", action="store_true", help=f"leave out variants slower than {SLOW_S:g} s per call"
    )
    parser.add_argument(
        "--tuning-db",
        default="baselines/tuning",
        help="the tuning database of 'tuned' (relative paths: from the repository root; default: %(default)s)",
    )
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args()
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    args.pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    unknown = [w for w in args.workloads if w not in CASES]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    bad = [p for p in args.pipelines if p not in PIPELINES]
    if bad:
        parser.error(f"unknown pipeline(s) {', '.join(bad)}; choose from {', '.join(PIPELINES)}")
    if args.rounds < 1 or args.slow_rounds < 1 or args.min_repeat_ms < 1:
        parser.error("--rounds, --slow-rounds and --min-repeat-ms must be >= 1")
    return args


def main() -> None:
    args = parse_args()
    start = time.perf_counter()
    target = resolve_target("llvm")
    db = Path(args.tuning_db)
    if not db.is_absolute():
        db = ROOT / db
    rows = []
    for i, key in enumerate(args.workloads, 1):
        case = CASES[key]
        log(f"[{i}/{len(args.workloads)}] {case.label}")
        rows.append(measure(case, key, args, target, db))
        log(f"  done in {rows[-1].seconds:.0f} s")
    elapsed = time.perf_counter() - start

    machine = current_machine(target.as_json())
    print(f"command: {command_line()}")
    print(f"machine: {machine.describe()}; target llvm -mcpu={target.config.get('mcpu')}; {versions()}")
    print(
        f"timing: vm-bytecode executor, {args.rounds} rounds ({args.slow_rounds} for workloads with a variant slower "
        f"than {SLOW_S:g} s per call), samples of >= {args.min_repeat_ms} ms, interleaved in one process; "
        f"PyTorch on TVM's {tvm_threads()} thread(s)"
    )
    print()
    print("median time per call")
    print("\n".join(render(*time_table(rows, args.pipelines), args.markdown)))
    print()
    print(
        "TVM time over the tuned build's and over each peer's (below 1: TVM, or the pipeline, is faster); "
        "median of per-round ratios [95% interval, this process]"
    )
    print("\n".join(render(*ratio_table(rows, args.pipelines), args.markdown)))
    notes = []
    for r in rows:
        if r.problem:
            notes.append(f"{r.label}: {r.problem}")
        for v in r.variants.values():
            if v.note:
                notes.append(f"{r.label}: {v.note}")
    if notes:
        print()
        print("notes:")
        for n in notes:
            print(f"  - {n}")
    print()
    print(f"wall time: {elapsed:.0f} s ({', '.join(f'{r.key} {r.seconds:.0f} s' for r in rows)})")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
