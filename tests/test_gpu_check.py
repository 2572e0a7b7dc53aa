"""benchmarks/gpu_check.py (issue 49): its dry run works on a machine without a GPU, its
real run refuses such a machine with one line per missing thing (exit 2), and the checks
of its real run (never run here: no GPU) fail and pass on the results they are given."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gc = _load()


def _script(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=full_env, capture_output=True, text=True, timeout=timeout
    )


def test_without_a_gpu_the_real_run_exits_2_naming_what_is_missing():
    done = _script(env={gc.HIDE_GPU_ENV: "1"}, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("gpu_check: ") and "cannot prove" in line for line in lines), lines
    assert any(line.startswith("gpu_check: no GPU visible") for line in lines), lines


def test_the_dry_run_builds_every_step_asked_and_writes_its_table(tmp_path):
    """Steps 1 (the bundled cuda suite recorded and gated, vm-cudagraph, device_peak_bytes
    n/a) and 4 (a torch layer with --tvmperf-layers=on): steps 2, 3 and 5 are the same
    machinery (a scratch test, pytest runs, the results JSON) and their real-run checks are
    tested below; the whole dry run takes ~2.5 min here (README "Benchmarks")."""
    try:
        from pytest_tvmperf.builder.cuda_toolchain import find_toolchain
    except ImportError as exc:  # pragma: no cover
        pytest.skip(str(exc))
    if find_toolchain().missing:
        pytest.skip(f"the dry run builds cuda with nvcc and ptxas: {find_toolchain().missing}")
    done = _script("--dry-run", "--steps", "1,4", "--out", str(tmp_path), "--json", str(tmp_path / "t.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "t.json").read_text())
    assert report["dry_run"] and report["whole"] and [s["step"] for s in report["steps"]] == [1, 4]
    assert all(s["verdict"] == "dry run: built, not run" and not s["problems"] for s in report["steps"])
    first = report["steps"][0]["checked"]
    assert "4 cuda tests recorded then passed" in first and "vm-cudagraph" in first
    assert "device_peak_bytes n/a (the program does not run on this machine" in first
    assert "1. record + gate cuda suite  dry run: built, not run" in done.stdout
    assert (tmp_path / "step1-gate.txt").is_file() and (tmp_path / "step4-layers.txt").is_file()


# ---------------------------------------------------------------- the real run's checks, on given results


class FakeProject(gc.Project):
    """pytest answered from given results: label -> entries (a list of results-JSON tests)."""

    def __init__(self, root: Path, answers: dict):
        super().__init__(root / "project", root, dry=False, timeout=1)
        self.answers = answers

    def pytest(self, step, label, cwd, args, env=None):
        (self.out / f"step{step}-{label}.txt").write_text(f"output of {label}")
        entries = self.answers.get(label, [])
        return gc.Run(label, self.answers.get(f"{label}:output", ""), 0, entries)


def _ctx(tmp_path, answers):
    return gc.Context(FakeProject(tmp_path, answers), dry=False, gpu_name="NVIDIA H100", noise_runs=2)


def _entry(test_id, verdict, **fields):
    return {"test_id": test_id, "verdict": verdict, "note": "", **fields}


def test_the_slowdown_step_fails_unless_the_gate_fails_on_time(tmp_path):
    slowed = _entry("test_busy[cuda-prim]", "pass", time={"ratio": 1.01}, failed=[])
    answers = {"record": [_entry("test_busy[cuda-prim]", "recorded")], "slowed": [slowed]}
    result = gc.run_step(2, _ctx(tmp_path, answers))
    assert result.verdict is gc.Verdict.FAILED
    assert "expected regressed on time, got pass" in result.problems[0]
    assert result.outputs == (str(tmp_path / "step2-record.txt"), str(tmp_path / "step2-slowed.txt"))
    answers["slowed"] = [{**slowed, "verdict": "regressed", "failed": ["time"], "time": {"ratio": 3.9}}]
    assert gc.run_step(2, _ctx(tmp_path, answers)).verdict is gc.Verdict.PROVEN


def test_device_peak_must_be_measured_on_a_gpu_and_na_in_a_dry_run():
    na = {"record": {"exact": {"device_peak_bytes": None, "not_measured": {"device_peak_bytes": "x"}}}}
    run = gc.Run("record", "", 0, [_entry("t", "recorded", **na)])
    problems, _ = gc.check_device_peak(run, "t", dry=False)
    assert problems == ["t: device_peak_bytes is None on the GPU (n/a: x); expected a measured > 0"]
    measured = gc.Run("record", "", 0, [_entry("t", "recorded", record={"exact": {"device_peak_bytes": 2097152}})])
    assert gc.check_device_peak(measured, "t", dry=False) == ([], "device_peak_bytes 2,097,152 B")
    assert gc.check_device_peak(measured, "t", dry=True)[0]  # a dry run never measures it
    from pytest_tvmperf.values.peak_memory import NOT_RUN

    not_run = {"record": {"exact": {"device_peak_bytes": None, "not_measured": {"device_peak_bytes": NOT_RUN}}}}
    dry = gc.Run("record", "", 0, [_entry("t", "recorded", **not_run)])
    assert gc.check_device_peak(dry, "t", dry=True) == ([], f"device_peak_bytes n/a ({NOT_RUN})")


def test_unsynchronized_layer_times_and_the_noise_spread():
    entry = {"time": {"median_s": 100e-6}, "layers": [{"tvm_total_s": 10e-6}]}
    assert "look unsynchronized" in gc.check_layer_sync(entry)[0]
    assert gc.check_layer_sync({**entry, "layers": [{"tvm_total_s": 90e-6}]}) == []
    spread = gc.ratio_spread([1.0, 1.1, 0.95])
    assert spread["spread"] == pytest.approx(1.1 / 0.95) and spread["median"] == 1.0


def test_steps_are_checked_and_a_failed_step_is_named_with_its_output():
    with pytest.raises(ValueError, match="give step numbers from 1 to 5"):
        gc.parse_steps("1,7")
    failed = gc.StepResult(3, "rgb2yuv vs NumPy", gc.Verdict.FAILED, 2.0, "c", ("no NumPy",), ("/o/step3-compare.txt",))
    table = gc.format_table([failed], dry=False)
    assert "0/1 steps whole" in table
    assert "step 3 FAILED: no NumPy" in table and "step 3 output kept: /o/step3-compare.txt" in table


def test_a_spent_budget_starts_no_pytest_and_fails_the_step(tmp_path):
    now = [100.0]
    project = gc.Project(tmp_path / "project", tmp_path, dry=False, timeout=300, deadline=50.0, clock=lambda: now[0])
    ctx = gc.Context(project, dry=False, gpu_name="g", noise_runs=1)
    result = gc.run_step(3, ctx)
    assert result.verdict is gc.Verdict.FAILED and "compare: pytest wrote no results (exit -1)" in result.problems
    assert "not started: the run's --budget was spent" in (tmp_path / "step3-compare.txt").read_text()
