"""builder/own_inputs.py: the baseline entry's signature to the inputs it is timed on when
today's inputs changed shape (issue 43), and the mode that says so."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_tvmperf.builder.own_inputs import (
    OwnInputs,
    TensorSpec,
    own_arrays,
    params_from_json,
    plan_own_inputs,
)
from pytest_tvmperf.builder.signature import Param
from pytest_tvmperf.judge.compare import AB_REBUILT, ab_rebuilt_mode

MIB = 2**20


def test_a_primfuncs_static_buffers_become_its_inputs_and_outputs_with_what_changed():
    params = [Param("A", (16384,), "float32"), Param("I", (4,), "int64"), Param("B", (16384,), "float32")]
    plan, why = plan_own_inputs(
        params, "prim", [((20480,), "float32"), ((4,), "int64")], [((20480,), "float32")], 64 * MIB
    )
    assert why == ""
    assert plan == OwnInputs(
        (TensorSpec("A", (16384,), "float32"), TensorSpec("I", (4,), "int64")),
        (TensorSpec("B", (16384,), "float32"),),
        "shapes changed: A 16384 -> 20480, B 16384 -> 20480",
    )
    assert plan.out_specs() == [((16384,), "float32")]
    assert ab_rebuilt_mode(plan.changed) == (
        "a/b, baseline on its own inputs (shapes changed: A 16384 -> 20480, B 16384 -> 20480)"
    )
    assert ab_rebuilt_mode("") == AB_REBUILT


def test_a_relax_entry_takes_every_parameter_as_an_argument_and_a_dtype_change_is_named():
    params = [Param("x", (1, 3, 8, 8), "float32"), Param("w", (4, 3, 3, 3), "float32")]
    outputs = [((1, 4, 6, 6), "float32")]  # what the reference returns: a Relax function returns it, takes no buffer
    plan, _ = plan_own_inputs(
        params, "relax", [((1, 3, 8, 8), "float16"), ((4, 3, 3, 3), "float32")], outputs, 64 * MIB
    )
    assert plan is not None and plan.outputs == () and len(plan.args) == 2
    assert plan.changed == "inputs changed: x 1x3x8x8 float32 -> 1x3x8x8 float16"
    plan, _ = plan_own_inputs(
        params, "relax", [((2, 3, 8, 8), "float32"), ((4, 3, 3, 3), "float32")], outputs, 64 * MIB
    )
    assert plan is not None and plan.changed == "shapes changed: x 1x3x8x8 -> 2x3x8x8"


@pytest.mark.parametrize(
    ("param", "reason"),
    [
        (Param("A", (None, 4), "float32"), "its parameter A (argument 0) has a dynamic shape (?x4)"),
        (Param("t"), "its parameter t (argument 0) is not a tensor"),
        (Param("x", None, "float32"), "its parameter x (argument 0) has no static shape"),
        (Param("q", (4,), "bfloat16"), "its parameter q (argument 0) has dtype bfloat16, not one inputs are made in"),
    ],
)
def test_no_inputs_are_made_for_a_parameter_without_a_static_tensor_shape(param, reason):
    plan, why = plan_own_inputs([param, Param("B", (4,), "float32")], "prim", [((8,), "float32")], [], 64 * MIB)
    assert plan is None
    assert why.startswith(reason)


def test_inputs_larger_than_a_stored_program_may_hold_are_not_made():
    plan, why = plan_own_inputs([Param("A", (1 << 30,), "float32")], "relax", [((4,), "float32")], [], 64 * MIB)
    assert plan is None and "4096.0 MiB, more than the 64 MiB" in why


def test_weights_taken_at_run_time_today_are_a_change_of_the_inputs_count():
    plan, _ = plan_own_inputs(
        [Param("x", (1, 8), "float32")],
        "relax",
        [((1, 8), "float32"), ((8, 8), "float32")],
        [((1, 8), "float32")],
        64 * MIB,
    )
    assert plan is not None and plan.changed == "inputs changed: 1 argument(s) -> 2"


def test_the_same_signature_as_todays_makes_no_inputs_of_its_own():
    plan, why = plan_own_inputs([Param("A", (4,), "float32")], "relax", [((4,), "float32")], [], 64 * MIB)
    assert plan is None and why == "its entry takes the shapes and dtypes of today's inputs"


def test_the_inputs_are_finite_seeded_floats_and_zero_integers():
    arrays = own_arrays([TensorSpec("A", (64,), "float32"), TensorSpec("I", (3,), "int64")])
    assert arrays[0].dtype == np.float32 and np.all(np.isfinite(arrays[0])) and np.all(np.abs(arrays[0]) >= 0.5)
    assert arrays[1].dtype == np.int64 and not arrays[1].any()
    again = own_arrays([TensorSpec("A", (64,), "float32")])
    assert np.array_equal(arrays[0], again[0])  # seeded: the same values every run


@pytest.mark.parametrize(
    "reply",
    [
        "params",
        [{"name": "A", "shape": [-1], "dtype": "float32"}],
        [{"name": "A\n", "shape": [4], "dtype": "float32"}],
        [{"name": "A", "shape": [True], "dtype": "float32"}],
        [{"name": "A", "shape": [4], "dtype": 3}],
    ],
)
def test_the_childs_reply_is_checked_before_it_is_used(reply):
    with pytest.raises(ValueError):
        params_from_json(reply)


def test_a_checked_reply_reads_back_as_parameters():
    assert params_from_json([{"name": "A", "shape": [None, 4], "dtype": "float32"}, {"name": "t"}]) == [
        Param("A", (None, 4), "float32"),
        Param("t"),
    ]
