"""Prove the GPU path end to end on a machine with an NVIDIA GPU (issue 49).

In a scratch project, through pytest and the plugin as a user runs them (each run a fresh
``python -m pytest`` process), five steps:

  1. record, then gate unchanged, the bundled ``cuda`` perf tests (tests/perf/test_cuda.py:
     rgb2yuv gpu, the DLA conv layers, the MLP on vm-bytecode and vm-compiled) and the MLP
     on the ``vm-cudagraph`` executor; the DLA stem's ``device_peak_bytes`` must be measured
     and above 0 (the driver counts free memory in pages of 2 MiB: the MLP's few KiB read as
     0), and the timings must carry the GPU's fingerprint;
  2. a gate with an injected slowdown of one kernel (a real compute change: a reduction
     over 4x the steps), which must fail on time;
  3. the RGB->YUV report's comparison on the GPU: default schedule vs the ``gpu`` schedule
     vs NumPy (``--tvmperf-peers=numpy``);
  4. one DLA-34 conv layer (as a torch module) against torch on the GPU with
     ``--tvmperf-layers=on``, whose layer table must name the layer, with both sides timed
     on the GPU (the device waited for at each clock read);
  5. a process-noise figure: an unchanged program timed a/b (TVMPERF_SAME_PROGRAM=time)
     in 5 fresh processes, the ratios' spread printed.

It prints one table (step, verdict, seconds, what was checked) and writes it as JSON
(``--json``, default ``<out>/gpu_check.json``); each step that did not do what it must is
named, its pytest output kept in ``<out>/step<N>-<run>.txt``. Exit status: 0 every step
proven, 1 a step failed, 2 the machine cannot prove the GPU path (one line per missing
thing: TVM, torch with CUDA, a visible GPU, TVM's CUDA runtime and kernel compiler).

``--dry-run`` (a machine without a GPU, CI): the same steps with the GPU hidden from the
pytest processes (``CUDA_VISIBLE_DEVICES=``), so the cuda target is built (nvcc, ptxas)
and gated on its exact metrics but not run; it checks the script itself (its scratch
project, its commands, its table and JSON) and that every step says "not run", with
``device_peak_bytes`` n/a and its reason. Its steps build the smallest variant of each
(step 1: the MLP and the DLA stem only; step 5: 2 processes).

The real run (Python 3.12, torch with CUDA, TVM unpacked, no network; ~8 minutes at most)::

    cd pytest-tvmperf                                   # this repository
    export PYTHONPATH=$PWD:/path/to/tvm/python          # the plugin and TVM (TVM's python/ dir)
    export TVM_LIBRARY_PATH=/path/to/tvm/build          # where libtvm.so is, if not found beside it
    # TVM compiles kernels with NVRTC (the cuda-bindings package); with only nvcc on PATH:
    # export TVM_CUDA_COMPILE_MODE=nvcc
    python -c "import tvm, torch; print(tvm.cuda(0).exist, torch.cuda.is_available())"  # True True
    timeout 480 python benchmarks/gpu_check.py --out /tmp/gpu_check --budget 450
    cat /tmp/gpu_check/gpu_check.json                   # the table; step<N>-<run>.txt: each pytest output
    # if the budget runs out (a step says "not started: the run's --budget was spent"), in two calls:
    # python benchmarks/gpu_check.py --out /tmp/gpu_a --steps 1; python benchmarks/gpu_check.py --out /tmp/gpu_b --steps 2,3,4,5

and on a machine without a GPU (the CI test runs ``--dry-run --steps 1,4``)::

    python benchmarks/gpu_check.py --dry-run --out /tmp/gpu_dry
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
ALL_STEPS = (1, 2, 3, 4, 5)
#: the text every dry-run step's tests must carry: built, not run (the plugin's own note)
NOT_RUN_NOTE = "not run"
#: set to 1 to make the script see no GPU (its tests; the dry run hides it from pytest anyway)
HIDE_GPU_ENV = "GPU_CHECK_HIDE_GPU"
#: the file that marks the scratch project as this script's (only such a directory is removed)
SCRATCH_MARK = ".gpu_check_scratch"


class Verdict(str, Enum):
    PROVEN = "proven"
    FAILED = "FAILED"
    DRY_OK = "dry run: built, not run"
    DRY_FAILED = "dry run FAILED"


@dataclass(frozen=True)
class StepResult:
    step: int
    name: str
    verdict: Verdict
    seconds: float
    checked: str
    problems: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    figures: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            **asdict(self),
            "verdict": self.verdict.value,
            "problems": list(self.problems),
            "outputs": list(self.outputs),
        }


# ------------------------------------------------------------------ the scratch project

CUDAGRAPH_TEST = '''

@CUDA
@pytest.mark.tvmperf(executors=["vm-cudagraph"])
def test_mlp_cudagraph(tvmperf):
    """gpu_check: the MLP under CUDA graph capture."""
    tvmperf.check(workloads.mlp(batch=1))
'''

SLOW_TEST = '''
import os
import numpy as np
import pytest
from tvm import s_tir, te
from pytest_tvmperf import Workload


def busy(steps, n=1 << 20):
    """out[i] = sum_k a[i] * (k * 1e-3 + 1): its GPU time grows with steps (a real compute change)."""
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, steps), name="k")
    out = te.compute((n,), lambda i: te.sum(a[i] * (k.astype("float32") * 1e-3 + 1.0), axis=k), name="B")
    sch = s_tir.Schedule(te.create_prim_func([a, out]))
    block = sch.get_sblock("B")
    i, kk = sch.get_loops(block)
    bx, tx = sch.split(i, factors=[None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    factor = float(np.sum(np.arange(steps, dtype=np.float64) * 1e-3 + 1.0))
    return Workload(name="busy", program=sch.mod["main"],
                    make_inputs=lambda rng, dims: [rng.standard_normal(n).astype("float32")],
                    reference=lambda x: x * np.float32(factor), rtol=1e-3, atol=1e-3)


@pytest.mark.tvmperf(executors=["prim"], targets=["cuda"])
def test_busy(tvmperf):
    tvmperf.check(busy(int(os.environ.get("GPU_CHECK_STEPS", "512"))))
'''

RGB_TEST = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["prim"], targets=["cuda"])
@pytest.mark.parametrize("schedule", ["default", "gpu"])
def test_rgb2yuv(tvmperf, schedule):
    tvmperf.check(workloads.rgb2yuv(schedule=schedule, width=1280, height=720))
"""

LAYER_NAME = "level2_3x3"
#: what the layer table says of a torch side timed on the GPU (measure/peer_layers.py)
TORCH_ON_GPU = "torch timed on the GPU"
LAYER_TEST = f'''
import pytest
from pytest_tvmperf import workloads


def one_layer():
    """DLA-34's {LAYER_NAME} conv (64 -> 64 channels, 3x3, stride 1) at half its spatial size."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.{LAYER_NAME} = torch.nn.Conv2d(64, 64, 3, stride=1, padding=1, bias=False)

        def forward(self, x):
            return self.{LAYER_NAME}(x)

    return workloads.torch_workload(Block(), (torch.zeros(1, 64, 76, 76),), name="dla_{LAYER_NAME}", rtol=1e-3, atol=1e-3)


@pytest.mark.tvmperf(executors=["vm-bytecode"], targets=["cuda"])
def test_dla_layer(tvmperf):
    tvmperf.check(one_layer())
'''

SAME_TEST = """
import pytest
from pytest_tvmperf import workloads


@pytest.mark.tvmperf(executors=["vm-bytecode"], targets=["cuda"])
def test_mlp_same(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))
"""


#: each step's pytest.ini: the cuda target, and every executor (vm-cudagraph is asked for by name)
PYTEST_INI = "[pytest]\ntvmperf_targets = cuda\ntvmperf_executors = vm-bytecode,vm-compiled,prim,vm-cudagraph\n"


@dataclass(frozen=True)
class Run:
    """One pytest process of a step: its output and the results JSON it wrote."""

    label: str
    output: str
    returncode: int
    results: list[dict]

    def entries(self) -> dict[str, dict]:
        return {e["test_id"]: e for e in self.results}


class Project:
    """The scratch project: one directory per step, pytest run in it as a user would."""

    def __init__(
        self, root: Path, out: Path, dry: bool, timeout: float, deadline: float = float("inf"), clock=time.monotonic
    ):
        self.root, self.out, self.dry, self.timeout = root, out, dry, timeout
        self.deadline, self.clock = deadline, clock  # the whole run's end (--budget), on ``clock``

    def step_dir(self, step: int, files: dict[str, str]) -> Path:
        path = self.root / f"step{step}"
        path.mkdir(parents=True, exist_ok=True)
        (path / "pytest.ini").write_text(PYTEST_INI)
        for name, text in files.items():
            (path / name).write_text(text)
        return path

    def pytest(self, step: int, label: str, cwd: Path, args: list[str], env: dict[str, str] | None = None) -> Run:
        results = cwd / f"{label}.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::UserWarning"]
        cmd += [*plugin_args(), *args, f"--tvmperf-json={results}"]
        full_env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        if self.dry:
            full_env["CUDA_VISIBLE_DEVICES"] = ""  # built, not run, whatever the machine has
        full_env.update(env or {})
        timeout = min(self.timeout, self.deadline - self.clock())
        if timeout <= 0:
            output, code = "gpu_check: not started: the run's --budget was spent", -1
        else:
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=cwd,
                    env=full_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=timeout,
                )
                output, code = proc.stdout, proc.returncode
            except subprocess.TimeoutExpired as exc:
                text = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
                output, code = f"{text}\ngpu_check: stopped after {timeout:.0f} s (--timeout / --budget)", -1
        (self.out / f"step{step}-{label}.txt").write_text(f"$ {' '.join(cmd)}\n(cwd {cwd})\n\n{output}")
        try:
            data = json.loads(results.read_text())["tests"]
        except (OSError, ValueError, KeyError):
            data = []
        return Run(label, output, code, data)


def plugin_args() -> list[str]:
    """``-p pytest_tvmperf.plugin`` where the plugin is not installed (only on PYTHONPATH,
    as on a machine without network); nothing where its entry point loads it already."""
    from importlib.metadata import entry_points

    installed = any(e.value == "pytest_tvmperf.plugin" for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_tvmperf.plugin"]


# ------------------------------------------------------------------ checks (pure)


def check_runs_completed(runs: list[Run], expect_tests: int | None = None) -> list[str]:
    problems = []
    for run in runs:
        skipped = re.search(r"\d+ skipped", run.output)
        if not run.results:
            problems.append(f"{run.label}: pytest wrote no results (exit {run.returncode})")
        elif skipped:
            problems.append(f"{run.label}: {skipped.group(0)} (see its output for why)")
        elif expect_tests is not None and len(run.results) != expect_tests:
            problems.append(f"{run.label}: {len(run.results)} test(s) ran, expected {expect_tests}")
    return problems


def check_verdicts(run: Run, allowed: set[str]) -> list[str]:
    return [
        f"{run.label}: {tid} is {e['verdict']} (expected {' or '.join(sorted(allowed))}): {e.get('message', '')[:300]}"
        for tid, e in sorted(run.entries().items())
        if e["verdict"] not in allowed
    ]


def check_not_run(run: Run) -> list[str]:
    return [
        f"{run.label}: {tid} ran on a device in a dry run (note {e.get('note')!r}, time {e.get('time')})"
        for tid, e in sorted(run.entries().items())
        if NOT_RUN_NOTE not in (e.get("note") or "") or e.get("time")
    ]


def check_timed(run: Run) -> list[str]:
    return [
        f"{run.label}: {tid} was not timed on the GPU (note {e.get('note')!r})"
        for tid, e in sorted(run.entries().items())
        if not (e.get("record") or {}).get("timings")
    ]


def device_peak(entry: dict) -> tuple[int | None, str]:
    exact = (entry.get("record") or {}).get("exact") or {}
    return exact.get("device_peak_bytes"), (exact.get("not_measured") or {}).get("device_peak_bytes", "")


def check_device_peak(run: Run, test_id: str, dry: bool) -> tuple[list[str], str]:
    entry = run.entries().get(test_id)
    if entry is None:
        return [f"{run.label}: no result for {test_id}"], "device_peak_bytes: no result"
    from pytest_tvmperf.values.peak_memory import NOT_RUN  # the plugin's own reason: cuda without a GPU

    value, why = device_peak(entry)
    if dry:
        if value is None and why == NOT_RUN:
            return [], f"device_peak_bytes n/a ({why})"
        return [f"{test_id}: device_peak_bytes in a dry run is {value!r}, reason {why!r} (expected n/a, not run)"], ""
    if isinstance(value, int) and value > 0:
        return [], f"device_peak_bytes {value:,} B"
    return [f"{test_id}: device_peak_bytes is {value!r} on the GPU (n/a: {why or '-'}); expected a measured > 0"], ""


def check_fingerprint(run: Run, gpu_name: str) -> list[str]:
    problems = []
    for tid, e in sorted(run.entries().items()):
        timings = (e.get("record") or {}).get("timings") or {}
        if timings and gpu_name and gpu_name not in json.dumps(timings):
            problems.append(f"{run.label}: {tid}'s timing does not name the GPU {gpu_name!r} in its fingerprint")
    return problems


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.3f} ms" if isinstance(seconds, (int, float)) else "n/a"


def check_layer_sync(entry: dict) -> list[str]:
    """On a GPU the per-layer TVM side must be device-synchronized: its whole run (timed
    with its rows) at least half the test's own median (time_evaluator, synchronized)."""
    median = ((entry.get("time") or {}).get("median_s")) or next(
        iter(((entry.get("record") or {}).get("timings") or {}).values()), {}
    ).get("median_s")
    problems = []
    for table in entry.get("layers") or []:
        total = table.get("tvm_total_s")
        if median and isinstance(total, (int, float)) and total < 0.5 * median:
            problems.append(
                f"the layer table's TVM run ({total * 1e6:.1f} us) is under half the test's median "
                f"({median * 1e6:.1f} us): its kernel times look unsynchronized with the GPU"
            )
    return problems


def ratio_spread(ratios: list[float]) -> dict:
    """The a/b ratios of an unchanged program over fresh processes: range and spread."""
    if not ratios:
        return {"ratios": [], "min": None, "max": None, "spread": None, "median": None}
    return {
        "ratios": [round(r, 4) for r in ratios],
        "min": min(ratios),
        "max": max(ratios),
        "spread": max(ratios) / min(ratios),
        "median": statistics.median(ratios),
    }


def format_table(results: list[StepResult], dry: bool) -> str:
    width = max(len(r.verdict.value) for r in results) if results else 10
    lines = [
        f"gpu_check{' --dry-run' if dry else ''}: {sum(r.verdict in (Verdict.PROVEN, Verdict.DRY_OK) for r in results)}/{len(results)} steps whole"
    ]
    lines.append(f"{'step':<28} {'verdict':<{width}} {'s':>6}  checked")
    for r in results:
        lines.append(f"{f'{r.step}. {r.name}':<28} {r.verdict.value:<{width}} {r.seconds:6.1f}  {r.checked}")
    for r in results:
        for p in r.problems:
            lines.append(f"  step {r.step} FAILED: {p}")
        if r.problems and r.outputs:
            lines.append(f"  step {r.step} output kept: {', '.join(r.outputs)}")
    return "\n".join(lines)


# ------------------------------------------------------------------ the steps


@dataclass(frozen=True)
class Context:
    project: Project
    dry: bool
    gpu_name: str
    noise_runs: int


def step_record_gate(ctx: Context) -> tuple[str, list[str], dict]:
    text = (ROOT / "tests" / "perf" / "test_cuda.py").read_text() + CUDAGRAPH_TEST
    cwd = ctx.project.step_dir(1, {"test_cuda.py": text})
    select = ["-k", "mlp or stem"] if ctx.dry else []
    rec = ctx.project.pytest(1, "record", cwd, ["--tvmperf-update", *select])
    gate = ctx.project.pytest(1, "gate", cwd, [*select])
    problems = check_runs_completed([rec, gate])
    problems += check_verdicts(rec, {"recorded"}) + check_verdicts(gate, {"pass"})
    # the driver reports free memory in pages (2 MiB on an H200): the MLP's few KiB read as 0,
    # the DLA stem's 22.6 MiB of intermediates do not
    stem = "test_dla_conv_cuda[cuda-vm-bytecode-stem]"
    peak_problems, peak_text = check_device_peak(rec, stem, ctx.dry)
    problems += peak_problems
    if ctx.dry:
        problems += check_not_run(rec) + check_not_run(gate)
    else:
        problems += check_timed(rec) + check_fingerprint(rec, ctx.gpu_name)
    graph = rec.entries().get("test_mlp_cudagraph[cuda-vm-cudagraph]")
    if graph is None or not any("cudagraph" in tid for tid in gate.entries()):
        problems.append("the vm-cudagraph test did not run")
    elif "vm.builtin.cuda_graph" not in json.dumps((graph.get("record") or {}).get("bytecode")):
        problems.append("the vm-cudagraph build has no vm.builtin.cuda_graph calls in its bytecode")
    n = len(gate.results)
    what = "built + exact metrics gated" if ctx.dry else "checked vs NumPy, timed, gated"
    checked = f"{n} cuda tests recorded then passed ({what}; vm-cudagraph incl.); {peak_text}"
    return checked, problems, {"tests": n}


def step_slowdown(ctx: Context) -> tuple[str, list[str], dict]:
    cwd = ctx.project.step_dir(2, {"test_slow.py": SLOW_TEST})
    rec = ctx.project.pytest(2, "record", cwd, ["--tvmperf-update"], {"GPU_CHECK_STEPS": "512"})
    slow = ctx.project.pytest(2, "slowed", cwd, [], {"GPU_CHECK_STEPS": "2048"})
    problems = check_runs_completed([rec, slow], 1) + check_verdicts(rec, {"recorded"})
    figures: dict = {}
    if ctx.dry:
        problems += check_not_run(slow)
        checked = "reduction 512 -> 2048 steps: built, gated on exact metrics (time not measured)"
    else:
        entry = next(iter(slow.results), {})
        time_cell = entry.get("time") or {}
        figures = {"ratio": time_cell.get("ratio"), "failed": entry.get("failed")}
        if entry.get("verdict") != "regressed" or "time" not in (entry.get("failed") or []):
            problems.append(
                f"slowed: expected regressed on time, got {entry.get('verdict')} failing {entry.get('failed')} "
                f"(ratio {time_cell.get('ratio')})"
            )
        ratio = time_cell.get("ratio")
        checked = f"reduction 512 -> 2048 steps failed on time (ratio {ratio:.2f})" if ratio else "no time ratio"
    return checked, problems, figures


def step_rgb(ctx: Context) -> tuple[str, list[str], dict]:
    cwd = ctx.project.step_dir(3, {"test_rgb.py": RGB_TEST})
    run = ctx.project.pytest(3, "compare", cwd, ["--tvmperf-update", "--tvmperf-peers=numpy"])
    problems = check_runs_completed([run], 2) + check_verdicts(run, {"recorded"})
    figures: dict = {}
    if ctx.dry:
        problems += check_not_run(run)
        checked = "rgb2yuv default and gpu schedules built for cuda, NumPy peer asked (not run)"
    else:
        problems += check_timed(run)
        for tid, e in sorted(run.entries().items()):
            timings = (e.get("record") or {}).get("timings") or {}
            median = next(iter(timings.values()), {}).get("median_s") if timings else None
            numpy = next((p for p in e.get("peers") or [] if p.get("name") == "numpy"), None)
            if numpy is None:
                problems.append(f"{tid}: NumPy was not timed beside it")
            figures[tid] = {"median_s": median, "numpy_s": (numpy or {}).get("denominator_s")}
        checked = "default vs gpu schedule vs NumPy: " + "; ".join(
            f"{tid.split('-')[-1].rstrip(']')} {_ms(f['median_s'])} (NumPy {_ms(f['numpy_s'])})"
            for tid, f in figures.items()
        )
    return checked, problems, figures


def step_layers(ctx: Context) -> tuple[str, list[str], dict]:
    cwd = ctx.project.step_dir(4, {"test_layer.py": LAYER_TEST})
    run = ctx.project.pytest(4, "layers", cwd, ["--tvmperf-update", "--tvmperf-peers=torch", "--tvmperf-layers=on"])
    problems = check_runs_completed([run], 1) + check_verdicts(run, {"recorded"})
    figures: dict = {}
    if ctx.dry:
        problems += check_not_run(run)
        checked = f"DLA {LAYER_NAME} (torch module) built for cuda with --tvmperf-layers=on (not run: no table)"
    else:
        entry = next(iter(run.results), {})
        tables = entry.get("layers") or []
        if not tables:
            problems.append("no layer table in the results JSON")
        elif LAYER_NAME not in json.dumps(tables):
            problems.append(f"the layer table does not name {LAYER_NAME}")
        if tables and TORCH_ON_GPU not in json.dumps(tables):
            problems.append(f"the layer table's torch side was not timed on the GPU (no note {TORCH_ON_GPU!r})")
        problems += check_layer_sync(entry)
        figures = {k: t.get(k) for t in tables[:1] for k in ("peer", "tvm_total_s", "peer_total_s")}
        checked = (
            f"layer table vs torch names {LAYER_NAME}: TVM {_ms(figures.get('tvm_total_s'))}, torch "
            f"{_ms(figures.get('peer_total_s'))} (both on the GPU)"
        )
    return checked, problems, figures


def step_noise(ctx: Context) -> tuple[str, list[str], dict]:
    cwd = ctx.project.step_dir(5, {"test_same.py": SAME_TEST})
    rec = ctx.project.pytest(5, "record", cwd, ["--tvmperf-update"])
    runs = [
        ctx.project.pytest(5, f"ab{i + 1}", cwd, [], {"TVMPERF_SAME_PROGRAM": "time"}) for i in range(ctx.noise_runs)
    ]
    problems = check_runs_completed([rec, *runs], 1) + check_verdicts(rec, {"recorded"})
    for run in runs:
        problems += check_verdicts(run, {"pass", "inconclusive"} if not ctx.dry else {"pass"})
    ratios = [r for r in ((next(iter(run.results), {}).get("time") or {}).get("ratio") for run in runs) if r]
    spread = ratio_spread(ratios)
    if ctx.dry:
        for run in runs:
            problems += check_not_run(run)
        checked = f"MLP a/b in {len(runs)} fresh processes: built, not timed (no ratios)"
    else:
        if len(ratios) != len(runs):
            problems.append(f"{len(runs) - len(ratios)} of {len(runs)} processes gave no a/b ratio")
        checked = (
            f"MLP a/b in {len(runs)} fresh processes: ratios {', '.join(f'{r:.3f}' for r in ratios)}; "
            f"spread max/min {spread['spread']:.3f}"
            if ratios
            else f"MLP a/b in {len(runs)} fresh processes: no ratios"
        )
    return checked, problems, spread


STEPS: dict[int, tuple[str, Callable[[Context], tuple[str, list[str], dict]]]] = {
    1: ("record + gate cuda suite", step_record_gate),
    2: ("injected slowdown", step_slowdown),
    3: ("rgb2yuv vs NumPy", step_rgb),
    4: ("DLA layer vs torch", step_layers),
    5: ("process noise a/b", step_noise),
}


def run_step(number: int, ctx: Context, clock: Callable[[], float] = time.monotonic) -> StepResult:
    name, body = STEPS[number]
    start = clock()
    try:
        checked, problems, figures = body(ctx)
    except Exception as exc:  # the script's own defect: named, not a traceback over the table
        checked, problems, figures = "the step raised", [f"{type(exc).__name__}: {exc}"], {}
    seconds = clock() - start
    ok = not problems
    verdict = (Verdict.DRY_OK if ok else Verdict.DRY_FAILED) if ctx.dry else (Verdict.PROVEN if ok else Verdict.FAILED)
    outputs = tuple(sorted(str(p) for p in ctx.project.out.glob(f"step{number}-*.txt")))
    return StepResult(number, name, verdict, seconds, checked, tuple(problems), outputs, figures)


# ------------------------------------------------------------------ prerequisites


def missing_prereqs(dry: bool) -> tuple[list[str], str]:
    """One line per thing missing to prove the GPU path (or, dry, to build it); the GPU's name."""
    cannot = "cannot prove"
    try:
        import tvm
    except Exception as exc:  # ImportError, or a libtvm that does not load
        return [f"gpu_check: TVM is not importable ({exc}): nothing proven; put TVM's python/ on PYTHONPATH"], ""
    try:
        import pytest_tvmperf.plugin  # noqa: F401
    except Exception as exc:
        return [f"gpu_check: the plugin does not import ({type(exc).__name__}: {exc}): nothing proven"], ""
    lines: list[str] = []
    if dry:
        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain

        missing = find_toolchain().missing
        if missing:
            lines.append(f"gpu_check --dry-run: {missing}: cannot build the cuda target, so nothing checked")
        return lines, ""
    try:
        import torch

        if not torch.cuda.is_available():
            lines.append(
                f"gpu_check: torch {torch.__version__} sees no CUDA device (built for CUDA: "
                f"{torch.version.cuda or 'no'}): {cannot} step 4's torch side on this machine"
            )
    except Exception as exc:
        lines.append(f"gpu_check: torch is not importable ({exc}): {cannot} step 4 (the torch peer)")
    hide = os.environ.get(HIDE_GPU_ENV) == "1"
    have_runtime = tvm.get_global_func("device_api.cuda", allow_missing=True) is not None
    if not have_runtime:
        lines.append(
            f"gpu_check: this TVM ({tvm.__version__}) was built without CUDA (no device_api.cuda): {cannot} "
            "anything on a GPU; the dry run (--dry-run) still checks the build path"
        )
    if hide or not have_runtime or not tvm.cuda(0).exist:
        why = f"{HIDE_GPU_ENV}=1" if hide else "TVM has no CUDA runtime to look with" if not have_runtime else ""
        lines.append(
            f"gpu_check: no GPU visible ({why or 'tvm.cuda(0).exist is False: no GPU, or no driver'}): {cannot} "
            "correctness, timing, device_peak_bytes or cudagraph on a GPU; run --dry-run to check the build path"
        )
    if have_runtime and not hide and tvm.cuda(0).exist:
        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain
        from pytest_tvmperf.builder.targets import tvm_cuda_compiler_missing

        why = tvm_cuda_compiler_missing(find_toolchain())
        if why:
            lines.append(f"gpu_check: {why}: {cannot} anything that runs a kernel on the GPU")
        else:
            problem = _tiny_kernel_problem(tvm)
            if problem:
                lines.append(f"gpu_check: TVM cannot target this GPU ({problem}): {cannot} anything on it")
    name = ""
    if not lines:
        name = str(tvm.cuda(0).device_name)
    return lines, name


def _tiny_kernel_problem(tvm) -> str | None:
    """Build and run a 256-element add on the GPU; why it fails, or None."""
    import numpy as np
    from tvm import s_tir, te

    try:
        a = te.placeholder((256,), name="A")
        b = te.compute((256,), lambda i: a[i] + 1.0, name="B")
        sch = s_tir.Schedule(te.create_prim_func([a, b]))
        (i,) = sch.get_loops(sch.get_sblock("B"))
        sch.bind(i, "threadIdx.x")
        dev = tvm.cuda(0)
        arch = "sm_" + str(dev.compute_version).replace(".", "")
        func = tvm.compile(sch.mod, target=tvm.target.Target({"kind": "cuda", "arch": arch}))
        x = tvm.runtime.tensor(np.arange(256, dtype="float32"), dev)
        y = tvm.runtime.tensor(np.zeros(256, dtype="float32"), dev)
        func["main"](x, y)
        dev.sync()
        if not np.allclose(y.numpy(), np.arange(256) + 1.0):
            return "a 256-element add gave wrong values"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    return None


# ------------------------------------------------------------------ main


def parse_steps(text: str) -> tuple[int, ...]:
    """``1,2`` -> (1, 2); ValueError naming the steps there are."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    steps = tuple(sorted({int(p) for p in parts if p.isdigit()}))
    if not parts or len(steps) != len(set(parts)) or any(s not in ALL_STEPS for s in steps):
        raise ValueError(f"--steps {text!r}: give step numbers from 1 to 5, e.g. --steps 1,2")
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="build the cuda target, do not run it (no GPU needed)")
    parser.add_argument("--steps", default="1,2,3,4,5", help="which steps (default all: 1,2,3,4,5)")
    parser.add_argument("--out", help="where the outputs and the JSON go (default a new temporary directory)")
    parser.add_argument("--json", help="the table as JSON (default <out>/gpu_check.json)")
    parser.add_argument("--noise-runs", type=int, help="step 5's fresh processes (default 5; dry run 2)")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds one pytest process may take (default 300)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=450.0,
        help="seconds the whole run may take (default 450); later runs are not started",
    )
    args = parser.parse_args(argv)
    try:
        steps = parse_steps(args.steps)
    except ValueError as exc:
        parser.error(str(exc))
    lines, gpu_name = missing_prereqs(args.dry_run)
    if lines:
        print("\n".join(lines))
        return 2
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gpu_check-"))
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / "project"
    if scratch.exists():
        if not (scratch / SCRATCH_MARK).is_file():
            print(f"gpu_check: {scratch} exists and is not this script's scratch project: choose another --out")
            return 2
        shutil.rmtree(scratch)  # the script's own scratch project of an earlier run, never the user's
    scratch.mkdir(parents=True)
    (scratch / SCRATCH_MARK).write_text("made by benchmarks/gpu_check.py; removed by its next run with this --out\n")
    noise_runs = args.noise_runs if args.noise_runs else (2 if args.dry_run else 5)
    deadline = time.monotonic() + args.budget
    ctx = Context(Project(scratch, out, args.dry_run, args.timeout, deadline), args.dry_run, gpu_name, noise_runs)
    json_path = Path(args.json) if args.json else out / "gpu_check.json"
    started = time.monotonic()
    results: list[StepResult] = []
    for number in steps:
        results.append(run_step(number, ctx))
        print(f"step {number} {results[-1].verdict.value} ({results[-1].seconds:.1f} s)", file=sys.stderr, flush=True)
        # after each step, so that a run cut short keeps the steps it finished
        write_report(json_path, report_json(results, args.dry_run, gpu_name, time.monotonic() - started, steps))
    print(format_table(results, args.dry_run))
    print(f"gpu_check: table as JSON in {json_path}; outputs in {out}")
    return 0 if is_whole(results, steps) else 1


def is_whole(results: list[StepResult], steps: tuple[int, ...]) -> bool:
    return len(results) == len(steps) and all(r.verdict in (Verdict.PROVEN, Verdict.DRY_OK) for r in results)


def report_json(results: list[StepResult], dry: bool, gpu_name: str, seconds: float, steps: tuple[int, ...]) -> dict:
    return {
        "kind": "gpu-check",
        "dry_run": dry,
        "gpu": gpu_name or None,
        "steps_asked": list(steps),
        "whole": is_whole(results, steps),
        "seconds": round(seconds, 1),
        "steps": [r.to_json() for r in results],
    }


def write_report(path: Path, report: dict) -> None:
    """Atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str) + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
