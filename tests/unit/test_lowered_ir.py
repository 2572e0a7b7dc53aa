"""The baseline's program as IR: encoded, checked, named in the entry, compared a/b
when rebuilt here (store/lowered_ir.py, builder/rebuild.py, judge/compare.py)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from pathlib import Path

import pytest
from _factories import machine, record, timing, with_timings

from pytest_tvmperf.config.limits import Limit
from pytest_tvmperf.config.time_policy import TimePolicy
from pytest_tvmperf.judge.compare import AB_REBUILT, compare_time
from pytest_tvmperf.store import lowered_ir
from pytest_tvmperf.store.files import BaselineError, dump_baselines, parse_baselines
from pytest_tvmperf.values.record import IRRef, Record

PATH = Path("baselines/test_x.json")
SHA = "ab" * 32


def _scale_module():
    import tvm
    from tvm import te

    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    return tvm.IRModule({"main": te.create_prim_func([a, b]).with_attr("global_symbol", "main")})


def test_encode_is_deterministic_and_round_trips_structurally_equal():
    from tvm_ffi.structural import structural_equal

    module = _scale_module()
    data = lowered_ir.encode(module)
    assert data == lowered_ir.encode(module)  # the same module, the same bytes: the same file
    assert gzip.decompress(data).startswith(b"{")
    assert structural_equal(lowered_ir.decode(data), module, map_free_vars=True)


@pytest.mark.parametrize(
    "data, why",
    [(b"not gzip", "not gzip-compressed"), (gzip.compress(b'{"root": 1, "nodes": "x"}', mtime=0), "cannot load it")],
    ids=["not-gzip", "bad-graph"],
)  # ids fixed: xdist workers must collect the same ones
def test_decode_says_why_this_tvm_cannot_load_it(data, why):
    with pytest.raises(lowered_ir.IRLoadError) as info:
        lowered_ir.decode(data)
    assert why in str(info.value)


def test_save_pending_names_the_file_by_its_content(tmp_path):
    pending = lowered_ir.save_pending(_scale_module(), tmp_path / "artifacts")
    data = pending.temp.read_bytes()
    assert pending.sha256 == hashlib.sha256(data).hexdigest()
    assert pending.final == tmp_path / "artifacts" / "ir" / f"{pending.sha256[:24]}.json.gz"
    assert pending.temp.parent == pending.final.parent and pending.temp.name.endswith(".tmp")


@pytest.mark.parametrize(
    "damage, words",
    [
        ("missing", "is missing"),
        ("edited", "does not match field ir.sha256 of that entry"),
        ("directory", "is not a regular file"),
    ],
)
def test_a_damaged_ir_file_is_an_error_naming_file_test_and_field(tmp_path, damage, words):
    path = tmp_path / "x.json.gz"
    data = lowered_ir.encode(_scale_module())
    ref = IRRef("artifacts/ir/x.json.gz", hashlib.sha256(data).hexdigest())
    if damage == "edited":
        path.write_bytes(data[:-3] + b"xyz")
    elif damage == "directory":
        path.mkdir()
    with pytest.raises(lowered_ir.IRFileError) as info:
        lowered_ir.check_file(
            path, ref, "baselines/artifacts/ir/x.json.gz", "test_a[llvm-prim]", "baselines/test_x.json"
        )
    message = str(info.value)
    assert (
        "baseline IR baselines/artifacts/ir/x.json.gz (named by field ir.path of entry 'test_a[llvm-prim]' in "
        "baselines/test_x.json)"
    ) in message
    assert words in message and "--tvmperf-update" in message


def test_an_intact_ir_file_passes_the_check(tmp_path):
    path = tmp_path / "x.json.gz"
    path.write_bytes(lowered_ir.encode(_scale_module()))
    lowered_ir.check_file(path, IRRef("x", hashlib.sha256(path.read_bytes()).hexdigest()), "x", "t", "f")


def _entry_with_ir(ir) -> dict:
    rec = dataclasses.replace(record(), ir=IRRef("artifacts/ir/abc.json.gz", SHA))
    entry = json.loads(dump_baselines({"test_a[llvm-prim]": rec}))["tests"]["test_a[llvm-prim]"]
    entry["ir"] = ir
    return entry


def test_the_ir_reference_round_trips_through_a_baseline_file():
    rec = dataclasses.replace(record(), ir=IRRef("artifacts/ir/abc.json.gz", SHA))
    text = dump_baselines({"test_a[llvm-vm-bytecode]": rec})
    assert json.loads(text)["tests"]["test_a[llvm-vm-bytecode]"]["ir"] == {
        "path": "artifacts/ir/abc.json.gz",
        "sha256": SHA,
    }
    assert parse_baselines(text, PATH)["test_a[llvm-vm-bytecode]"].ir == IRRef("artifacts/ir/abc.json.gz", SHA)
    assert "ir" not in json.loads(dump_baselines({"t": record()}))["tests"]["t"]  # the old form reads as before


@pytest.mark.parametrize(
    "ir, field, problem",
    [
        ("x.json.gz", "ir", "expected an object"),
        ({"sha256": SHA}, "ir.path", "missing"),
        ({"path": "../x.json.gz", "sha256": SHA}, "ir.path", "a path inside the baseline directory"),
        ({"path": "artifacts/ir/x.json.gz"}, "ir.sha256", "missing"),
        ({"path": "artifacts/ir/x.json.gz", "sha256": "abc"}, "ir.sha256", "64 lowercase hex digits"),
    ],
)
def test_a_malformed_ir_field_is_an_error_naming_it(ir, field, problem):
    with pytest.raises(BaselineError) as info:
        parse_baselines(json.dumps({"schema_version": 1, "tests": {"test_a[llvm-prim]": _entry_with_ir(ir)}}), PATH)
    message = str(info.value)
    assert f"entry 'test_a[llvm-prim]' is malformed: field {field}: " in message and problem in message


NOW = (1.0e-3,) * 10


def test_a_rebuilt_baseline_is_compared_a_b_even_with_no_timing_of_this_machine():
    base: Record = with_timings([timing(NOW, mach=machine(cpu="recording CPU"))])
    now = record((1.2e-3,) * 10, ab=NOW)  # today 1.2x the rebuilt baseline, timed side by side
    verdict = compare_time(now, base, Limit(relative=0.05), TimePolicy(other_machine="skip"), ab_source="rebuilt")
    assert verdict.status == "regressed"
    assert verdict.decision.mode == AB_REBUILT == "a/b, baseline rebuilt here"
    assert verdict.note.startswith("a/b, baseline rebuilt here")
    assert verdict.baseline == pytest.approx(1.0e-3)  # the rebuilt baseline's time here, not a stored one
    # the same samples without a rebuilt baseline: another machine's, not gated (skip)
    assert compare_time(now, base, Limit(relative=0.05), TimePolicy(other_machine="skip")).status == "not gated"


def test_a_rebuilt_baseline_on_the_recording_machine_is_labelled_rebuilt():
    base = with_timings([timing(NOW)])
    now = record(NOW, ab=NOW)
    rebuilt = compare_time(now, base, Limit(relative=0.05), ab_source="rebuilt")
    artifact = compare_time(now, base, Limit(relative=0.05))
    assert (rebuilt.status, rebuilt.decision.mode) == ("pass", AB_REBUILT)
    assert (artifact.status, artifact.decision.mode) == ("pass", "a/b")


def test_the_library_cache_is_keyed_by_host_executor_and_ir_hash_and_ignored_by_git(tmp_path, monkeypatch):
    from pytest_tvmperf.builder import rebuild

    monkeypatch.setenv("TVMPERF_CACHE_DIR", str(tmp_path / ".tvmperf-cache"))

    built = []

    class Target:
        pass

    def fake_build(module, executor, target, path):
        built.append(module)
        Path(path).write_bytes(b"lib")

    original = rebuild.build_library
    rebuild.build_library = fake_build
    try:
        path, cached = rebuild.cached_library("fp1", "prim", SHA, lambda: "module", Target())
        again, cached_again = rebuild.cached_library("fp1", "prim", SHA, lambda: "module", Target())
        other, _ = rebuild.cached_library("fp2", "prim", SHA, lambda: "module", Target())
        path.write_bytes(b"lib, altered after it was cached")  # no longer the build it was: built again
        _, cached_altered = rebuild.cached_library("fp1", "prim", SHA, lambda: "module", Target())
    finally:
        rebuild.build_library = original
    assert (cached, cached_again, path == again, cached_altered, len(built)) == (False, True, True, False, 3)
    assert path == tmp_path / ".tvmperf-cache" / "builds" / "ab" / "fp1" / f"prim-{SHA[:32]}.so" and other != path
    assert (tmp_path / ".tvmperf-cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not [p for p in path.parent.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize(
    "part, damage, words",
    [
        ("weights", "missing", "are missing; restore it"),
        ("weights", "directory", "are not a regular file; restore it"),
        (
            "weights",
            "edited",
            "do not match field ir.weights[0].sha256 (file {actual}..., recorded {recorded}...): "
            "the file was changed or damaged; restore it",
        ),
        ("kernel", "missing", "is missing; restore it"),
        ("kernel", "directory", "is not a regular file; restore it"),
        (
            "kernel",
            "edited",
            "does not match that field's sha256 (file {actual}..., recorded {recorded}...): "
            "the file was changed or damaged; restore it",
        ),
    ],
)
def test_a_damaged_weights_or_kernel_file_names_the_entrys_field(tmp_path, part, damage, words):
    """The files stored beside the IR (weights, kernels) are checked like the IR, each
    message naming the file, its field of the entry and the fix, word for word."""
    from pytest_tvmperf.values.ir_function import FunctionRef
    from pytest_tvmperf.values.record import WeightRef

    ir = tmp_path / "artifacts" / "ir" / "x.json.gz"
    ir.parent.mkdir(parents=True)
    ir.write_bytes(lowered_ir.encode(_scale_module()))
    stored = b"stored bytes"
    recorded = hashlib.sha256(stored).hexdigest()
    weight, kernel = WeightRef(3, "artifacts/weights/w.bin", recorded), FunctionRef("k", recorded)
    ref = IRRef("artifacts/ir/x.json.gz", hashlib.sha256(ir.read_bytes()).hexdigest())
    if part == "weights":
        ref, rel = dataclasses.replace(ref, weights=(weight,)), weight.path
        what = (
            "baseline weights artifacts/weights/w.bin (named by field ir.weights[0].path of entry 't[llvm-prim]' "
            "in baselines/test_x.json)"
        )
    else:
        ref, rel = dataclasses.replace(ref, functions=(kernel,)), kernel.path(ref.path)
        what = (
            f"baseline kernel {rel} (named by field ir.functions[0] of entry 't[llvm-prim]' in baselines/test_x.json)"
        )
    file = tmp_path / rel
    file.parent.mkdir(parents=True, exist_ok=True)
    if damage == "directory":
        file.mkdir()
    elif damage == "edited":
        file.write_bytes(b"other bytes")
    with pytest.raises(lowered_ir.IRFileError) as info:
        lowered_ir.check_file(ir, ref, "x", "t[llvm-prim]", "baselines/test_x.json")
    actual = hashlib.sha256(b"other bytes").hexdigest()[:16]
    expected = f"{what} {words.format(actual=actual, recorded=recorded[:16])} from version control"
    assert str(info.value).startswith(expected)
    assert str(info.value).endswith("(test id t[llvm-prim])")
