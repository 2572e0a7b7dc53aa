"""Baseline files key per-kernel data by kernel identity, not TVM's numbering (issue 47):
re-recording after one layer is added changes the lines of what changed, not every
renumbered kernel's; files keyed by TVM name (every baseline before) still read and gate."""

from __future__ import annotations

import difflib
import json
from dataclasses import replace

import pytest
from _factories import exact, machine, record, with_timings, timing

from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.regression import regression_message
from pytest_tvmperf.store.files import dump_baselines, load_baselines, merge_updates, parse_baselines
from pytest_tvmperf.store.schema import check_record
from pytest_tvmperf.values.json_fields import SchemaProblem
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.kernel_keys import keyed_by_identity, stable_key, stable_names
from pytest_tvmperf.values.record import Record

TEST = "test_net[llvm-vm-bytecode]"


def conv(i: int, k: int = 3) -> KernelId:
    """The i-th conv of a made-up network: its own code (hash), shapes and layer."""
    return KernelId(
        f"{i:02x}{k:x}" + "0" * 13,
        "conv2d_add_relu",
        f"1x8x16x16,8x8x{k}x{k},1x8x16x16",
        f"body.conv{i} (Conv2d {k}x{k})",
    )


def network(layers: list[KernelId], seed: int = 0) -> Record:
    """A record of a network that calls its convs in order, named as TVM numbers them
    (``fused_conv2d{n}_add_relu``), with per-kernel counts and times of each layer."""
    names = [f"fused_conv2d{n or ''}_add_relu" for n in range(len(layers))]
    listing, reg = [], 1
    for n, name in enumerate(names):
        listing += [
            f"call vm.builtin.alloc_tensor in: %{reg}, i0, c[{2 * n}], c[0] dst: %{reg + 1}",
            f"call {name} in: %{reg - 1}, c[{2 * n + 1}], %{reg + 1} dst: %void",
        ]
        reg += 2
    listing.append(f"ret %{reg - 1}")
    counts = {name: 1000 * int(ident.key[:2], 16) + 7 for name, ident in zip(names, layers)}
    metrics = replace(
        exact(instructions=len(listing), kernels=len(layers)),
        by_callee={**{n: 1 for n in names}, "vm.builtin.alloc_tensor": len(names), "ret": 1},
        calls={**{n: 1 for n in names}, "vm.builtin.alloc_tensor": len(names)},
        per_kernel={"cpu_instructions": {**counts, "[runtime]": 500}},
    )
    base = record(metrics=metrics)
    return replace(
        base,
        executor="vm-bytecode",
        bytecode={"main": "\n".join(listing)},
        kernel_time_s={name: 1e-3 * (1 + int(ident.key[:2], 16)) for name, ident in zip(names, layers)},
        kernels=dict(zip(names, layers)),
    )


def stored(rec: Record) -> str:
    """The baseline file text the store writes for ``rec`` as one test's new entry."""
    return dump_baselines({TEST: keyed_by_identity(rec)})


def changed_lines(old: str, new: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


LAYERS = [conv(i) for i in range(12)]
ADDED = LAYERS[:2] + [conv(99, 1)] + LAYERS[2:]  # one 1x1 conv added after the second layer


def test_a_re_record_after_an_added_layer_changes_the_lines_of_what_changed():
    """Keyed by TVM name, every kernel after the added one is renamed (conv2d2 -> conv2d3 ...):
    each of its lines in each per-kernel map changes, and every bytecode line after it is
    renumbered. Keyed by identity, the diff is the new kernel's lines and the counts it moves."""
    old, new = network(LAYERS), network(ADDED)
    by_name = changed_lines(dump_baselines({TEST: old}), dump_baselines({TEST: new}))
    by_identity = changed_lines(stored(old), stored(new))
    assert len(by_name) >= 60, len(
        by_name
    )  # what a network's re-record was (432 lines for ResNet-18; kernel times one line)
    # the bound: the new kernel's own lines (2 in the bytecode, 1 in each of by_callee, calls,
    # per_kernel's one metric and kernel_time_s, 6 in kernels: 12); the totals it moves
    # (alloc_tensor in by_callee and calls, the function's instructions, the kernel count: 4, each
    # a removed and an added line: 8); a map whose last entry it follows gains a comma there
    # (5 maps, 2 lines each: 10). By name it grows with every kernel after the added one.
    assert len(by_identity) <= 12 + 8 + 10, "\n".join(by_identity)
    unchanged = {stable_key(k) for k in LAYERS}
    # kernel_time_s is one line (store/rerecord.py): the new kernel changes that line only
    touched = [line for line in by_identity if any(key in line for key in unchanged) and "kernel_time_s" not in line]
    bare = lambda line: line[1:].rstrip(",")  # noqa: E731
    for line in touched:  # an unchanged kernel's line changes only by a comma: its value is the same
        assert any(bare(other) == bare(line) and other[0] != line[0] for other in touched), line


def test_keys_are_unique_stable_and_idempotent():
    twin = replace(LAYERS[3])  # the same code under two names
    names = stable_names(
        {"fused_conv2d10_add_relu": twin, "fused_conv2d2_add_relu": LAYERS[3], "fused_conv2d_add_relu": LAYERS[0]}
    )
    assert names == {
        "fused_conv2d2_add_relu": "conv2d_add_relu@0330000000",
        "fused_conv2d10_add_relu": "conv2d_add_relu@0330000000~2",  # numbering order, not text order
        "fused_conv2d_add_relu": "conv2d_add_relu@0030000000",
    }
    keyed = keyed_by_identity(network(LAYERS))
    assert keyed_by_identity(keyed) == keyed
    assert set(keyed.kernels) == set(keyed.kernel_time_s) == {stable_key(k) for k in LAYERS}
    assert (
        "%" + "1" not in keyed.bytecode["main"]
        and "call conv2d_add_relu@0030000000 in: %_, c[_], %_" in keyed.bytecode["main"]
    )
    prim = replace(network(LAYERS[:1]), executor="prim")
    assert keyed_by_identity(prim) is prim  # a PrimFunc test's one kernel keeps its name, main
    no_ids = replace(network(LAYERS), kernels=None)
    assert keyed_by_identity(no_ids) is no_ids


def _message(base: Record, now: Record) -> str:
    comparison = Comparison(
        (
            MetricVerdict("kernels", Verdict.REGRESSED, 12, 13, "0"),
            MetricVerdict("cpu_instructions", Verdict.REGRESSED, 1, 2, "1%"),
        )
    )
    return regression_message(f"t.py::{TEST}", "baselines/t.json", now, base, comparison)


def test_both_forms_read_and_gate_alike():
    """A baseline keyed by TVM name (every file before) and the same keyed by identity read
    back and give the same verdict lines; the new kernel never shows under a baseline name."""
    old, now = network(LAYERS), network(ADDED)
    by_name = parse_baselines(dump_baselines({TEST: old}), "b.json")[TEST]
    keyed = parse_baselines(stored(old), "b.json")[TEST]
    assert set(by_name.kernels) == set(old.kernels) and set(keyed.kernels) == {stable_key(k) for k in LAYERS}
    lines = {}
    for form, base in (("name", by_name), ("identity", keyed)):
        text = _message(base, now)
        lines[form] = next(line for line in text.splitlines() if "kernels since the baseline" in line)
        assert "new: body.conv99 (Conv2d 1x1) [fused_conv2d2_add_relu]" in lines[form]
        assert "changed" not in lines[form] and "removed" not in lines[form]
        diff = [
            x
            for x in text.split("VM bytecode, baseline -> now:")[1].splitlines()
            if x.strip()[:1] in ("+", "-") and not x.strip().startswith(("+++", "---"))
        ]
        assert len(diff) == 2 and diff[0].strip().startswith("+call vm.builtin.alloc_tensor"), diff  # its alloc + call
        # TVM numbers the new kernel fused_conv2d2_add_relu, the name a file keyed by TVM name gives the
        # baseline's third conv: there it shows under its identity key; a keyed file has no such name
        shown = "conv2d_add_relu@6310000000 [new]" if form == "name" else "fused_conv2d2_add_relu"
        assert diff[1].strip().startswith(f"+call {shown} in: %4"), diff
    assert lines["name"] == lines["identity"]


def test_an_edited_identity_key_is_an_error_naming_it():
    data = json.loads(stored(network(LAYERS[:2])))["tests"][TEST]
    check_record(data)
    data["kernels"]["conv2d_add_relu@0030000000"]["key"] = "ff" * 8
    with pytest.raises(SchemaProblem) as exc:
        check_record(data)
    assert exc.value.field == "kernels.conv2d_add_relu@0030000000"
    assert "the key says op 'conv2d_add_relu' and code hash 0030000000" in str(exc.value)


def test_merging_into_a_by_name_file_keeps_other_machines_timings(tmp_path):
    """The first re-record of a file written keyed by name: the test's entry is rewritten
    keyed by identity; another machine's timing of the same code is kept."""
    other = machine(cpu="other")
    old = replace(network(LAYERS), timings={other.fingerprint: timing((2e-3, 2e-3), mach=other)})
    path = tmp_path / "t.json"
    path.write_text(dump_baselines({TEST: old, "test_other[llvm-vm-bytecode]": with_timings([])}))
    merge_updates(path, {TEST: network(LAYERS)})
    entry = load_baselines(path)[TEST]
    assert set(entry.timings) == {other.fingerprint, machine().fingerprint}
    assert set(entry.kernels) == {stable_key(k) for k in LAYERS}
    assert "test_other[llvm-vm-bytecode]" in load_baselines(path)


def test_stored_counts_read_back_under_the_builds_names():
    """The baseline's counts of its own program (reused on a gate, kept on an update when
    valgrind is missing) compare with this build's: keyed by identity, they are read back
    under the names this build gave the same kernels; a key it has not stays a key."""
    from pytest_tvmperf.values.kernel_keys import in_build_names

    rec = network(LAYERS)
    keyed = keyed_by_identity(rec)
    assert keyed.exact != rec.exact
    assert in_build_names(keyed.exact, rec.kernels) == rec.exact
    assert in_build_names(rec.exact, rec.kernels) == rec.exact  # a file keyed by name: as it is
    fewer = dict(list(rec.kernels.items())[:-1])
    back = in_build_names(keyed.exact, fewer)
    assert stable_key(LAYERS[-1]) in back.calls and "fused_conv2d_add_relu" in back.calls


def matmul(key: str, shapes: str) -> KernelId:
    return KernelId(key * 8, "matmul", shapes)


#: two dense layers, x (n, 16) -> 16 -> 4; its code hashes sort fc1's kernel first
CHAIN = {"matmul": matmul("f0", "nx16,16x16,nx16"), "matmul1": matmul("0f", "nx16,4x16,nx4")}
#: the hidden layer made 32 wide: both kernels changed code and shapes
WIDER = {"matmul": matmul("aa", "nx16,32x16,nx32"), "matmul1": matmul("bb", "nx32,4x32,nx4")}


def _with_parts(kernels: dict[str, KernelId], hidden: int, code: dict[str, int]) -> Record:
    metrics = replace(
        exact(kernels=len(kernels)),
        by_callee={**{k: 1 for k in kernels}, "ret": 1},
        calls={k: 1 for k in kernels},
        resources={"alloc_bytes": 3 * hidden * 4 + 48, "code_bytes": sum(code.values())},
        resource_parts={
            "alloc_bytes": {"output of matmul": 3 * hidden * 4, "output of matmul1": 48, "returned or unused": 0},
            "code_bytes": {**code, "[runtime]": 100},
        },
        measured_with={"code_bytes": "tvm 0.27, llvm 22"},
    )
    return replace(record(metrics=metrics), executor="vm-bytecode", kernels=dict(kernels))


def test_resource_parts_are_keyed_by_identity_and_read_back_under_the_builds_names():
    """code_bytes' kernels and alloc_bytes' ``output of K`` sites are keyed like the other
    per-kernel data: an unchanged kernel's parts keep their lines when TVM renumbers it."""
    from pytest_tvmperf.values.kernel_keys import in_build_names

    rec = _with_parts(CHAIN, 16, {"matmul": 900, "matmul1": 800})
    keyed = keyed_by_identity(rec)
    assert keyed.exact.resource_parts == {
        "alloc_bytes": {"output of matmul@f0f0f0f0f0": 192, "output of matmul@0f0f0f0f0f": 48, "returned or unused": 0},
        "code_bytes": {"matmul@f0f0f0f0f0": 900, "matmul@0f0f0f0f0f": 800, "[runtime]": 100},
    }
    stored_entry = parse_baselines(stored(rec), "b.json")[TEST]
    assert stored_entry.exact.resource_parts == keyed.exact.resource_parts
    assert in_build_names(stored_entry.exact, rec.kernels).resource_parts == rec.exact.resource_parts
    # the same kernels renumbered by a layer added before them: the same keys, the same lines
    renamed = {"matmul1": CHAIN["matmul"], "matmul2": CHAIN["matmul1"]}
    moved = replace(
        rec,
        kernels=renamed,
        exact=replace(
            rec.exact,
            resource_parts={
                "alloc_bytes": {"output of matmul1": 192, "output of matmul2": 48, "returned or unused": 0},
                "code_bytes": {"matmul1": 900, "matmul2": 800, "[runtime]": 100},
            },
        ),
    )
    assert keyed_by_identity(moved).exact.resource_parts == keyed.exact.resource_parts


def _resource_message(base: Record, now: Record) -> str:
    comparison = Comparison(
        (
            MetricVerdict("alloc_bytes", Verdict.REGRESSED, 240, now.exact.resources["alloc_bytes"], "no increase"),
            MetricVerdict("code_bytes", Verdict.REGRESSED, 1700, now.exact.resources["code_bytes"], "+1%"),
        )
    )
    return regression_message(f"t.py::{TEST}", "baselines/t.json", now, base, comparison)


def test_a_changed_kernels_parts_read_as_one_before_after_line():
    """Both kernels of the baseline (keyed by identity) changed code and shapes: each part
    reads as one ``before -> after`` under this build's name, paired with its old self by
    the shapes they share (not by the keys' order, their code hashes), never as a part
    removed plus one added."""
    base = parse_baselines(stored(_with_parts(CHAIN, 16, {"matmul": 900, "matmul1": 800})), "b.json")[TEST]
    now = _with_parts(WIDER, 32, {"matmul": 950, "matmul1": 800})
    text = _resource_message(base, now)
    assert "by allocation site: output of matmul: 192 -> 384 B (+192)" in text, text
    assert "by kernel: matmul: 900 -> 950 B (+50)" in text, text
    parts = text.split("alloc_bytes 240 B")[1].split("kernels since")[0]
    assert "@" not in parts and "1 more" not in parts, text  # no baseline key: each part has its counterpart
    # a file keyed by TVM name (written before) reads alike
    by_name = parse_baselines(dump_baselines({TEST: _with_parts(CHAIN, 16, {"matmul": 900, "matmul1": 800})}), "b")
    assert "output of matmul: 192 -> 384 B (+192)" in _resource_message(by_name[TEST], now)


def test_a_removed_kernels_part_never_shows_under_a_name_this_build_gives_another():
    """A file keyed by TVM name whose ``matmul1`` is gone while this build's ``matmul1`` is
    another kernel (a new op): the removed part is told apart."""
    from pytest_tvmperf.result.kernel_match import match_kernels

    before = {"matmul": CHAIN["matmul"], "matmul1": CHAIN["matmul1"]}
    after = {"matmul": CHAIN["matmul"], "matmul1": KernelId("cc" * 8, "softmax", "nx16,nx16")}
    sites = match_kernels(before, after).baseline_sites({"output of matmul1": 48, "output of matmul": 192})
    assert sites == {"output of matmul1 [removed]": 48, "output of matmul": 192}


def test_kernels_of_one_op_that_changed_are_paired_by_the_shapes_they_share():
    from pytest_tvmperf.result.kernel_match import match_kernels

    keyed = {stable_key(k): k for k in CHAIN.values()}
    assert sorted(keyed) == ["matmul@0f0f0f0f0f", "matmul@f0f0f0f0f0"]  # fc1's first: name order would pair it with fc0
    match = match_kernels(keyed, WIDER)
    assert match.old_of == {"matmul": "matmul@f0f0f0f0f0", "matmul1": "matmul@0f0f0f0f0f"}
    # the same name first, whatever the shapes (a file keyed by TVM name)
    assert match_kernels(CHAIN, {"matmul1": WIDER["matmul"]}).old_of == {"matmul1": "matmul1"}


def on_gpu(rec: Record, grown: KernelId | None = None) -> Record:
    """``rec`` built for cuda: each kernel ``K`` launches one CUDA kernel, ``K_kernel``, whose
    registers tell the kernels apart (``grown``'s twice as many); the first also ``K_kernel_1``."""
    registers = {}
    for i, (name, ident) in enumerate(rec.kernels.items()):
        registers[f"{name}_kernel"] = (32 + int(ident.key[:2], 16)) * (2 if ident == grown else 1)
        if i == 0:
            registers[f"{name}_kernel_1"] = 16
    per_kernel = {"gpu_registers": registers, "gpu_spill_bytes": {k: 0 for k in registers}}
    return replace(rec, exact=replace(rec.exact, per_kernel=per_kernel))


def test_gpu_per_kernel_maps_are_keyed_by_their_kernels_identity_and_read_back():
    """The CUDA kernels ptxas names ``<kernel>_kernel`` (``_kernel_1``, ...) are keyed by the
    identity of the kernel that launches them, the suffix kept, and read back under this
    build's names."""
    from pytest_tvmperf.values.kernel_keys import in_build_names

    rec = on_gpu(network(LAYERS[:3]))
    keyed = keyed_by_identity(rec)
    first, second, third = (stable_key(k) for k in LAYERS[:3])
    assert keyed.exact.per_kernel["gpu_registers"] == {
        f"{first}_kernel": 32,
        f"{first}_kernel_1": 16,
        f"{second}_kernel": 33,
        f"{third}_kernel": 34,
    }
    assert keyed_by_identity(keyed) == keyed
    back = parse_baselines(stored(rec), "b.json")[TEST]
    assert back.exact.per_kernel == keyed.exact.per_kernel
    assert in_build_names(back.exact, rec.kernels) == rec.exact


def test_a_kernel_added_on_gpu_renumbers_no_gpu_line():
    """One layer added: TVM renumbers every kernel after it, and their CUDA kernels with them;
    keyed by identity, each GPU map gains the new kernel's line and no other line changes."""
    old, new = on_gpu(network(LAYERS)), on_gpu(network(ADDED))
    by_name = changed_lines(dump_baselines({TEST: old}), dump_baselines({TEST: new}))
    assert sum("_kernel" in line for line in by_name) >= 2 * 10, by_name  # 10 renumbered, 2 maps
    lines = [line for line in changed_lines(stored(old), stored(new)) if "_kernel" in line]
    bare = lambda line: line[1:].rstrip(",")  # noqa: E731
    # an unchanged kernel's line may change by a comma only (the new one follows it in a map)
    moved = [line for line in lines if not any(bare(o) == bare(line) and o[0] != line[0] for o in lines)]
    added = f"{stable_key(ADDED[2])}_kernel"
    assert sorted(line[0] + line.split(":")[0].strip(' +-"') for line in moved) == [f"+{added}"] * 2, lines


def _gpu_message(base: Record, now: Record) -> str:
    total = lambda r: sum(r.exact.per_kernel["gpu_registers"].values())  # noqa: E731
    comparison = Comparison((MetricVerdict("gpu_registers", Verdict.REGRESSED, total(base), total(now), "0"),))
    return regression_message(f"t.py::{TEST}", "baselines/t.json", now, base, comparison)


def _grew(text: str) -> str:
    return next(line for line in text.splitlines() if "kernels that grew" in line)


#: a layer added before the sixth conv (a residual add), the conv made 5x5, its registers
#: doubled: TVM renumbers it and every kernel after it
SKIP = KernelId("63" + "0" * 14, "add", "1x8x16x16,1x8x16x16,1x8x16x16", "body.skip (Add)")
CHANGED = LAYERS[:2] + [SKIP] + LAYERS[2:5] + [conv(5, 5)] + LAYERS[6:]


def test_kernels_that_grew_on_gpu_name_the_changed_kernel_once_with_its_layer():
    now = on_gpu(network(CHANGED), grown=conv(5, 5))
    for form, base in (
        ("identity", parse_baselines(stored(on_gpu(network(LAYERS))), "b.json")[TEST]),
        ("name", parse_baselines(dump_baselines({TEST: on_gpu(network(LAYERS))}), "b.json")[TEST]),
    ):
        grew = _grew(_gpu_message(base, now))
        assert grew.count("->") == 1, (form, grew)  # the renumbered kernels are compared with themselves
        assert "body.conv5 (Conv2d 5x5) [fused_conv2d6_add_relu_kernel] (changed): 37 -> 74 registers/thread" in grew
        assert "body.skip (Add) [fused_conv2d2_add_relu_kernel]: 131 registers/thread (new)" in grew


def test_a_file_keying_gpu_kernels_by_tvm_name_still_gates_by_name():
    """A baseline written before the CUDA kernels were keyed by identity (its kernels keyed so,
    its GPU maps by TVM name): they compare by name, as when it was written, and read back as
    they are."""
    from pytest_tvmperf.values.kernel_keys import in_build_names

    base_rec = on_gpu(network(LAYERS[:3]))
    keyed = keyed_by_identity(base_rec)
    mixed = replace(keyed, exact=replace(keyed.exact, per_kernel=base_rec.exact.per_kernel))
    base = parse_baselines(dump_baselines({TEST: mixed}), "b.json")[TEST]
    assert in_build_names(base.exact, base_rec.kernels).per_kernel == base_rec.exact.per_kernel
    now = on_gpu(network(LAYERS[:3]), grown=LAYERS[1])
    assert _grew(_gpu_message(base, now)).endswith(
        "kernels that grew: fused_conv2d1_add_relu_kernel: 33 -> 66 registers/thread (+100.0%)"
    )
