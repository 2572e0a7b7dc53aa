"""MetaSchedule tuning databases: tasks, tune (with progress), inspect (stale records,
hash), apply (the kernels change and still compute the right thing), and the errors
for a missing or corrupt database.

Tuning is slow here (worker processes, ~5 s a batch), so one tiny Relax MLP is tuned
once for the module with 4 trials (2 per kernel); the operator tests reuse one of its
fused kernels as a PrimFunc program, which has the same database key.
"""

from __future__ import annotations

import json

from pytest_tvmperf.store.tuning_runs import RUNS_FILE, read_runs
import shutil
from pathlib import Path

import numpy as np
import pytest
import tvm_ffi

from pytest_tvmperf.builder import tuning
from pytest_tvmperf.builder.correctness import check_outputs
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.pipelines import fuse_relax
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.builder.tuning import RECORD_FILE, WORKLOAD_FILE, TuningError
from pytest_tvmperf.builder.tuning_run import BudgetTooSmall, NoDisplay
from pytest_tvmperf.builder.tuning_state import TuningState
from pytest_tvmperf.workload import Workload

TRIALS = 4
SIZES = (16, 32, 8)


def tiny_mlp(batch: int | str = 4) -> Workload:
    """dense+bias 16-32-8 with bound weights: two fused kernels
    (fused_matmul_add, fused_matmul1_add1)."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc0 = nn.Linear(SIZES[0], SIZES[1])
            self.fc1 = nn.Linear(SIZES[1], SIZES[2])

        def forward(self, x):
            return self.fc1(self.fc0(x))

    mod, _ = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((batch, SIZES[0]), "float32")}})
    rng = np.random.default_rng(1)
    weights = {}
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:])):
        weights[f"fc{i}.weight"] = rng.standard_normal((n_out, n_in)).astype("float32")
        weights[f"fc{i}.bias"] = rng.standard_normal(n_out).astype("float32")
    mod = relax.transform.BindParams("forward", {k: tvm.runtime.tensor(v) for k, v in weights.items()})(mod)
    mod = relax.transform.FoldConstant()(mod)

    def reference(x):
        for i in range(2):
            x = x @ weights[f"fc{i}.weight"].T + weights[f"fc{i}.bias"]
        return x

    dynamic = isinstance(batch, str)
    return Workload(
        name=f"tiny_mlp({batch!r})",
        program=mod,
        make_inputs=lambda rng, dims: [
            rng.standard_normal((dims[batch] if dynamic else batch, SIZES[0])).astype("float32")
        ],
        reference=reference,
        entry="forward",
        rtol=1e-4,
        atol=1e-4,
        dims={batch: 3} if dynamic else {},
    )


def kernel_workload(fused, name: str = "fused_matmul_add") -> Workload:
    """A fused kernel of ``tiny_mlp`` (x @ W + b) as a PrimFunc program."""
    func = fused[name]
    (m, k), n = (int(d) for d in func.params[0].shape), int(func.params[2].shape[0])

    def make_inputs(rng, dims):
        return [rng.standard_normal(shape).astype("float32") for shape in ((m, k), (k, n), (n,))]

    return Workload(
        name=f"kernel({name})",
        program=func,
        make_inputs=make_inputs,
        reference=lambda x, w, b: x @ w + b,
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.fixture(scope="module")
def target():
    return resolve_target("llvm").tvm_target()


@pytest.fixture(scope="module")
def fused(target):
    return fuse_relax(tiny_mlp().program, target)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, target, fused):
    """The tiny MLP tuned once, the way a killed tuning is resumed: the first tuning is
    interrupted (KeyboardInterrupt, as Ctrl-C) after its first measured batch, the second
    one finishes it. Returns (database dir, state returned by the second tune, progress
    calls of both, records on disk after the kill)."""
    db = tmp_path_factory.mktemp("tuning") / "db"
    calls: list[tuple[str, int, int | None]] = []

    with pytest.raises(KeyboardInterrupt, match="the records measured so far are kept"):
        tuning.tune(fused, target, db, TRIALS, display=Shown(calls, kill=True), seed=3)
    kept = (db / RECORD_FILE).read_text().splitlines()
    state = tuning.tune(fused, target, db, TRIALS, display=Shown(calls), seed=3)
    return db, state, calls, kept


class Shown(NoDisplay):
    """Records each kernel's progress as (task, trials done, its share); ``kill``: Ctrl-C
    at the first one (after the first measured batch)."""

    def __init__(self, calls: list, kill: bool = False) -> None:
        self.calls, self.kill = calls, kill

    def kernel(self, progress) -> None:
        self.calls.append((progress.name, progress.done, progress.share))
        if self.kill:
            raise KeyboardInterrupt


def replace_db(state: TuningState, db: Path) -> TuningState:
    import dataclasses

    return dataclasses.replace(state, db_dir=str(db))


def copy_db(tuned, tmp_path: Path) -> Path:
    dest = tmp_path / "copy"
    shutil.copytree(tuned[0], dest)
    return dest


def rewrite_records(db: Path, change) -> None:
    path = db / RECORD_FILE
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(change(row)) + "\n" for row in rows))


# --- tasks -----------------------------------------------------------------------------


def test_relax_tasks_are_the_fused_kernels(target, fused):
    names = [name for name, _ in tuning.tasks_of(fused, target)]
    assert names == ["fused_matmul1_add1", "fused_matmul_add"]
    for _, task in tuning.tasks_of(fused, target):
        assert [gv.name_hint for gv in task.get_global_vars()] == ["main"]


def test_prim_tasks_are_keyed_like_the_relax_tasks(target, fused):
    import tvm

    prim = tvm.IRModule(
        {"kernel": fused["fused_matmul_add"].with_attr("global_symbol", "kernel"), "again": fused["fused_matmul_add"]}
    )
    tasks = tuning.tasks_of(prim, target)
    assert [name for name, _ in tasks] == ["again"]  # the same kernel twice is one task
    relax_task = dict(tuning.tasks_of(fused, target))["fused_matmul_add"]
    assert tvm_ffi.structural_equal(tasks[0][1], relax_task)


def test_symbolic_shapes_are_untunable(tmp_path, target):
    fused = fuse_relax(tiny_mlp("n").program, target)
    assert tuning.tasks_of(fused, target) == []
    state = tuning.tune(fused, target, tmp_path / "db", TRIALS)  # nothing to tune: returns at once
    assert state.tasks == () and state.missing == () and state.records_hash is None
    assert state.untunable == ("fused_matmul1_add1", "fused_matmul_add")
    assert sorted(p.name for p in (tmp_path / "db").iterdir()) == [RECORD_FILE, WORKLOAD_FILE]


def test_symbolic_operator_is_untunable(target):
    from pytest_tvmperf.workloads import multiply

    import tvm

    mod = tvm.IRModule({"main": multiply().program})
    assert tuning.tasks_of(mod, target) == []


# --- tune ------------------------------------------------------------------------------


def test_tune_records_every_task(tuned):
    db, state = tuned[:2]
    assert state.tasks == ("fused_matmul1_add1", "fused_matmul_add")
    assert state.missing == () and state.untunable == ()
    assert state.complete
    assert state.db_dir == str(db)
    assert len(state.records_hash) == 16 and int(state.records_hash, 16) >= 0


def test_tune_writes_the_two_database_files_and_its_runs_and_nothing_else(tuned):
    db = tuned[0]
    assert sorted(p.name for p in db.iterdir()) == [RECORD_FILE, WORKLOAD_FILE, RUNS_FILE]
    runs, _ = read_runs(db)  # the killed tuning kept no run line; the finished one did
    assert runs and runs[0].kernels >= 1 and runs[0].trials > 0 and runs[0].budget_s is None
    records = [json.loads(line) for line in (db / RECORD_FILE).read_text().splitlines()]
    assert len(records) == TRIALS
    assert len((db / WORKLOAD_FILE).read_text().splitlines()) == 2


def test_progress_counts_up_to_the_budget(tuned):
    calls = tuned[2]
    assert calls, "progress was never called"
    assert all(total == TRIALS // 2 for _, _, total in calls)  # a bar per kernel, each to its share of the trials
    assert {task for task, _, _ in calls} == {"fused_matmul1_add1", "fused_matmul_add"}
    assert all(0 < done <= TRIALS // 2 for _, done, _ in calls)


def test_a_killed_tuning_keeps_its_records_and_resumes(tuned, target, fused):
    """Issue 32: a killed tuning keeps every record it measured; a re-run measures only
    what is missing, and one more re-run measures nothing."""
    db, state, calls, kept = tuned
    first_task = calls[0][0]
    assert len(kept) == TRIALS // 2  # the first kernel's batch, written as it was measured
    after = (db / RECORD_FILE).read_text().splitlines()
    assert after[: len(kept)] == kept and len(after) == TRIALS  # kept, and only the other kernel's trials added
    assert {task for task, _, _ in calls[1:]} == {t for t in state.tasks if t != first_task}
    assert state.complete

    class NothingLeft(NoDisplay):
        def estimate(self, line: str) -> None:
            pytest.fail("nothing left to tune")

    again = tuning.tune(fused, target, db, TRIALS, display=NothingLeft())
    assert (db / RECORD_FILE).read_text().splitlines() == after and again == state


def test_a_line_cut_short_by_a_kill_is_left_out_and_repaired_before_appending(tuned, tmp_path, target, fused):
    from pytest_tvmperf.builder.tuning_db import repair_torn

    db = copy_db(tuned, tmp_path)
    lines = (db / RECORD_FILE).read_text().splitlines()
    (db / RECORD_FILE).write_text("\n".join(lines) + "\n" + lines[0][:50])  # SIGKILL in the middle of a line
    before = (db / RECORD_FILE).read_text()
    assert tuning.inspect(fused, target, db) == replace_db(tuned[1], db)  # read as the intact records
    assert (db / RECORD_FILE).read_text() == before  # reading changes nothing
    assert repair_torn(db) == [RECORD_FILE]
    assert (db / RECORD_FILE).read_text() == "\n".join(lines) + "\n"


def test_a_budget_too_small_for_a_schedule_per_kernel_stops_after_the_first_batch(tmp_path, target, fused):
    """Issue 47: --tvmperf-tune-budget smaller than one batch per kernel is refused after
    the first batch, naming the smallest budget that would do; nothing more is measured."""
    shown: list = []
    with pytest.raises(
        BudgetTooSmall,
        match=r"its 2 kernel\(s\) need at least 2 trials each .* the smallest "
        r"budget that would do: \d+[smh]",
    ):
        tuning.tune(fused, target, tmp_path / "db", 8, budget_s=1e-3, seed=3, display=Shown(shown))
    assert len((tmp_path / "db" / RECORD_FILE).read_text().splitlines()) == 2  # the first batch, kept
    assert shown == []


def test_tune_needs_cloudpickle_and_psutil(monkeypatch, tmp_path, target, fused):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psutil" else real(name, *a))
    with pytest.raises(TuningError, match="pip install psutil"):
        tuning.tune(fused, target, tmp_path / "db", TRIALS)
    assert not (tmp_path / "db").exists()


def test_tune_rejects_a_zero_budget(tmp_path, target, fused):
    with pytest.raises(ValueError, match="trials"):
        tuning.tune(fused, target, tmp_path / "db", 0)


# --- inspect ---------------------------------------------------------------------------


def test_inspect_is_stable(tuned, target, fused):
    db, state = tuned[:2]
    again = tuning.inspect(fused, target, db)
    assert again == state
    assert tuning.inspect(fuse_relax(tiny_mlp().program, target), target, db) == state


def test_changed_workload_is_missing(tuned, target):
    db = tuned[0]
    other = fuse_relax(tiny_mlp(batch=2).program, target)  # another shape: other kernels, same names
    state = tuning.inspect(other, target, db)
    assert state.tasks == ("fused_matmul1_add1", "fused_matmul_add")
    assert state.missing == state.tasks and not state.complete
    assert state.records_hash is None and state.other_targets == ()  # stale, not tuned elsewhere


def test_records_of_another_target_count_only_where_they_apply(tuned, fused):
    import tvm

    generic = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64-v2"})  # the database was tuned for the host mcpu
    exact = tuning.inspect(fused, generic, tuned[0], "exact")
    assert exact.missing == exact.tasks and exact.records_hash is None
    (host,) = exact.other_targets  # tuned elsewhere, not changed: strict mode skips rather than fails
    assert '"mcpu"' in host and tuning.TuningState.from_json(exact.as_json()) == exact
    portable = tuning.inspect(fused, generic, tuned[0])  # the default: another CPU's schedules replay here
    assert portable.missing == () and portable.portable == portable.tasks and portable.records_hash is not None
    source = json.loads(host)["mcpu"]
    # the database's target may itself be x86-64-v2 (a host LLVM names so, or a run before this
    # one that built for it): then the records differ from this target in features or cores only
    where = source if source != "x86-64-v2" else "x86-64-v2 with other CPU features or cores"
    assert portable.source == f"schedules tuned on {where}, applied on x86-64-v2: 2 of 2 kernels"
    assert tuning.TuningState.from_json(portable.as_json()) == portable
    mine = tuning.inspect(fused, tvm.target.Target(json.loads(host)), tuned[0])
    assert mine.portable == () and mine.source == ""  # the exact target's own records: nothing to say


def test_hash_follows_the_records(tuned, tmp_path, target, fused):
    db = copy_db(tuned, tmp_path)
    assert tuning.inspect(fused, target, db).records_hash == tuned[1].records_hash

    def faster(row):
        row[1][1] = [t / 2 for t in row[1][1]]
        return row

    rewrite_records(db, faster)  # same schedules, re-measured: another database
    state = tuning.inspect(fused, target, db)
    assert state.missing == () and state.records_hash not in (None, tuned[1].records_hash)


def test_failed_measurements_do_not_count(tuned, tmp_path, target, fused):
    db = copy_db(tuned, tmp_path)

    def failed(row):
        row[1][1] = [1e10]  # what MetaSchedule stores for a candidate that did not build or run
        return row

    rewrite_records(db, failed)
    assert tuning.inspect(fused, target, db).missing == ("fused_matmul1_add1", "fused_matmul_add")


# --- apply -----------------------------------------------------------------------------


def test_apply_schedules_the_relax_kernels(tuned, target, fused):
    before = {p.name: p.read_bytes() for p in tuned[0].iterdir()}
    scheduled = tuning.apply(fused, target, tuned[0])
    assert {p.name: p.read_bytes() for p in tuned[0].iterdir()} == before  # reading writes nothing
    for name in ("fused_matmul_add", "fused_matmul1_add1"):
        assert not tvm_ffi.structural_equal(scheduled[name], fused[name])
        assert bool(scheduled[name].attrs["tirx.is_scheduled"])
    assert tvm_ffi.structural_equal(scheduled["forward"], fused["forward"])


def test_apply_leaves_missing_kernels_untuned(tuned, target):
    other = fuse_relax(tiny_mlp(batch=2).program, target)
    assert tvm_ffi.structural_equal(tuning.apply(other, target, tuned[0]), other)


def test_tuned_relax_build_is_correct(tuned):
    workload = tiny_mlp().with_pipeline("tuned")
    compiled = get_executor("vm-bytecode").compile(workload, resolve_target("llvm"), tuning_db=tuned[0])
    inputs = workload.inputs()
    expected = workload.expected(inputs)
    got = compiled.run(inputs, [(e.shape, str(e.dtype)) for e in expected])
    assert check_outputs(got, expected, workload.rtol, workload.atol) is None


def test_apply_schedules_an_operator_and_keeps_its_symbol(tuned, target, fused):
    import tvm

    func = fused["fused_matmul_add"].with_attr("global_symbol", "kernel")
    mod = tvm.IRModule({"kernel": func})
    scheduled = tuning.apply(mod, target, tuned[0])["kernel"]
    assert not tvm_ffi.structural_equal(scheduled, func)
    assert scheduled.attrs["global_symbol"] == "kernel"
    assert bool(scheduled.attrs["tirx.is_scheduled"])


def test_tuned_operator_build_is_correct(tuned, fused):
    workload = kernel_workload(fused).with_pipeline("tuned")
    compiled = get_executor("prim").compile(workload, resolve_target("llvm"), tuning_db=tuned[0])
    inputs = workload.inputs()
    expected = workload.expected(inputs)
    got = compiled.run(inputs, [(e.shape, str(e.dtype)) for e in expected])
    assert check_outputs(got, expected, workload.rtol, workload.atol) is None


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("call", [tuning.inspect, tuning.apply])
def test_missing_database_says_how_to_create_it(call, tmp_path, target, fused):
    with pytest.raises(TuningError) as info:
        call(fused, target, tmp_path / "nowhere")
    message = str(info.value)
    assert "nowhere does not exist" in message
    assert "pytest --tvmperf-tune=TRIALS" in message


def test_missing_file_is_named(tuned, tmp_path, target, fused):
    db = copy_db(tuned, tmp_path)
    (db / RECORD_FILE).unlink()
    with pytest.raises(TuningError, match=f"{RECORD_FILE} is missing.*pytest --tvmperf-tune=TRIALS"):
        tuning.inspect(fused, target, db)


def test_corrupt_json_is_named_with_its_line(tuned, tmp_path, target, fused):
    db = copy_db(tuned, tmp_path)
    lines = (db / RECORD_FILE).read_text().splitlines()
    lines[1] = lines[1][:40]  # a write cut short
    (db / RECORD_FILE).write_text("\n".join(lines) + "\n")
    for call in (tuning.inspect, tuning.apply):
        with pytest.raises(TuningError) as info:
            call(fused, target, db)
        message = str(info.value)
        assert f"{db / RECORD_FILE}, line 2: not JSON" in message
        assert "pytest --tvmperf-tune=TRIALS" in message


def test_record_of_an_unknown_workload_is_named(tuned, tmp_path, target, fused):
    db = copy_db(tuned, tmp_path)

    def dangling(row):
        row[0] = 7
        return row

    rewrite_records(db, dangling)
    with pytest.raises(TuningError, match=f"{RECORD_FILE}, line 1: refers to workload 7, but {WORKLOAD_FILE} has 2"):
        tuning.inspect(fused, target, db)


def test_workload_tvm_cannot_read(tmp_path, target, fused):
    db = tmp_path / "db"
    db.mkdir()
    (db / WORKLOAD_FILE).write_text('["123", "bm90IGEgbW9kdWxl"]\n')  # JSON, but not a module
    (db / RECORD_FILE).write_text("")
    # refused before MetaSchedule reads it (store/trace_check.py), naming the file and the line
    with pytest.raises(
        TuningError,
        match="database_workload.json, line 1: its module is not a length-prefixed .*pytest --tvmperf-tune=TRIALS",
    ):
        tuning.inspect(fused, target, db)


def test_wrong_row_shape_is_named(tmp_path, target, fused):
    db = tmp_path / "db"
    db.mkdir()
    (db / WORKLOAD_FILE).write_text('{"not": "a row"}\n')
    (db / RECORD_FILE).write_text("")
    with pytest.raises(TuningError, match=f"{WORKLOAD_FILE}, line 1: expected \\[structural hash, module\\]"):
        tuning.inspect(fused, target, db)


# --- state -----------------------------------------------------------------------------


def test_state_json_round_trip():
    state = TuningState("baselines/tuning", "0123456789abcdef", ("a", "b"), ("b",), ("c",))
    data = json.loads(json.dumps(state.as_json()))
    assert TuningState.from_json(data) == state
    assert TuningState.from_json({"db_dir": "d", "records_hash": None, "tasks": [], "missing": []}) == TuningState(
        "d", None, (), ()
    )
    with pytest.raises(ValueError, match="not a tuning state"):
        TuningState.from_json({"tasks": []})
