"""The summary's ``most time:`` line: which kernels take most of a network's time (pure)."""

from __future__ import annotations

from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.text import SummaryRow, hot_kernels, hot_lines


def test_hot_kernels_ranks_the_largest_shares_of_all_callees():
    times = {"conv2d9": 0.25, "conv2d14": 0.5, "vm.builtin.alloc_tensor": 0.05, "max_pool2d": 0.2, "add": 0.0}
    assert hot_kernels(times) == "conv2d14 50%, conv2d9 25%, max_pool2d 20% (of 4 callees)"


def test_hot_kernels_is_silent_for_a_small_program_or_no_times():
    assert hot_kernels(None) == ""
    assert hot_kernels({"matmul": 1.0, "add": 0.5, "transpose": 0.1}) == ""  # 3 callees: not a network


def test_hot_lines_name_each_network_test_and_survive_the_xdist_hand_over():
    row = SummaryRow(
        test="test_dla34[llvm-vm-bytecode-default]",
        executor="vm-bytecode",
        target="llvm",
        median_s=0.01,
        baseline_s=None,
        instructions=256,
        baseline_instructions=None,
        verdict=Verdict("recorded"),
        hot="conv2d14 53%, conv2d9 26% (of 4 callees)",
    )
    plain = SummaryRow(
        test="test_mlp",
        executor="vm-bytecode",
        target="llvm",
        median_s=0.001,
        baseline_s=None,
        instructions=17,
        baseline_instructions=None,
        verdict=Verdict("recorded"),
    )
    assert hot_lines([row, plain]) == [
        "most time: test_dla34[llvm-vm-bytecode-default]: conv2d14 53%, conv2d9 26% (of 4 callees)"
    ]
    # over xdist a test's outcome travels as its results entry: the controller derives the row, hot kernels too
    from dataclasses import replace

    from _factories import record
    from pytest_tvmperf.result.entry import ResultEntry

    measured = replace(record(), kernel_time_s={"conv2d14": 0.53, "conv2d9": 0.26, "conv2d1": 0.11, "add": 0.1})
    entry = ResultEntry(
        "t.py::test_dla34[llvm-vm-bytecode-default]",
        Verdict("recorded"),
        test_id="test_dla34[llvm-vm-bytecode-default]",
        record=measured,
    )
    back = SummaryRow.of(ResultEntry.from_json(entry.to_json()))
    assert back.hot == hot_kernels(measured.kernel_time_s) == "conv2d14 53%, conv2d9 26%, conv2d1 11% (of 4 callees)"
