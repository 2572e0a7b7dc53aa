"""Kernels are matched with the baseline's by what they are, not by TVM's numbering
(issue 37 item 1): the failure message, the simulated-cost lines, the HTML bars, `tvmperf
diff` and the bytecode diff name the kernel that changed, and no unchanged one."""

from __future__ import annotations

import json
from dataclasses import replace

from _factories import exact, record

from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.values.kernel_id import KernelId, op_of
from pytest_tvmperf.result.kernel_match import BY_NAME_NOTE, KernelStatus, match_kernels
from pytest_tvmperf.result.entry import kernel_rows
from pytest_tvmperf.result.regression import regression_message
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.store.schema import check_record
from pytest_tvmperf.values.json_fields import SchemaProblem

# the network: a stem conv, then two identical 3x3 convs sharing one kernel; one
# of them is made 5x5. TVM numbers the new 5x5 kernel conv2d1 and renames the 3x3 conv2d2.
STEM = KernelId("a" * 16, "conv2d_add_relu", "1x3x16x16,8x3x3x3,1x8x1x1,1x8x16x16")
K3 = KernelId("b" * 16, "conv2d_add_relu", "1x8x16x16,8x8x3x3,1x8x1x1,1x8x16x16")
K5 = KernelId("c" * 16, "conv2d_add_relu", "1x8x16x16,8x8x5x5,1x8x1x1,1x8x16x16")
BEFORE = {"fused_conv2d_add_relu": STEM, "fused_conv2d1_add_relu": K3}
AFTER = {"fused_conv2d_add_relu": STEM, "fused_conv2d1_add_relu": K5, "fused_conv2d2_add_relu": K3}
# the 3x3 kernel was called twice (2 x 4 ms), now once; the 5x5 takes 11 ms
TIMES_BEFORE = {"fused_conv2d_add_relu": 2e-3, "fused_conv2d1_add_relu": 8e-3, "vm.builtin.alloc_tensor": 1e-5}
TIMES_AFTER = {
    "fused_conv2d_add_relu": 2e-3,
    "fused_conv2d1_add_relu": 11e-3,
    "fused_conv2d2_add_relu": 4e-3,
    "vm.builtin.alloc_tensor": 1e-5,
}
LISTING_BEFORE = {
    "main": "call fused_conv2d_add_relu in: %0 dst: %1\ncall fused_conv2d1_add_relu in: %1 dst: %2\n"
    "call fused_conv2d1_add_relu in: %2 dst: %3\nret %3"
}
LISTING_AFTER = {
    "main": "call fused_conv2d_add_relu in: %0 dst: %1\ncall fused_conv2d1_add_relu in: %1 dst: %2\n"
    "call fused_conv2d2_add_relu in: %2 dst: %3\nret %3"
}
SIM_BEFORE = {"fused_conv2d_add_relu": 1_000_000, "fused_conv2d1_add_relu": 6_580_000}
SIM_AFTER = {
    "fused_conv2d_add_relu": 1_000_000,
    "fused_conv2d1_add_relu": 9_100_000,
    "fused_conv2d2_add_relu": 3_290_000,
}


def records(with_ids: bool = True) -> tuple[Record, Record]:
    base = replace(
        record(metrics=replace(exact(kernels=2), per_kernel={"cpu_instructions": SIM_BEFORE})),
        kernel_time_s=TIMES_BEFORE,
        bytecode=LISTING_BEFORE,
        kernels=BEFORE if with_ids else None,
    )
    now = replace(
        record(metrics=replace(exact(kernels=3), per_kernel={"cpu_instructions": SIM_AFTER})),
        kernel_time_s=TIMES_AFTER,
        bytecode=LISTING_AFTER,
        kernels=AFTER,
    )
    return base, now


def message(base: Record, now: Record) -> str:
    comparison = Comparison(
        (
            MetricVerdict("kernels", Verdict.REGRESSED, 2, 3, "0"),
            MetricVerdict("cpu_instructions", Verdict.REGRESSED, 7_580_000, 13_390_000, "1%"),
        )
    )
    return regression_message("t.py::test_net", "baselines/t.json", now, base, comparison)


def test_op_of_drops_the_numbering():
    assert op_of("fused_conv2d19_add8_relu8") == "conv2d_add_relu"
    assert op_of("transpose") == "transpose"


def test_a_renumbered_kernel_is_matched_by_structure():
    match = match_kernels(BEFORE, AFTER)
    assert match.old_of == {
        "fused_conv2d_add_relu": "fused_conv2d_add_relu",
        "fused_conv2d2_add_relu": "fused_conv2d1_add_relu",
    }
    assert match.status["fused_conv2d1_add_relu"] == KernelStatus.NEW
    assert match.removed == ()


def test_a_kernel_that_changed_shape_is_paired_with_its_old_self():
    """A 3x3 kernel of its own made 5x5: changed (same op), not one removed and one added."""
    match = match_kernels({"fused_conv2d1_add_relu": K3}, {"fused_conv2d1_add_relu": K5})
    assert match.status == {"fused_conv2d1_add_relu": KernelStatus.CHANGED}
    recoded = replace(K3, key="d" * 16)  # same op and shapes, other code (a schedule)
    match = match_kernels({"k": K3, "fused_add": KernelId("e" * 16, "add", "4,4,4")}, {"k1": recoded})
    assert match.old_of == {"k1": "k"} and match.status == {"k1": KernelStatus.CHANGED}
    assert match.removed == ("fused_add",)


def test_the_failure_names_the_changed_layers_kernel_and_no_unchanged_one():
    text = message(*records())
    slower = next(line for line in text.splitlines() if "kernels that take longer" in line)
    assert "8x8x5x5" in slower and "(new)" in slower, slower
    assert "8x8x3x3" not in slower and "3x3x3" not in slower, slower  # the shared 3x3 kernel: faster, not listed
    changes = next(line for line in text.splitlines() if "kernels since the baseline" in line)
    assert "new: conv2d_add_relu(1x8x16x16, 8x8x5x5, ...) -> 1x8x16x16 [fused_conv2d1_add_relu]" in changes
    assert "3x3" not in changes and "removed" not in changes, changes
    grew = next(line for line in text.splitlines() if "kernels that grew" in line)
    assert "8x8x5x5" in grew and "3x3" not in grew, grew  # the simulated-cost line
    diff = text.split("VM bytecode, baseline -> now:")[1]
    assert "under its baseline counterpart's name" in diff
    # the 3x3 call is the baseline's kernel under its baseline name: only the 5x5 call differs
    # the new 5x5 kernel under its identity key, never under the baseline 3x3 kernel's TVM name (issue 47)
    assert "+call conv2d_add_relu@cccccccccc [new] in: %1" in diff and "fused_conv2d2" not in diff, diff
    assert "fused_conv2d1_add_relu [new]" not in diff, diff
    assert "-call fused_conv2d1_add_relu in: %2" not in diff, diff


def test_a_kernel_whose_code_changed_says_so():
    from pytest_tvmperf.result.regression import kernel_set_line

    recoded = replace(K3, key="d" * 16)
    line = kernel_set_line(match_kernels({"k": K3}, {"k": recoded}))
    assert line == "changed: conv2d_add_relu(1x8x16x16, 8x8x3x3, ...) -> 1x8x16x16 [k] (its code changed)"
    line = kernel_set_line(match_kernels({"k": K3}, {"k1": K5}))
    assert line.endswith("[k1] (was conv2d_add_relu(1x8x16x16, 8x8x3x3, ...) -> 1x8x16x16 [k])"), line


def test_by_name_the_same_records_blame_the_wrong_kernel():
    """What a baseline without identities gets (and what every baseline got before):
    matched by name, with a note saying so."""
    text = message(*records(with_ids=False))
    assert BY_NAME_NOTE in text
    assert "kernels since the baseline" not in text


def test_kernel_rows_compare_each_kernel_with_its_counterpart():
    base, now = records()
    rows = {r.name: r for r in kernel_rows(now, base)}
    five = next(r for name, r in rows.items() if "8x8x5x5" in name)
    three = next(r for name, r in rows.items() if "8x8x3x3" in name)
    assert five.baseline_time_s is None and "(new)" in next(n for n in rows if "8x8x5x5" in n)
    assert (three.time_s, three.baseline_time_s) == (4e-3, 8e-3)
    assert rows["vm.builtin.alloc_tensor"].baseline_time_s == 1e-5


def test_identities_round_trip_and_old_baselines_still_load():
    base, now = records()
    data = json.loads(json.dumps(now.as_json()))
    check_record(data)
    assert Record.from_json(data).kernels == AFTER
    old = base.as_json()
    old.pop("kernels")
    check_record(old)
    assert Record.from_json(old).kernels is None
    data["kernels"]["fused_conv2d_add_relu"].pop("key")
    try:
        check_record(data)
    except SchemaProblem as exc:
        assert exc.field == "kernels.fused_conv2d_add_relu.key"
    else:
        raise AssertionError("a kernel identity without its key was accepted")


def test_tvmperf_diff_names_the_changed_kernel(tmp_path, capsys):
    """`tvmperf diff` prints the gate's message: the same matching by structure."""
    from pytest_tvmperf.command import cli
    from pytest_tvmperf.store.files import dump_baselines

    base, now = records()
    test = "test_net[llvm-vm-bytecode]"
    old = tmp_path / "old.json"
    new = tmp_path / "new.json"
    old.write_text(dump_baselines({test: base}), encoding="utf-8")
    new.write_text(dump_baselines({test: now}), encoding="utf-8")
    assert cli.main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "new: conv2d_add_relu(1x8x16x16, 8x8x5x5, ...) -> 1x8x16x16 [fused_conv2d1_add_relu]" in out, out
    slower = next(line for line in out.splitlines() if "kernels that take longer" in line)
    assert "3x3" not in slower, slower


def test_one_added_kernel_call_reads_as_its_few_lines_not_every_renumbered_one():
    """Seen: one conv added to MobileNetV3 gave '... 532 more diff lines', every register %N and
    constant c[N] after it shifted. Aligned with the numbers left out, it is its own lines."""
    from pytest_tvmperf.result.regression import bytecode_diff

    def block(i: int, reg: int, const: int) -> list[str]:
        return [
            f"call vm.builtin.alloc_storage in: %vm, c[{const}], i0, c[{const + 1}] dst: %{reg}",
            f"call vm.builtin.alloc_tensor in: %{reg}, i0, c[{const + 2}], c[0] dst: %{reg + 1}",
            f"call conv2d{i} in: %{reg - 1}, %1, %{reg + 1} dst: %void",
        ]

    before = [line for i in range(40) for line in block(i, 2 + 2 * i, 3 + 3 * i)] + ["ret %81"]
    after = [line for i in range(20) for line in block(i, 2 + 2 * i, 3 + 3 * i)]
    after += block(99, 42, 63)  # the added layer: every later register and constant shifts
    after += [line for i in range(20, 40) for line in block(i, 4 + 2 * i, 6 + 3 * i)] + ["ret %83"]
    diff = bytecode_diff({"main": "\n".join(before)}, {"main": "\n".join(after)})
    changed = [x for x in diff if x[:1] in "+-" and not x.startswith(("---", "+++"))]
    assert len(changed) <= 10, diff
    assert any("conv2d99" in x for x in changed) and not any(x.startswith("-") for x in changed)
    assert bytecode_diff({"main": "\n".join(before)}, {"main": "\n".join(before)}) == []
