"""Per-kernel time changes: renamed kernels matched before being called new, sub-microsecond
noise dropped."""

from __future__ import annotations

from pytest_tvmperf.result.kernel_names import renamed
from pytest_tvmperf.result.kernels import kernel_changes
from pytest_tvmperf.result.regression import kernel_time_diff


def test_a_renamed_fused_kernel_is_matched_to_its_old_self():
    before = {"fused_conv2d_add": 0.100, "fused_relu": 0.002}
    after = {"fused_conv2d_add1": 0.106, "fused_relu": 0.002}
    assert renamed(before, after) == {"fused_conv2d_add1": "fused_conv2d_add"}
    assert kernel_time_diff(before, after) == "fused_conv2d_add1 (was fused_conv2d_add) +6 ms"


def test_numbering_moves_are_matched_by_time_when_several_share_a_stem():
    before = {"fused_matmul_add": 1e-3, "fused_matmul1_add1": 3e-3}
    after = {"fused_matmul2_add2": 1.1e-3, "fused_matmul3_add3": 3.3e-3}
    assert renamed(before, after) == {
        "fused_matmul2_add2": "fused_matmul_add",
        "fused_matmul3_add3": "fused_matmul1_add1",
    }


def test_a_really_new_kernel_stays_new():
    before = {"fused_matmul_add": 1e-3}
    after = {"fused_matmul_add": 1e-3, "transpose": 1.5e-3}
    assert kernel_time_diff(before, after) == "transpose +1.5 ms (new)"
    assert kernel_changes(before, after) == [(1.5e-3, "transpose", "", "new")]


def test_sub_microsecond_deltas_are_left_out():
    before = {"vm.builtin.match_shape": 1e-7, "fused_add": 1e-3}
    after = {"vm.builtin.match_shape": 1.02e-7, "fused_add": 1.0005e-3}
    assert kernel_time_diff(before, after) == ""
    assert kernel_time_diff({"a": 1e-3}, {"a": 1.2e-3}) == "a +200 us"


def test_noise_is_never_listed_as_a_slower_kernel():
    """Issue 37: on unchanged code the inconclusive warning listed +18.6 ms of noise under
    "kernels that take longer". A kernel is listed when it grew by more than the time
    threshold of its own time and by more than 1% of the whole baseline."""
    before = {"conv2d19": 0.400, "conv2d20": 0.250, "fused_add": 0.001, **{f"k{i}": 0.5 for i in range(11)}}
    noise = {**before, "conv2d19": 0.4186, "fused_add": 0.0012}  # +4.7% of a kernel; +20 us of a tiny one
    assert kernel_time_diff(before, noise) == ""
    culprit = {**noise, "conv2d20": 0.686}  # +436 ms: beyond the band and 1% of 6.15 s
    assert kernel_time_diff(before, culprit) == "conv2d20 +436 ms"
    grown = {**before, "conv2d19": 0.47}  # +17.5% of its time, +1.1% of the whole
    assert kernel_time_diff(before, grown, band=0.20) == ""  # within a 20% threshold
    assert kernel_time_diff(before, grown, band=0.05) == "conv2d19 +70 ms"
    assert kernel_time_diff(before, {**before, "conv2d19": 0.43}) == ""  # +7.5%, but +0.5% of the whole
    assert kernel_time_diff(before, {**before, "transpose": 1e-5}) == "transpose +10 us (new)"  # new: always named


def test_unlike_names_are_not_paired():
    assert renamed({"fused_conv2d_add": 1.0}, {"transpose": 1.0}) == {}


def test_a_one_line_tvm_error_keeps_its_statement():
    from pytest_tvmperf.builder.executors import shorten_tvm_error

    exc = ValueError(
        "Invalid A.shape[0] on argument #0 when calling:\n  `main(A: Tensor([256], float32), "
        "B: Tensor([256], float32))`,\n  expected 256"
    )
    assert shorten_tvm_error(exc, 1) == (
        "ValueError: Invalid A.shape[0] on argument #0 when calling: "
        "`main(A: Tensor([256], float32), B: Tensor([256], float32))`, expected 256"
    )
    traced = RuntimeError(
        'Traceback (most recent call last):\n  File "x.py", line 1\n  0x7f: frame\n'
        "InternalError: Check failed: args.size() == params_num (7 vs. 1)"
    )
    assert shorten_tvm_error(traced, 1) == "RuntimeError: Check failed: args.size() == params_num (7 vs. 1)"
    assert len(shorten_tvm_error(ValueError("x" * 1000), 1)) < 260
