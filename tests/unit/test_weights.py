"""A baseline's IR is stored without its weights, the weights once by content (issue 37
item 2): the IR file is small, the same tensor is one file for every test and re-record,
and the gate rebuilds the program that was recorded (store/weights.py, store/lowered_ir.py)."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest
from _factories import record

from pytest_tvmperf.store import lowered_ir, weights
from pytest_tvmperf.store.artifacts import commit
from pytest_tvmperf.store.baseline_store import _named_files
from pytest_tvmperf.values.record import IRRef, Record, WeightRef
from pytest_tvmperf.store.schema import check_record
from pytest_tvmperf.values.json_fields import SchemaProblem

SHA = "ab" * 32


def _module(seed: int = 0, n: int = 256):
    """A lowered-like Relax module with one bound 256x64 float32 weight (64 KiB) and a small bias."""
    import tvm
    from tvm import relax

    rng = np.random.default_rng(seed)
    w = relax.const(rng.standard_normal((n, 64)).astype("float32"))
    b = relax.const(np.arange(64, dtype="float32"))
    x = relax.Var("x", relax.TensorType((1, n), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.add(relax.op.matmul(x, w), b))
        bb.emit_func_output(y)
    # after the default pipeline, as the IR the plugin stores is (store/ir_allowlist.py's allowlist
    # holds what a pipeline hands to code generation, not high-level operators)
    return relax.get_default_pipeline(tvm.target.Target("llvm"))(bb.get())


def _save(module, base: Path):
    pending = lowered_ir.save_pending(module, base / "artifacts")
    for _, w in pending.weights:
        commit(w)
    commit(pending)
    return pending.ref(base)


def test_the_ir_is_stored_without_its_weights_and_rebuilds_the_same_program(tmp_path):
    from tvm_ffi.structural import structural_equal

    module = _module()
    ref = _save(module, tmp_path)
    ir_file = tmp_path / ref.path
    assert len(ref.weights) == 1  # the 64 KiB weight; the 256-byte bias stays in the IR
    assert ir_file.stat().st_size < len(lowered_ir.encode(module)) / 10
    weight_file = tmp_path / ref.weights[0].path
    assert weight_file.parent.name == "weights" and weight_file.name.endswith(".npy.gz")
    # the IR alone is a plain save_json graph TVM loads (zeros in the weight's place)
    assert not structural_equal(lowered_ir.decode(ir_file.read_bytes()), module, map_free_vars=True)
    lowered_ir.check_file(ir_file, ref, "ir", "t", "f")
    back = lowered_ir.load(ir_file, ref)
    assert structural_equal(back, module, map_free_vars=True)  # the program that was recorded


def test_a_weight_is_one_file_for_every_test_and_re_record(tmp_path):
    one, again = _save(_module(0), tmp_path), _save(_module(0), tmp_path)
    assert one == again
    other = _save(_module(1), tmp_path)  # other weights, same code: the same IR, another weight file
    assert other.path == one.path and other.weights[0].path != one.weights[0].path
    assert other.program_key != one.program_key  # the rebuilt library is cached per program, weights included
    assert len(list((tmp_path / "artifacts" / "weights").iterdir())) == 2


def test_the_entry_names_its_weights_for_prune_and_the_schema(tmp_path):
    ref = IRRef("artifacts/ir/x.json.gz", SHA, (WeightRef(7, "artifacts/weights/w.npy.gz", SHA),))
    rec = dataclasses.replace(record(), ir=ref)
    assert _named_files([rec]) == ["artifacts/ir/x.json.gz", "artifacts/weights/w.npy.gz"]
    data = json.loads(json.dumps(rec.as_json()))
    check_record(data)
    assert Record.from_json(data).ir == ref
    old = dataclasses.replace(record(), ir=IRRef("artifacts/ir/x.json.gz", SHA)).as_json()
    assert "weights" not in old["ir"]  # an IR recorded whole still reads
    check_record(old)
    data["ir"]["weights"][0]["path"] = "../../etc/passwd"
    with pytest.raises(SchemaProblem, match=r"ir\.weights\[0\]\.path"):
        check_record(data)


def test_a_missing_or_changed_weight_file_is_an_error_naming_the_field(tmp_path):
    ref = _save(_module(), tmp_path)
    weight_file = tmp_path / ref.weights[0].path
    weight_file.write_bytes(weights.encode_weight(np.zeros((256, 64), "float32")))
    with pytest.raises(lowered_ir.IRFileError, match=r"ir\.weights\[0\]\.sha256.*changed or damaged"):
        lowered_ir.check_file(tmp_path / ref.path, ref, "ir", "t", "f")
    weight_file.unlink()
    with pytest.raises(lowered_ir.IRFileError, match=r"ir\.weights\[0\]\.path.*missing"):
        lowered_ir.check_file(tmp_path / ref.path, ref, "ir", "t", "f")


def _npy(array, allow_pickle=False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return gzip.compress(buf.getvalue())


HEAD = weights.TensorHeader("f4", (4, 4), 64, 64)


def test_weight_files_are_read_without_pickle_and_checked_against_the_ir():
    assert weights.read_weight(_npy(np.ones((4, 4), "float32")), HEAD, "w") == np.ones((4, 4), "float32").tobytes()
    with pytest.raises(weights.WeightError, match="expects f4\\[4, 4\\]"):
        weights.read_weight(_npy(np.ones((4, 5), "float32")), HEAD, "w")
    with pytest.raises(weights.WeightError, match="expects"):
        weights.read_weight(_npy(np.ones((4, 4), "int32")), HEAD, "w")
    with pytest.raises(weights.WeightError, match="not a NumPy"):
        weights.read_weight(_npy(np.array([{"a": 1}], dtype=object), allow_pickle=True), HEAD, "w")
    with pytest.raises(weights.WeightError, match="more than"):  # decompressed no further than the IR's size allows
        weights.read_weight(_npy(np.ones((4096, 4096), "float32")), HEAD, "w")
    with pytest.raises(weights.WeightError, match="not gzip"):
        weights.read_weight(b"not gzip", HEAD, "w")
