"""check_outputs: output count, shape, non-finite values and tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_tvmperf.builder.correctness import Mismatch, check_outputs

RTOL, ATOL = 1e-5, 1e-8


def test_identical_outputs_pass():
    a = [np.arange(6, dtype="float32").reshape(2, 3), np.ones(4)]
    assert check_outputs(a, [x.copy() for x in a], RTOL, ATOL) is None


def test_no_outputs_pass():
    assert check_outputs([], [], RTOL, ATOL) is None


def test_output_count():
    m = check_outputs([np.ones(2)], [np.ones(2), np.ones(2)], RTOL, ATOL)
    assert m == Mismatch(0, "produced 1 outputs, the reference 2")


def test_shape():
    m = check_outputs([np.ones(2), np.ones((2, 3))], [np.ones(2), np.ones((3, 2))], RTOL, ATOL)
    assert m.output == 1
    assert m.problem == "shape (2, 3), the reference has shape (3, 2)"


def test_shape_no_broadcasting():
    m = check_outputs([np.ones((1, 3))], [np.ones(3)], RTOL, ATOL)
    assert m is not None and "shape (1, 3)" in m.problem


def test_empty_arrays_pass():
    assert check_outputs([np.zeros((0, 3))], [np.zeros((0, 3))], RTOL, ATOL) is None


def test_nan_and_inf_reported_with_first_index():
    actual = np.zeros((2, 3))
    actual[0, 2] = np.nan
    actual[1, 0] = np.inf
    actual[1, 1] = np.nan
    m = check_outputs([actual], [np.zeros((2, 3))], RTOL, ATOL)
    assert m.output == 0
    assert m.problem == "2 NaN and 1 Inf of 6 values (first at (0, 2))"
    assert "non-finite" in m.detail


def test_inf_only():
    m = check_outputs([np.array([1.0, -np.inf])], [np.array([1.0, 2.0])], RTOL, ATOL)
    assert m.problem == "1 Inf of 2 values (first at (1,))"


def test_nan_in_scalar_output():
    m = check_outputs([np.float32(np.nan)], [np.float32(0)], RTOL, ATOL)
    assert m.problem == "1 NaN of 1 values (first at ())"


def test_nan_checked_before_tolerance_even_if_reference_is_nan():
    m = check_outputs([np.array([np.nan])], [np.array([np.nan])], RTOL, ATOL)
    assert m is not None and "NaN" in m.problem


def test_tolerance_mismatch_evidence():
    actual = np.array([[1.0, 2.0], [3.0, 4.5]])
    expected = np.array([[1.0, 2.0], [3.0, 4.0]])
    m = check_outputs([np.ones(1), actual], [np.ones(1), expected], RTOL, ATOL)
    assert m.output == 1
    assert m.problem == "1 of 4 values differ from the reference beyond rtol=1e-05, atol=1e-08"
    assert m.detail.splitlines() == [
        "  max abs error 0.5, max rel error 0.125",
        "  worst at (1, 1): got 4.5, expected 4",
        "  index            got              expected",
        "  (1, 1)           4.5              4",
    ]


def test_worst_is_largest_excess_not_first():
    actual = np.array([1.1, 2.0, 13.0, 4.2])
    expected = np.array([1.0, 2.0, 10.0, 4.0])
    m = check_outputs([actual], [expected], 0.0, 0.01)
    assert m.problem.startswith("3 of 4 values differ")
    assert "worst at (2,): got 13, expected 10" in m.detail
    assert "max abs error 3," in m.detail


def test_relative_error_with_zero_reference_is_finite_text():
    m = check_outputs([np.array([1e-3])], [np.array([0.0])], 0.0, 1e-6)
    assert m is not None
    assert "max abs error 0.001" in m.detail
    assert "nan" not in m.detail.lower()


def test_within_tolerance_passes():
    expected = np.array([100.0, 0.0])
    assert check_outputs([expected + [1e-3, 1e-9]], [expected], RTOL, ATOL) is None
    assert check_outputs([expected + [2e-3, 0.0]], [expected], RTOL, ATOL) is not None


def test_integer_and_bool_outputs():
    assert check_outputs([np.array([1, 2], dtype="int32")], [np.array([1, 2], dtype="int64")], 0, 0) is None
    m = check_outputs([np.array([1, 3], dtype="int32")], [np.array([1, 2], dtype="int32")], 0, 0)
    assert "got 3, expected 2" in m.detail
    assert check_outputs([np.array([True, False])], [np.array([True, False])], 0, 0) is None


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_reference_is_a_mismatch(bad):
    assert check_outputs([np.array([1.0, 2.0])], [np.array([1.0, bad])], RTOL, ATOL) is not None


def test_mismatch_message():
    assert Mismatch(2, "bad").message() == "output 2: bad"
    assert Mismatch(0, "bad", "why\nmore").message("of test_a") == "output 0 of test_a: bad\nwhy\nmore"


finite_arrays = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
    elements=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32),
)


@given(finite_arrays)
def test_identical_finite_arrays_pass(array):
    assert check_outputs([array], [array.copy()], 0.0, 0.0) is None


@given(finite_arrays, st.data())
def test_any_nan_is_a_mismatch(array, data):
    if array.size == 0:
        return
    index = data.draw(st.integers(0, array.size - 1))
    broken = array.copy()
    broken.flat[index] = np.nan
    m = check_outputs([broken], [array], 1.0, 1.0)
    assert m is not None
    assert "NaN" in m.problem


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@given(
    hnp.arrays(np.float64, st.integers(1, 8), elements=st.floats(-1e3, 1e3)),
    st.data(),
    st.floats(0, 0.1),
    st.floats(0, 1.0),
)
def test_agrees_with_numpy_allclose(expected, data, rtol, atol):
    actual = data.draw(hnp.arrays(np.float64, expected.shape, elements=st.floats(-1e3, 1e3)))
    assert (check_outputs([actual], [expected], rtol, atol) is None) == np.allclose(actual, expected, rtol, atol)
