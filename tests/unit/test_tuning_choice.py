"""Which tuning record a kernel takes on another CPU (issue 32): a crafted record that
tensorizes with AVX-512 VNNI applies on CPUs that have it and is left out, named, on
those that do not; this target's own records win; the budget and duration rules.

The CPUs are named by explicit targets, never read from this machine, so every host
gives the same answers. Nothing here tunes (the record is written by hand)."""

from __future__ import annotations

import json

import pytest

from pytest_tvmperf.builder import tuning, tuning_budget
from pytest_tvmperf.builder.tuning_state import TuningView
from pytest_tvmperf.builder.tuning_choice import intrinsic_problem, left_out_line, required_features, source_note
from pytest_tvmperf.config.parsing import DURATION_FORMS, parse_duration, parse_tuned

ZEN4 = {"kind": "llvm", "mcpu": "znver4"}  # has avx512vnni
ZEN3 = {"kind": "llvm", "mcpu": "znver3"}  # has no AVX-512 at all
ZEN4_VM = {"kind": "llvm", "mcpu": "znver4", "mattr": ["-avx512vnni"]}  # the same model, VNNI hidden
ICELAKE = {"kind": "llvm", "mcpu": "icelake-server"}  # another CPU with avx512vnni


def _dense_u8i8():
    """C[i, j] = sum_k A[i, k] * B[j, k], uint8 x int8 -> int32: the kernel a VNNI dot product tensorizes."""
    from tvm import te

    a = te.placeholder((16, 16), "uint8", name="A")
    b = te.placeholder((32, 16), "int8", name="B")
    k = te.reduce_axis((0, 16), name="k")
    c = te.compute((16, 32), lambda i, j: te.sum(a[i, k].astype("int32") * b[j, k].astype("int32"), axis=k), name="C")
    return te.create_prim_func([a, b, c])


@pytest.fixture(scope="module")
def vnni_db(tmp_path_factory):
    """A database with one record, tuned on a Zen 4: the kernel tensorized with dot_16x4_vnni."""
    import tvm
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    from pytest_tvmperf.builder.tuning_db import RECORD_FILE, WORKLOAD_FILE, load_tensor_intrinsics
    from pytest_tvmperf.builder.tuning_tasks import _task_module

    load_tensor_intrinsics()
    from tvm.s_tir.tensor_intrin.x86 import VNNI_DOT_16x4_INTRIN

    func = _dense_u8i8()
    mod = _task_module(func)
    sch = Schedule(mod)
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(i, jo, ko, ji, ki)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ji, VNNI_DOT_16x4_INTRIN)
    db_dir = tmp_path_factory.mktemp("vnni") / "db"
    db_dir.mkdir()
    db = ms.database.JSONDatabase(str(db_dir / WORKLOAD_FILE), str(db_dir / RECORD_FILE), module_equality="structural")
    db.commit_tuning_record(
        ms.database.TuningRecord(
            sch.trace,
            db.commit_workload(mod),
            [1e-6],
            tvm.target.Target(ZEN4),
            ms.arg_info.ArgInfo.from_prim_func(func),
        )
    )
    return db_dir, tvm.IRModule({"dense": func.with_attr("global_symbol", "dense")})


def _target(spec):
    import tvm

    return tvm.target.Target(spec)


@pytest.mark.parametrize("host", [ZEN3, ZEN4_VM])
def test_a_record_whose_intrinsic_the_host_lacks_is_left_out_and_named(vnni_db, host):
    import tvm_ffi

    db, mod = vnni_db
    state = tuning.inspect(mod, _target(host), db)
    assert state.missing == ("dense",) and state.records_hash is None and state.portable == ()
    (line,) = state.left_out
    assert line == (
        "dense (tuned on znver4: tensorizes with dot_16x4_vnni, which needs avx512vnni, which this CPU lacks)"
    )
    assert tvm_ffi.structural_equal(tuning.apply(mod, _target(host), db), mod)  # left untuned: it runs here
    summary = left_out_line("baselines/tuning", state.left_out, state.here)
    assert summary.startswith(f"tvmperf: tuning database baselines/tuning: 1 record(s) left out on {host['mcpu']}")
    assert "dot_16x4_vnni" in summary


def test_the_record_applies_on_another_cpu_that_has_the_intrinsic(vnni_db):
    db, mod = vnni_db
    state = tuning.inspect(mod, _target(ICELAKE), db)
    assert state.missing == () and state.left_out == () and state.portable == ("dense",)
    assert state.source == "schedules tuned on znver4, applied on icelake-server: 1 of 1 kernels"
    scheduled = tuning.apply(mod, _target(ICELAKE), db)["dense"]
    assert bool(scheduled.attrs["tirx.is_scheduled"]) and "vpdpbusd" in scheduled.script()


def test_strict_mode_takes_the_exact_target_only(vnni_db):
    db, mod = vnni_db
    strict = tuning.inspect(mod, _target(ICELAKE), db, "exact")
    assert strict.missing == ("dense",) and strict.elsewhere == ("dense",) and strict.left_out == ()
    own = tuning.inspect(mod, _target(ZEN4), db, "exact")
    assert own.missing == () and own.source == ""


def test_this_targets_own_record_wins(vnni_db, tmp_path):
    """A slower record of this exact target beats a faster one of another CPU."""
    import shutil

    from pytest_tvmperf.builder.tuning_db import RECORD_FILE

    db = tmp_path / "db"
    shutil.copytree(vnni_db[0], db)
    row = json.loads((db / RECORD_FILE).read_text())
    mine = json.loads(json.dumps(row))
    mine[1][0] = [[["GetSBlock", [], ["C", "main"], ["b0"]]], []]  # untransformed: a valid, different schedule
    mine[1][1] = [1.0]  # far slower
    mine[1][2] = dict(ICELAKE, keys=["cpu"])
    (db / RECORD_FILE).write_text(json.dumps(row) + "\n" + json.dumps(mine) + "\n")
    state = tuning.inspect(vnni_db[1], _target(mine[1][2]), db)
    assert state.portable == () and state.missing == ()  # its own, though the Zen 4 one is faster
    assert (
        state.records_hash != tuning.inspect(vnni_db[1], _target(dict(ICELAKE, mcpu="sapphirerapids")), db).records_hash
    )


# ---------------------------------------------------------------------------- pure


def test_required_features_of_llvm_intrinsics():
    assert required_features(["llvm.x86.avx512.vpdpbusd.512"]) == (("avx512vnni",), ())
    assert required_features(["llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512"]) == (("avx512bw",), ())
    assert required_features(["llvm.x86.avx2.pmadd.wd", "llvm.x86.newthing"]) == (("avx2",), ("llvm.x86.newthing",))


def test_intrinsic_problem_names_the_missing_feature_and_the_architecture():
    x86 = "x86_64-pc-linux-gnu"
    assert intrinsic_problem("dot_16x4_vnni", ["llvm.x86.avx512.vpdpbusd.512"], x86, frozenset({"avx512vnni"})) is None
    assert "needs avx512vnni" in intrinsic_problem(
        "dot_16x4_vnni", ["llvm.x86.avx512.vpdpbusd.512"], x86, frozenset({"avx2"})
    )
    arm = intrinsic_problem("sme_mopa", ["llvm.aarch64.sme.mopa"], x86, frozenset({"sme"}))
    assert arm == "tensorizes with sme_mopa, an aarch64 intrinsic, on a x86_64 CPU"
    assert "not known to be safe" in intrinsic_problem("x", ["llvm.x86.newthing.1"], x86, frozenset())


def test_source_note_counts_the_kernels_and_names_both_cpus():
    from pytest_tvmperf.builder.tuning_choice import Choice

    chosen = [Choice(f"k{i}", None, False, "znver4") for i in range(31)]
    assert source_note(chosen, 31, "znver3") == "schedules tuned on znver4, applied on znver3: 31 of 31 kernels"
    mixed = chosen[:2] + [Choice("k9", None, True, "znver3")]
    assert source_note(mixed, 4, "znver3") == (
        "schedules tuned on znver4, applied on znver3: 3 of 4 kernels (1 with this target's own records)"
    )
    assert source_note([Choice("k", None, True, "znver3")], 1, "znver3") == ""
    assert source_note(chosen[:1], 1, "znver4") == (
        "schedules tuned on znver4 with other CPU features or cores, applied on znver4: 1 of 1 kernels"
    )


@pytest.mark.parametrize(
    "text, seconds", [("90s", 90), ("30m", 1800), ("1.5h", 5400), ("1h30m", 5400), ("90", 90), (" 2m30s ", 150)]
)
def test_a_budget_takes_the_usual_duration_forms(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "30x", "0", "0m", "m30", "30m1h", "-5m", "1h1h"])
def test_an_unparseable_budget_lists_the_accepted_forms(text):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert DURATION_FORMS in str(info.value)


def test_tuned_mode_is_any_or_exact():
    assert parse_tuned("EXACT") == "exact" and parse_tuned("any") == "any"
    with pytest.raises(ValueError, match="expected any .* or exact"):
        parse_tuned("strict")


def test_budget_shares_follow_the_run_time():
    # measured: weight x best time; unmeasured: estimated FLOPs at the measured tasks' time per FLOP
    share = tuning_budget.shares([1, 2, 1], [0.003, 0.001, None], [3e6, 1e6, 5e6])
    assert share == pytest.approx([0.3, 0.2, 0.5])
    assert tuning_budget.shares([1, 1], [None, None], [0, 0]) == [0.5, 0.5]
    assert sum(tuning_budget.shares([1, 1, 1], [None, None, None], [1e9, 1, 0])) == pytest.approx(1)


def test_trials_already_measured_count_towards_the_target():
    plans = tuning_budget.plan_trials(["a", "b", "c"], 10, {"a": 4, "b": 1})
    assert [(p.target_trials, p.remaining) for p in plans] == [(4, 0), (4, 3), (4, 4)]
    assert [p.remaining for p in tuning_budget.plan_trials(["a"], None, {"a": 9})] == [None]  # the budget ends it


def test_a_test_keeps_the_records_its_baseline_was_measured_with(vnni_db, tmp_path):
    """Issue 37 §3: another test's tuning adds a faster record for a shared kernel; a test
    whose baseline names its record keeps it (and its hash), until that record is gone."""
    import shutil

    from pytest_tvmperf.builder.tuning_db import RECORD_FILE

    db = tmp_path / "db"
    shutil.copytree(vnni_db[0], db)
    (old,) = (db / RECORD_FILE).read_text().splitlines()
    before = tuning.inspect(vnni_db[1], _target(ICELAKE), db)
    row = json.loads(old)
    row[1][1] = [1e-7]  # the other test's record: the same schedule, measured faster
    (db / RECORD_FILE).write_text(old + "\n" + json.dumps(row) + "\n")
    unpinned = tuning.inspect(vnni_db[1], _target(ICELAKE), db)
    assert unpinned.records_hash != before.records_hash  # without a view of its own, the test would move
    kept = tuning.inspect(vnni_db[1], _target(ICELAKE), db, pinned=before.records)
    assert kept.records_hash == before.records_hash and kept.records == before.records
    view = TuningView(db, before.records)
    assert (
        tuning.apply(vnni_db[1], _target(ICELAKE), view).script()
        == tuning.apply(vnni_db[1], _target(ICELAKE), vnni_db[0]).script()
    )
    (db / RECORD_FILE).write_text(json.dumps(row) + "\n")  # its record is gone: the best one now
    assert tuning.inspect(vnni_db[1], _target(ICELAKE), db, pinned=before.records).records_hash == unpinned.records_hash


GPU_LIMITS = {
    "max_shared_memory_per_block": 49152,
    "max_threads_per_block": 1024,
    "thread_warp_size": 32,
    "registers_per_block": 65536,
}


@pytest.mark.parametrize("threads, applies", [(256, True), (2048, False)])
def test_a_cuda_record_of_another_architecture_applies_where_verify_gpu_code_accepts_it(threads, applies):
    """cuda on another GPU architecture: the trace replays, then MetaSchedule's
    VerifyGPUCode checks it against this GPU's limits (no GPU needed: nothing is built)."""
    import tvm
    from tvm import te
    from tvm.s_tir import Schedule
    from tvm.s_tir import meta_schedule as ms

    from pytest_tvmperf.builder.tuning_choice import resolve
    from pytest_tvmperf.builder.tuning_tasks import _task_module

    a = te.placeholder((4096,), name="A")
    func = te.create_prim_func([a, te.compute((4096,), lambda i: a[i] * 2, name="B")])
    mod = _task_module(func)
    sch = Schedule(mod)
    (loop,) = sch.get_loops(sch.get_sblock("B"))
    outer, inner = sch.split(loop, [None, threads])
    sch.bind(outer, "blockIdx.x")
    sch.bind(inner, "threadIdx.x")
    db = ms.database.MemoryDatabase(module_equality="structural")
    db.commit_tuning_record(
        ms.database.TuningRecord(
            sch.trace,
            db.commit_workload(mod),
            [1e-6],
            tvm.target.Target({"kind": "cuda", "arch": "sm_80", **GPU_LIMITS}),
            ms.arg_info.ArgInfo.from_prim_func(func),
        )
    )
    found = resolve(db, [("k", mod)], tvm.target.Target({"kind": "cuda", "arch": "sm_75", **GPU_LIMITS}))
    if applies:
        assert found.chosen["k"].source == "sm_80" and not found.chosen["k"].exact and found.left_out == ()
    else:
        assert found.chosen == {}
        assert [item.describe() for item in found.left_out] == [
            "k (tuned on sm_80: its kernel exceeds what sm_75 allows (MetaSchedule's VerifyGPUCode))"
        ]
    on_cpu = resolve(db, [("k", mod)], tvm.target.Target({"kind": "llvm"}))
    assert on_cpu.chosen == {} and on_cpu.left_out[0].reason == "a cuda record, this target is llvm"
