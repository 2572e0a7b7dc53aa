"""The ``tvmperf`` command line: ``show`` and ``diff`` of baseline and results files.

Input files are written with the package's own code (``store.dump_baselines``,
``results.results_json``); time samples are made up, so no verdict depends on a clock.
"""

from __future__ import annotations

import dataclasses

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_tvmperf.command import cli
from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record, Timing
from pytest_tvmperf.result.text import fmt_time
from pytest_tvmperf.result.entry import ResultEntry, results_json
from pytest_tvmperf.store.files import dump_baselines

REF = "matmul128-te-default/v1"
M1 = Machine(
    cpu_model="Test CPU One",
    logical_cores=2,
    tvm_threads=2,
    tvm_version="0.27.0",
    llvm_version="19",
    target='{"kind": "llvm"}',
)
M2 = Machine(
    cpu_model="Test CPU Two",
    logical_cores=8,
    tvm_threads=8,
    tvm_version="0.27.0",
    llvm_version="19",
    target='{"kind": "llvm"}',
)
TEST = "test_mlp[llvm-vm-bytecode]"
MODULE = "tests/perf/test_mlp.py"


def _base(n: int = 12) -> list[float]:
    """1 ms with a 1-2% fixed spread: low noise, enough samples for a clear verdict."""
    return [1e-3 * (1 + 0.01 * (i % 3)) for i in range(n)]


def timing(scale: float = 1.0, machine: Machine = M1, n: int = 12) -> Timing:
    base = _base(n)
    return Timing(machine, TimeSamples(tuple(scale * b for b in base), tuple(base), REF))


def exact(instructions: int = 17, kernels: int = 3, storage: int = 3584) -> ExactMetrics:
    return ExactMetrics(
        instructions={"main": instructions},
        by_callee={"ret": 1, "vm.builtin.alloc_tensor": instructions - 1},
        calls={"fused_dense": 4},
        kernels=kernels,
        storage_bytes=storage,
    )


def exact_of(executor: str, instructions: int = 17) -> ExactMetrics:
    """The exact metrics as ``executor`` records them: n/a (null) where it measures none."""
    metrics = exact(instructions)
    if executor in ("vm-compiled", "prim"):
        metrics = dataclasses.replace(metrics, instructions=None, by_callee=None, calls=None)
    if executor == "prim":
        metrics = dataclasses.replace(metrics, storage_bytes=None)
    return metrics


def record(
    *,
    instructions: int = 17,
    scale: float = 1.0,
    timings: list[Timing] | None = None,
    workload: str = "mlp(batch=1, bind_params=True)",
    executor: str = "vm-bytecode",
) -> Record:
    timings = [timing(scale)] if timings is None else timings
    return Record(
        workload=workload,
        executor=executor,
        target={"kind": "llvm", "mcpu": "test"},
        tvm_version="0.27.0",
        exact=exact_of(executor, instructions),
        timings={t.machine.fingerprint: t for t in timings},
        compile_s=0.5,
    )


def write_baselines(path: Path, records: dict[str, Record]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_baselines(records), encoding="utf-8")
    return path


def entry(nodeid: str, rec: Record | None, verdict: str = "pass") -> dict:
    """A results-file test entry, shaped like ResultEntry.of(outcome).to_json()."""
    time = None
    if rec is not None and rec.timing is not None:
        samples = rec.timing.samples
        time = {
            "median_s": samples.median,
            "baseline_s": None,
            "ratio": None,
            "low": None,
            "high": None,
            "confidence": None,
            "mode": None,
            "samples_s": list(samples.samples),
            "baseline_samples_s": None,
        }
    executor = nodeid.rsplit("-", 1)[-1].rstrip("]") if rec is None else rec.executor
    return {
        "nodeid": nodeid,
        "test_id": nodeid.split("::", 1)[1],
        "executor": executor,
        "target": "llvm",
        "verdict": verdict,
        "note": "",
        "time": time,
        "kernels": [],
        "record": None if rec is None else rec.as_json(),
        "baseline": None,
    }


def write_results(path: Path, entries: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    typed = [ResultEntry.from_json(e) for e in entries]
    path.write_text(json.dumps(results_json(typed, "2025-01-01T00:00:00+00:00"), indent=2), encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def row_of(out: str, test: str) -> str:
    """The summary-table line of ``test``."""
    lines = [line for line in out.splitlines() if line.startswith(test + " ")]
    assert len(lines) == 1, out
    return lines[0]


# ---------------------------------------------------------------- show


def test_show_baseline_file(tmp_path, capsys):
    path = write_baselines(
        tmp_path / "baselines" / "test_mlp.json",
        {
            TEST: record(timings=[timing(1.0, M1), timing(2.0, M2)]),
            "test_rgb2yuv[llvm-prim-default]": record(
                workload="rgb2yuv(schedule='default')", executor="prim", timings=[]
            ),
        },
    )
    code, out, err = run(capsys, "show", path)
    assert code == 0 and err == ""
    assert "baseline file" in out and "2 test(s)" in out
    row = row_of(out, TEST)
    for cell in ("vm-bytecode", "llvm", "mlp(batch=1, bind_params=True)", " 17 ", " 3 ", " 3584 "):
        assert cell in row, (cell, row)
    # one line per machine, each with its own median, CPU model and fingerprint
    for machine, scale in ((M1, 1.0), (M2, 2.0)):
        lines = [line for line in out.splitlines() if machine.fingerprint in line]
        assert len(lines) == 1, out
        assert machine.cpu_model in lines[0] and fmt_time(timing(scale).samples.median) in lines[0]
    assert fmt_time(timing(1.0).samples.median) != fmt_time(timing(2.0).samples.median)
    prim = row_of(out, "test_rgb2yuv[llvm-prim-default]")
    assert "prim" in prim and "rgb2yuv(schedule='default')" in prim


def test_show_results_file(tmp_path, capsys):
    path = write_results(
        tmp_path / "results.json",
        [
            entry(f"{MODULE}::{TEST}", record(instructions=28, scale=1.5), verdict="regressed"),
            entry(f"{MODULE}::test_mlp[llvm-prim]", None, verdict="wrong"),
        ],
    )
    code, out, err = run(capsys, "show", path)
    assert code == 0 and err == ""
    assert "results file" in out and "2 test(s), 1 with measurements" in out
    row = row_of(out, f"{MODULE}::{TEST}")
    for cell in (" 28 ", fmt_time(timing(1.5).samples.median), M1.fingerprint, "Test CPU One", "regressed"):
        assert cell in row, (cell, row)
    assert "wrong" in row_of(out, f"{MODULE}::test_mlp[llvm-prim]")


# ---------------------------------------------------------------- diff


@pytest.fixture
def old(tmp_path) -> Path:
    return write_baselines(tmp_path / "old" / "baselines" / "tests" / "perf" / "test_mlp.json", {TEST: record()})


def new(tmp_path: Path, records: dict[str, Record]) -> Path:
    return write_baselines(tmp_path / "new" / "baselines" / "tests" / "perf" / "test_mlp.json", records)


def test_diff_no_change_passes(tmp_path, old, capsys):
    code, out, err = run(capsys, "diff", old, new(tmp_path, {TEST: record()}))
    assert code == 0, out
    assert err == ""
    assert "17/17" in row_of(out, TEST)
    assert "regressed" not in row_of(out, TEST)
    assert "0 test(s) regressed" in out
    # with no process noise allowed the identical samples are a clear pass
    code, out, _ = run(capsys, "diff", old, new(tmp_path, {TEST: record()}), "--noise", "normalized=0%")
    assert code == 0
    assert row_of(out, TEST).endswith("pass")


def test_diff_more_instructions_fails_with_the_gates_message(tmp_path, old, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path / "old")  # the project's root, where the accept command is run
    code, out, err = run(capsys, "diff", old, new(tmp_path, {TEST: record(instructions=28)}))
    assert code == 1, out
    assert err == ""
    assert "instructions 17 -> 28 (+11, limit no increase)" in out
    assert "by callee: +11 vm.builtin.alloc_tensor" in out
    assert f"regressed against the baseline in {old}" in out
    # a node id with its module's path, as pytest takes it (a bare test id is no node id)
    assert (
        f"to accept these values as the new baseline: pytest --tvmperf-update 'tests/perf/test_mlp.py::{TEST}'" in out
    )
    assert row_of(out, TEST).endswith("regressed")
    assert "1 test(s) regressed" in out


def test_diff_threshold_allows_the_increase(tmp_path, old, capsys):
    code, out, _ = run(
        capsys, "diff", old, new(tmp_path, {TEST: record(instructions=28)}), "--threshold", "instructions=11"
    )
    assert code == 0, out
    assert "instructions 17 -> 28" not in out


def test_diff_slower_time_fails(tmp_path, old, capsys):
    code, out, _ = run(capsys, "diff", old, new(tmp_path, {TEST: record(scale=2.0)}))
    assert code == 1, out
    assert "tvmperf: time regressed against the baseline" in out
    assert (
        f"time {fmt_time(timing(1.0).samples.median)} -> {fmt_time(timing(2.0).samples.median)} "
        f"(stored median -> this run's); normalized ratio 2.00x"
    ) in out
    assert "compared: normalized by the reference kernel" in out
    assert "instructions 17 -> " not in out  # only time regressed
    assert row_of(out, TEST).endswith("regressed")


def test_diff_time_off_is_not_gated(tmp_path, old, capsys):
    code, out, _ = run(capsys, "diff", old, new(tmp_path, {TEST: record(scale=2.0)}), "--threshold", "time=off")
    assert code == 0, out
    assert "time regressed" not in out


def test_diff_alpha_is_split_over_the_compared_tests(tmp_path, capsys):
    other = "test_mlp[llvm-vm-compiled]"
    a = write_baselines(tmp_path / "a.json", {TEST: record(), other: record(executor="vm-compiled")})
    b = write_baselines(tmp_path / "b.json", {TEST: record(scale=2.0), other: record(executor="vm-compiled")})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 1
    assert "(97.5% CI" in out  # 0.05 over 2 tests
    code, out, _ = run(capsys, "diff", a, b, "--alpha", "0.2")
    assert code == 1
    assert "(90% CI" in out  # 0.2 over 2 tests


def test_diff_improvement_passes(tmp_path, old, capsys):
    code, out, _ = run(capsys, "diff", old, new(tmp_path, {TEST: record(instructions=12, scale=0.5)}))
    assert code == 0, out
    row = row_of(out, TEST)
    assert row.endswith("improved") and "12/17" in row
    assert "0 test(s) regressed" in out


def test_diff_lists_added_and_removed_tests(tmp_path, capsys):
    a = write_baselines(tmp_path / "a.json", {TEST: record(), "test_gone[llvm-prim]": record(executor="prim")})
    b = write_baselines(tmp_path / "b.json", {TEST: record(), "test_new[llvm-vm-bytecode]": record(instructions=99)})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0, out
    assert "1 added, 1 removed" in out
    added = out.split("added (only in")[1].split("\n\n")[0]
    removed = out.split("removed (only in")[1].split("\n\n")[0]
    assert "test_new[llvm-vm-bytecode]" in added and "test_gone[llvm-prim]" not in added
    assert "test_gone[llvm-prim]" in removed and "test_new[llvm-vm-bytecode]" not in removed
    assert "instructions 17 -> 99" not in out  # an added test is not compared


def test_diff_baseline_against_results_matches_its_module(tmp_path, old, capsys):
    """A results file is keyed by test id when compared with a baseline file, and only the
    module the baseline file belongs to is compared (the other module has the same test id)."""
    results = write_results(
        tmp_path / "results.json",
        [
            entry(f"{MODULE}::{TEST}", record(instructions=28)),
            entry(f"tests/other/test_mlp2.py::{TEST}", record(instructions=17)),
            entry("tests/other/test_mlp2.py::test_only_elsewhere", record()),
        ],
    )
    code, out, _ = run(capsys, "diff", old, results)
    assert code == 1, out
    assert "instructions 17 -> 28" in out
    assert "2 test(s) of other modules left out" in out
    assert "test_only_elsewhere" not in out
    # the other way round: the results file is the old side
    code, out, _ = run(capsys, "diff", results, old, "--noise", "normalized=0%")
    assert code == 0, out
    row = row_of(out, TEST)
    assert "17/28" in row and row.endswith("improved")


def test_diff_results_files_match_by_node_id(tmp_path, capsys):
    other = f"tests/other/test_mlp2.py::{TEST}"
    a = write_results(tmp_path / "a.json", [entry(f"{MODULE}::{TEST}", record()), entry(other, record())])
    b = write_results(
        tmp_path / "b.json", [entry(f"{MODULE}::{TEST}", record()), entry(other, record(instructions=28))]
    )
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 1, out
    assert row_of(out, other).endswith("regressed")
    assert not row_of(out, f"{MODULE}::{TEST}").endswith("regressed")
    assert f"pytest --tvmperf-update '{other}'" in out


def test_diff_ambiguous_test_id_is_an_error(tmp_path, capsys):
    results = write_results(
        tmp_path / "results.json",
        [
            entry(f"tests/a/test_x.py::{TEST}", record()),
            entry(f"tests/b/test_y.py::{TEST}", record()),
        ],
    )
    base = write_baselines(tmp_path / "elsewhere.json", {TEST: record()})
    code, out, err = run(capsys, "diff", base, results)
    assert code == 2
    assert str(results) in err and "several modules" in err


def test_diff_compares_each_machine_of_a_multi_machine_baseline(tmp_path, capsys):
    m2 = dataclasses.replace(M2, cpu_model=M1.cpu_model)  # same CPU model, more cores and threads
    a = write_baselines(tmp_path / "a.json", {TEST: record(timings=[timing(1.0, M1)])})
    # M1 unchanged; M2 (not in A) is judged as the gate judges a run on M2: against M1, normalized
    b = write_baselines(tmp_path / "b.json", {TEST: record(timings=[timing(1.0, M1), timing(2.0, m2)])})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 1, out
    assert not row_of(out, f"{TEST} @{M1.fingerprint}").endswith("regressed")
    assert row_of(out, f"{TEST} @{m2.fingerprint}").endswith("regressed")
    assert f"note: machine {m2.fingerprint} (Test CPU One)" in out
    assert f"vs another machine (Test CPU One, {M1.fingerprint}), normalized" in out


def test_diff_never_fails_time_against_another_cpu_model(tmp_path, capsys):
    a = write_baselines(tmp_path / "a.json", {TEST: record(timings=[timing(1.0, M1)])})
    b = write_baselines(tmp_path / "b.json", {TEST: record(timings=[timing(1.0, M1), timing(2.0, M2)])})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0, out
    assert row_of(out, f"{TEST} @{M2.fingerprint}").endswith("inconclusive")


# ---------------------------------------------------------------- errors


def test_missing_file_is_an_error(tmp_path, old, capsys):
    missing = tmp_path / "nope.json"
    code, out, err = run(capsys, "diff", old, missing)
    assert code == 2 and out == ""
    assert str(missing) in err and "does not exist" in err
    assert len(err.strip().splitlines()) == 1
    assert run(capsys, "show", missing)[0] == 2


def test_truncated_baseline_file_is_an_error(tmp_path, old, capsys):
    text = old.read_text()
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    code, out, err = run(capsys, "diff", old, truncated)
    assert code == 2 and out == ""
    assert str(truncated) in err and "not valid JSON" in err and "--tvmperf-update" in err
    assert len(err.strip().splitlines()) == 1


def test_truncated_results_file_is_an_error(tmp_path, capsys):
    full = write_results(tmp_path / "full.json", [entry(f"{MODULE}::{TEST}", record())])
    truncated = tmp_path / "truncated.json"
    truncated.write_text(full.read_text()[:200])
    code, _, err = run(capsys, "show", truncated)
    assert code == 2
    assert str(truncated) in err and "truncated" in err and "--tvmperf-json" in err


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"schema_version": 99, "tests": {}}, "schema version 99"),
        ({"schema_version": 2, "kind": "pytest-tvmperf-results", "tests": []}, "schema version 2"),
        ({"name": "something else"}, "neither a pytest-tvmperf baseline file"),
        ([1, 2, 3], "neither a pytest-tvmperf baseline file"),
        ({"schema_version": 1, "tests": {TEST: {"workload": "x"}}}, "is malformed"),
        ({"schema_version": 1, "kind": "pytest-tvmperf-results", "tests": [{"record": {}}]}, "is malformed"),
    ],
)
def test_other_schema_is_an_error(tmp_path, old, capsys, content, expected):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(content))
    code, out, err = run(capsys, "diff", other, old)
    assert code == 2 and out == ""
    assert str(other) in err and expected in err, err
    assert len(err.strip().splitlines()) == 1


def test_not_json_at_all_is_an_error(tmp_path, capsys):
    toml = tmp_path / "pyproject.toml"
    toml.write_text("[project]\nname = 'x'\n")
    code, _, err = run(capsys, "show", toml)
    assert code == 2
    assert str(toml) in err and "not JSON" in err
    assert "delete" not in err  # not a baseline file: no advice to delete it


def test_history_file_is_not_taken_for_a_baseline(tmp_path, capsys):
    """A --tvmperf-history file (JSON lines) is another kind of file, not a broken baseline."""
    history = tmp_path / "history.jsonl"
    line = {"schema_version": 1, "kind": "pytest-tvmperf-history", "created": "2025-01-01T00:00:00+00:00", "tests": {}}
    history.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    code, _, err = run(capsys, "show", history)
    assert code == 2
    assert str(history) in err and "neither a pytest-tvmperf baseline file" in err
    assert "delete" not in err


@pytest.mark.parametrize(
    "option, value",
    [
        ("--threshold", "instructions=lots"),
        ("--threshold", "speed=5%"),
        ("--alpha", "2"),
        ("--noise", "normalized=3"),
    ],
)
def test_bad_option_is_a_usage_error(old, capsys, option, value):
    with pytest.raises(SystemExit) as exc:
        cli.main(["diff", str(old), str(old), option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tvmperf diff" in err and f"argument {option}" in err


# ---------------------------------------------------------------- python -m pytest_tvmperf


def test_module_entry_point(tmp_path, old):
    slower = new(tmp_path, {TEST: record(instructions=28)})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_tvmperf", "diff", str(old), str(slower)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "instructions 17 -> 28" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_tvmperf", "show", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "missing.json" in proc.stderr and proc.stdout == ""


def test_tune_runs_pytest_with_tune_and_update():
    from pytest_tvmperf.command.cli import build_parser, tune_argv

    args = build_parser().parse_args(["tune", "--trials", "8", "tests/perf", "-k", "dla"])
    assert tune_argv(args) == ["tests/perf", "-k", "dla", "--tvmperf-tune=8", "--tvmperf-update"]
    args = build_parser().parse_args(["tune", "--trials", "2", "--db", "mydb", "--no-update"])
    assert tune_argv(args) == ["--tvmperf-tune=2", "--tvmperf-tuning-db=mydb"]


def test_tune_takes_a_wall_clock_budget():
    from pytest_tvmperf.command.cli import build_parser, tune_argv

    args = build_parser().parse_args(["tune", "--budget", "30m", "tests/perf", "-k", "dla"])
    assert tune_argv(args) == ["tests/perf", "-k", "dla", "--tvmperf-tune-budget=30m", "--tvmperf-update"]
    both = build_parser().parse_args(["tune", "--trials", "64", "--budget", "1h30m", "--no-update"])
    assert tune_argv(both) == ["--tvmperf-tune=64", "--tvmperf-tune-budget=1h30m"]


def test_tune_needs_trials_or_a_budget(capsys):
    from pytest_tvmperf.command.cli import main

    assert main(["tune", "tests/perf"]) == 2
    assert "tune needs --trials N, --budget DURATION, or both" in capsys.readouterr().err


def test_tune_rejects_an_unparseable_budget_listing_the_forms(capsys):
    from pytest_tvmperf.command.cli import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["tune", "--budget", "half an hour"])
    assert exc.value.code == 2
    assert "accepted forms: 90s, 30m, 1.5h, 1h30m" in capsys.readouterr().err


@pytest.mark.parametrize("trials", ["0", "-3", "many"])
def test_tune_rejects_bad_trials(trials, capsys):
    from pytest_tvmperf.command.cli import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["tune", "--trials", trials])
    assert exc.value.code == 2
    assert "--trials takes a positive number of trials" in capsys.readouterr().err


def test_diff_accept_command_names_the_module_and_the_baseline_directory(tmp_path, capsys, monkeypatch):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_mlp.py").write_text("")
    old_file = write_baselines(project / "perf-baselines" / "tests" / "test_mlp.json", {TEST: record()})
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "diff", old_file, new(tmp_path, {TEST: record(instructions=28)}))
    assert code == 1, out
    assert (
        f"to accept these values as the new baseline: pytest --tvmperf-update --tvmperf-baselines=perf-baselines "
        f"'tests/test_mlp.py::{TEST}'"
    ) in out


@pytest.mark.parametrize(
    "entry_edit, field",
    [
        (lambda e: e["exact"].update(instructions="17"), "exact.instructions"),
        (lambda e: e.update(exact={}), "exact.instructions"),
        (lambda e: e["exact"].pop("instructions"), "exact.instructions"),
        (lambda e: e["exact"].update(instructions=None), "exact.instructions"),  # issue 23: passed as 28/-
        (lambda e: e["exact"].update(kernels=None), "exact.kernels"),
        (lambda e: e.update(executor="vm-cudagraph"), "executor"),  # disagrees with the test id
    ],
    ids=[
        "instructions text",
        "exact empty",
        "instructions missing",
        "instructions null",
        "kernels null",
        "executor edited",
    ],
)
def test_diff_of_a_file_with_a_bad_field_exits_2_naming_it(tmp_path, old, capsys, entry_edit, field):
    import json

    bad = new(tmp_path, {TEST: record()})
    data = json.loads(bad.read_text())
    entry_edit(data["tests"][TEST])
    bad.write_text(json.dumps(data))
    code, out, err = run(capsys, "diff", old, bad)
    assert code == 2, out
    assert f"entry '{TEST}' is malformed: field {field}: " in err and str(bad) in err
    code, out, err = run(capsys, "show", bad)
    assert code == 2, out
    assert f"entry '{TEST}' is malformed: field {field}: " in err and str(bad) in err


def test_diff_of_a_fifo_exits_2_without_reading_it(tmp_path, old, capsys):
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "diff", old, fifo)
    assert code == 2
    assert "it is a FIFO (named pipe), not a regular file" in err


@pytest.mark.parametrize("command", ["show", "diff"])
def test_a_huge_number_in_a_baseline_file_exits_2_naming_it(tmp_path, old, capsys, command):
    """issue 23: 5000 digits printed a traceback and exited 1, the "regressed" code."""
    bad = new(tmp_path, {TEST: record()})
    text = bad.read_text()
    bad.write_text(text.replace('"kernels": 3', '"kernels": ' + "9" * 5000))
    code, out, err = run(capsys, command, *([old] if command == "diff" else []), bad)
    assert code == 2, out
    assert "Traceback" not in out + err
    assert (
        f"baseline file {bad}: entry '{TEST}' is malformed: field exact.kernels: a whole number of 5000 digits" in err
    )


def test_a_huge_number_in_a_results_file_exits_2_naming_it(tmp_path, old, capsys):
    results = write_results(tmp_path / "r.json", [entry(f"{MODULE}::{TEST}", record())])
    text = results.read_text()
    assert '"schema_version": 1' in text
    results.write_text(text.replace('"schema_version": 1', '"schema_version": ' + "1" * 5000))
    code, out, err = run(capsys, "diff", old, results)
    assert code == 2, out
    assert f"{results}: field schema_version: a whole number of 5000 digits" in err


def test_a_huge_number_in_a_history_file_exits_2_naming_it(tmp_path, capsys):
    history = tmp_path / "h.jsonl"
    history.write_text('{"kind": "pytest-tvmperf-history", "schema_version": ' + "1" * 5000 + "}\n")
    code, out, err = run(capsys, "history", history)
    assert code == 2, out
    assert f"history file {history}, line 1: field schema_version" in err


def test_an_input_no_check_foresaw_exits_2_not_1(tmp_path, old, capsys, monkeypatch):
    """Exit 1 means "regressed": a crash must never read as one."""

    def crash(loaded):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(cli, "show_lines", crash)
    code, out, err = run(capsys, "show", old)
    assert code == 2
    assert (
        f"tvmperf: error: show {old}: could not use the input (OverflowError: int too large to convert to float)" in err
    )
