"""Baselines without the weights' values (issue 47): the IR keeps each floating-point
weight's header, the entry its dtype, shape and sha256 (``ir.seeded``); the gate rebuilds
the program with seeded values (store/seeded.py); a changed weight is still named; the
entry and the IR are data from the repository, checked before anything is allocated."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from _factories import record
from test_weights import _module

from pytest_tvmperf.store import lowered_ir, seeded
from pytest_tvmperf.store.artifacts import commit
from pytest_tvmperf.store.baseline_store import _named_files
from pytest_tvmperf.store.inflate import inflate
from pytest_tvmperf.store.schema import check_record
from pytest_tvmperf.store.weight_changes import change_line
from pytest_tvmperf.values.ir_function import FunctionRef
from pytest_tvmperf.values.json_fields import SchemaProblem
from pytest_tvmperf.values.record import IRRef, Record
from pytest_tvmperf.values.seeded_weight import SeededWeight

SHA = "ab" * 32


def _save(module, base, seeded_form=True):
    pending = lowered_ir.save_pending(module, base / "artifacts", seeded=seeded_form)
    for part in pending.parts:
        commit(part)
    commit(pending)
    return pending.ref(base)


# ------------------------------------------------------------------ the values


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(4096,), (512, 512, 3, 3), (256, 64), (64, 4096)])
def test_seeded_values_are_finite_normal_never_zero_and_repeatable(dtype, shape):
    weight = SeededWeight(dtype, shape, SHA)
    values = seeded.seeded_values(weight, 3)
    assert values.dtype == np.dtype(dtype) and values.shape == shape
    magnitude = np.abs(values.astype("float64"))
    assert np.all(np.isfinite(values)) and magnitude.min() >= np.finfo(dtype).tiny  # no zero, no denormal
    assert np.array_equal(values, seeded.seeded_values(weight, 3))  # the same values every time
    assert not np.array_equal(values, seeded.seeded_values(weight, 4))  # each weight its own
    if len(shape) == 1:  # a bias, a batch norm's scale or variance: positive (a square root of it is no NaN)
        assert values.min() > 0
    else:  # a conv or dense weight: both signs, scaled by its fan-in (activations keep their size)
        assert values.min() < 0 < values.max()
        fan_in = int(np.prod(shape[1:]))
        assert magnitude.max() <= 1.5 * max(fan_in**-0.5, seeded.MIN_SCALE) * 1.01


def test_a_deep_chain_of_seeded_weights_stays_finite_and_normal():
    """Activations through 34 seeded 512x512 layers (with ReLU) neither grow to Inf nor
    shrink to denormals: the reason the values are scaled by the fan-in."""
    x = np.ones(512, "float32")
    for i in range(34):
        x = np.maximum(seeded.seeded_values(SeededWeight("float32", (512, 512), SHA), i) @ x, 0) + 1e-3
    assert np.all(np.isfinite(x)) and np.abs(x).min() >= np.finfo("float32").tiny


# ------------------------------------------------------------------ the entry's descriptions


def test_a_description_reads_only_allowlisted_dtypes_and_bounded_shapes():
    weight = SeededWeight.parse(f"float32[64,3,7,7] {SHA}")
    assert weight == SeededWeight("float32", (64, 3, 7, 7), SHA) and weight.nbytes == 64 * 3 * 7 * 7 * 4
    assert SeededWeight.parse(weight.as_text()) == weight
    assert SeededWeight.parse(f"float16[] {SHA}").shape == ()
    for bad in (
        f"object[4] {SHA}",
        f"int8[4] {SHA}",
        f"float32[-4] {SHA}",
        f"float32[4] {SHA[:-1]}",
        f"float32[1,1,1,1,1,1,1,1,1] {SHA}",
        f"float32[65536,65536,2] {SHA}",
        f"float32[04] {SHA}",
        4,
        None,
        "x" * 1000,
    ):
        with pytest.raises(ValueError):
            SeededWeight.parse(bad)


def test_the_entry_round_trips_and_the_schema_names_a_bad_line():
    ref = IRRef("artifacts/ir/x.json.gz", SHA, seeded=(SeededWeight("float32", (8, 4), SHA),))
    rec = dataclasses.replace(record(), ir=ref)
    data = json.loads(json.dumps(rec.as_json()))
    assert data["ir"] == {"path": "artifacts/ir/x.json.gz", "sha256": SHA, "seeded": [f"float32[8,4] {SHA}"]}
    check_record(data)
    assert Record.from_json(data).ir == ref
    assert _named_files([rec]) == ["artifacts/ir/x.json.gz"]  # no weight file to keep
    data["ir"]["seeded"][0] = "float32[8,4] not-a-digest"
    with pytest.raises(SchemaProblem, match=r"ir\.seeded\[0\]"):
        check_record(data)
    data["ir"]["seeded"] = "float32[8,4]"
    with pytest.raises(SchemaProblem, match=r"ir\.seeded"):
        check_record(data)


def test_the_program_key_has_the_seed_rule_and_shapes_not_the_digests():
    """The rebuilt library is cached per program: seeded values depend on the shapes only."""
    one = IRRef("ir", SHA, seeded=(SeededWeight("float32", (8, 4), SHA),))
    other_values = IRRef("ir", SHA, seeded=(SeededWeight("float32", (8, 4), "cd" * 32),))
    assert one.program_key == other_values.program_key != IRRef("ir", SHA).program_key
    assert one.program_key != IRRef("ir", SHA, seeded=(SeededWeight("float32", (4, 8), SHA),)).program_key


# ------------------------------------------------------------------ stored and rebuilt


def test_a_seeded_baseline_stores_no_weight_values_and_rebuilds_with_seeded_ones(tmp_path):
    from tvm_ffi.structural import structural_equal

    module = _module()
    ref = _save(module, tmp_path)
    exact = _save(module, tmp_path / "exact", seeded_form=False)
    assert ref.weights == () and [w.describe() for w in ref.seeded] == ["float32[256,64]", "float32[64]"]
    assert not (tmp_path / "artifacts" / "weights").exists()  # no weight file at all
    ir_file = tmp_path / ref.path
    weight_bytes = sum((tmp_path / "exact" / w.path).stat().st_size for w in exact.weights)
    assert ir_file.stat().st_size < 8_000 < weight_bytes  # 64 KiB of float32 weights: none stored
    graph = json.loads(inflate(ir_file.read_bytes()))
    assert [(d, s) for _, d, s, _ in seeded.unfilled(graph)] == [("float32", (256, 64)), ("float32", (64,))]
    lowered_ir.check_file(ir_file, ref, "ir", "t", "f")
    back = lowered_ir.load(ir_file, ref)
    assert not structural_equal(back, module, map_free_vars=True)  # other values ...
    assert structural_equal(back, lowered_ir.load(ir_file, ref), map_free_vars=True)  # ... the same every time
    other = _save(_module(1), tmp_path)  # other weights, same code: the same IR file, other digests
    assert other.path == ref.path and other.seeded != ref.seeded and other.program_key == ref.program_key


def test_an_ir_without_weights_or_digests_is_an_error_naming_file_test_and_fix(tmp_path):
    ref = _save(_module(), tmp_path)
    lost = dataclasses.replace(ref, seeded=())
    with pytest.raises(lowered_ir.IRFileError) as info:
        lowered_ir.check_file(
            tmp_path / ref.path,
            lost,
            "baselines/artifacts/ir/x.json.gz",
            "test_perf.py::test_mlp",
            "baselines/test_perf.json",
        )
    message = str(info.value)
    for part in (
        "baselines/artifacts/ir/x.json.gz",
        "test_perf.py::test_mlp",
        "baselines/test_perf.json",
        "2 weight(s) stored without their values (float32[256,64], float32[64])",
        "ir.seeded",
        "ir.weights",
        "pytest --tvmperf-update",
    ):
        assert part in message
    with pytest.raises(lowered_ir.IRLoadError, match="ir.seeded"):  # never handed to TVM without its values
        lowered_ir.decode((tmp_path / ref.path).read_bytes())


def test_a_tampered_description_is_refused_before_anything_is_allocated(tmp_path, monkeypatch):
    ref = _save(_module(), tmp_path)
    ir_file = tmp_path / ref.path
    for seeded_list, match in (
        (ref.seeded[:1], r"holds 2 weight\(s\).*describes 1"),
        ((SeededWeight("float32", (64, 256), SHA), ref.seeded[1]), r"ir\.seeded\[0\] describes float32\[64,256\]"),
        ((SeededWeight("float64", (256, 64), SHA), ref.seeded[1]), r"ir\.seeded\[0\]"),
    ):
        with pytest.raises(lowered_ir.IRFileError, match=match):
            lowered_ir.check_file(ir_file, dataclasses.replace(ref, seeded=tuple(seeded_list)), "ir", "t", "f")
    monkeypatch.setenv("TVMPERF_MAX_IR_MB", "0.01")  # 64 KiB of seeded weights: past a 10 kB bound
    with pytest.raises(lowered_ir.IRFileError, match=r"TVMPERF_MAX_IR_MB"):
        lowered_ir.check_file(ir_file, ref, "ir", "t", "f")
    allocated = []
    monkeypatch.setattr(seeded, "seeded_values", lambda *a: allocated.append(a))
    with pytest.raises(lowered_ir.IRLoadError, match=r"TVMPERF_MAX_IR_MB"):
        lowered_ir.load(ir_file, ref)
    assert allocated == []


# ------------------------------------------------------------------ a weight change, named


def test_a_changed_weight_is_named_by_position_dtype_and_shape():
    before = [("float32[256,64]", "a" * 64), ("float32[64]", "b" * 64)]
    assert change_line(before, before) == ""
    assert (
        change_line(before, [("float32[256,64]", "c" * 64), ("float32[64]", "b" * 64)])
        == "1 of 2 weight(s) changed (by sha256): #1 float32[256,64]"
    )
    assert change_line(before, [("float32[256,80]", "c" * 64), ("float32[64]", "b" * 64)]) == (
        "the weights changed (by sha256): 1 new (float32[256,80]); 1 gone (float32[256,64]); 2 now, 2 in the baseline"
    )


def test_program_check_tells_the_same_program_from_one_with_other_weights(tmp_path):
    import hashlib

    import tvm

    from pytest_tvmperf.check.sources import ProgramCheck, program_check

    @dataclasses.dataclass
    class Entry:
        ir: IRRef
        tvm_version: str = tvm.__version__

    @dataclasses.dataclass
    class Built:
        lowered: object

    module = _module()
    data, _files, described, pieces = lowered_ir.encode_stored(module)
    ref = IRRef(
        "ir.json.gz",
        hashlib.sha256(data).hexdigest(),
        seeded=tuple(described),
        functions=tuple(FunctionRef(name, hashlib.sha256(piece).hexdigest()) for name, piece in pieces),
    )
    assert program_check(Built(module), Entry(ref)) == ProgramCheck(same=True)
    changed = program_check(Built(_module(1)), Entry(ref))
    assert not changed.same and changed.weights == "1 of 2 weight(s) changed (by sha256): #1 float32[256,64]"


# ------------------------------------------------------------------ kernels stored once, by content


def test_each_kernel_is_a_file_of_its_own_shared_by_every_record_and_rebuilt_whole(tmp_path):
    """A one-layer change adds its changed kernels' files and a small IR, not every kernel's
    TIR again (issue 47: a re-record after a one-layer change adds under 100 kB)."""
    import tvm
    from tvm_ffi.structural import structural_equal

    ref = _save(_module(), tmp_path)
    assert [f.name for f in ref.functions] == ["add", "matmul"]
    files = {f.path(ref.path) for f in ref.functions}
    assert all((tmp_path / p).is_file() for p in files)
    assert _named_files([dataclasses.replace(record(), ir=ref)]) == [
        "artifacts/ir/" + ref.path.split("/")[-1],
        *[f.path(ref.path) for f in ref.functions],
    ]
    rest, pieces = lowered_ir.split_functions(_module())
    back = lowered_ir.decode(lowered_ir.encode(rest))  # the stubs' module, each kernel put back
    for name, piece in pieces:
        ((_, func),) = lowered_ir.decode(piece).functions.items()
        back[back.get_global_var(name)] = func.with_attr("global_symbol", name)
    assert structural_equal(back, _module(), map_free_vars=True)  # the program, whole
    wider = _save(_module(n=128), tmp_path)  # another matmul; the same add kernel, the same file
    assert {f.path(wider.path) for f in wider.functions} & files == {
        f.path(ref.path) for f in ref.functions if f.name == "add"
    }
    tvm.relax.build(lowered_ir.load(tmp_path / ref.path, ref), "llvm", relax_pipeline=None)  # builds


def test_a_missing_changed_or_dropped_kernel_file_is_refused(tmp_path):
    ref = _save(_module(), tmp_path)
    kernel = tmp_path / ref.functions[1].path(ref.path)
    data = kernel.read_bytes()
    kernel.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(lowered_ir.IRFileError, match=r"ir\.functions\[1\].*changed or damaged"):
        lowered_ir.check_file(tmp_path / ref.path, ref, "ir", "t", "f")
    kernel.unlink()
    with pytest.raises(lowered_ir.IRFileError, match=r"ir\.functions\[1\].*missing"):
        lowered_ir.check_file(tmp_path / ref.path, ref, "ir", "t", "f")
    # an entry that drops a kernel would run its empty stub: never built
    with pytest.raises(lowered_ir.IRLoadError, match="do not match the stubs"):
        lowered_ir.load(tmp_path / ref.path, dataclasses.replace(ref, functions=ref.functions[:1]))


def test_a_kernel_file_an_entry_names_by_its_line_is_never_pruned(tmp_path):
    from pytest_tvmperf.store.artifacts import delete_unnamed

    ref = _save(_module(), tmp_path)
    rec = dataclasses.replace(record(), ir=ref)
    (tmp_path / "test_perf.json").write_text(json.dumps({"schema_version": 1, "tests": {"t": rec.as_json()}}))
    kernels = {f.path(ref.path) for f in ref.functions}
    orphan = tmp_path / "artifacts" / "ir" / ("0" * 24 + ".json.gz")
    orphan.write_bytes(b"x")
    candidates = kernels | {ref.path, "artifacts/ir/" + orphan.name}
    assert delete_unnamed(candidates, tmp_path, tmp_path / "artifacts") == ["artifacts/ir/" + orphan.name]
    assert all((tmp_path / k).is_file() for k in kernels)
    (tmp_path / "test_perf.json").write_text("{not json " + ref.functions[0].sha256)  # unreadable: kept by its hash
    assert delete_unnamed(kernels, tmp_path, tmp_path / "artifacts") == [ref.functions[1].path(ref.path)]
