"""Per-kernel time changes: renamed kernels matched before being called new, sub-microsecond
noise dropped."""

from __future__ import annotations

from pytest_tvmperf.report.kernels import kernel_changes, renamed
from pytest_tvmperf.report.text import kernel_time_diff


def test_a_renamed_fused_kernel_is_matched_to_its_old_self():
    before = {"fused_conv2d_add": 0.100, "fused_relu": 0.002}
    after = {"fused_conv2d_add1": 0.106, "fused_relu": 0.002}
    assert renamed(before, after) == {"fused_conv2d_add1": "fused_conv2d_add"}
    assert kernel_time_diff(before, after) == "fused_conv2d_add1 (was fused_conv2d_add) +6 ms"


def test_numbering_moves_are_matched_by_time_when_several_share_a_stem():
    before = {"fused_matmul_add": 1e-3, "fused_matmul1_add1": 3e-3}
    after = {"fused_matmul2_add2": 1.1e-3, "fused_matmul3_add3": 3.3e-3}
    assert renamed(before, after) == {"fused_matmul2_add2": "fused_matmul_add", "fused_matmul3_add3": "fused_matmul1_add1"}


def test_a_really_new_kernel_stays_new():
    before = {"fused_matmul_add": 1e-3}
    after = {"fused_matmul_add": 1e-3, "transpose": 1.5e-3}
    assert kernel_time_diff(before, after) == "transpose +1.5 ms (new)"
    assert kernel_changes(before, after) == [(1.5e-3, "transpose", "", "new")]


def test_sub_microsecond_deltas_are_left_out():
    before = {"vm.builtin.match_shape": 1e-7, "fused_add": 1e-3}
    after = {"vm.builtin.match_shape": 1.02e-7, "fused_add": 1.0005e-3}
    assert kernel_time_diff(before, after) == ""
    assert kernel_time_diff({"a": 1e-3}, {"a": 1.002e-3}) == "a +2 us"


def test_unlike_names_are_not_paired():
    assert renamed({"fused_conv2d_add": 1.0}, {"transpose": 1.0}) == {}


def test_a_one_line_tvm_error_keeps_its_statement():
    from pytest_tvmperf.build.executors import shorten_tvm_error

    exc = ValueError("Invalid A.shape[0] on argument #0 when calling:\n  `main(A: Tensor([256], float32), "
                     "B: Tensor([256], float32))`,\n  expected 256")
    assert shorten_tvm_error(exc, 1) == ("ValueError: Invalid A.shape[0] on argument #0 when calling: "
                                         "`main(A: Tensor([256], float32), B: Tensor([256], float32))`, expected 256")
    traced = RuntimeError("Traceback (most recent call last):\n  File \"x.py\", line 1\n  0x7f: frame\n"
                          "InternalError: Check failed: args.size() == params_num (7 vs. 1)")
    assert shorten_tvm_error(traced, 1) == "RuntimeError: Check failed: args.size() == params_num (7 vs. 1)"
    assert len(shorten_tvm_error(ValueError("x" * 1000), 1)) < 260
