"""parse_bytecode of VMExecutable.as_text() and ExactMetrics."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tvmperf.builder.vm_metrics import Bytecode, parse_bytecode
from pytest_tvmperf.values.exact_metrics import ExactMetrics

# A real `as_text()` of a 3-layer MLP (vm-bytecode executor).
MLP_TEXT = """\
@forward:
  call  vm.builtin.check_tensor_info in: %0, i2, c[0], c[1] dst: %void
  call  vm.builtin.match_shape in: %0, %void, i2, i0, i1, i0, i1024, c[1] dst: %void
  call  vm.builtin.alloc_storage in: %vm, c[2], i0, c[3], c[4] dst: %1
  call  vm.builtin.alloc_tensor in: %1, i0, c[5], c[0] dst: %2
  call  vm.builtin.null_value in:              dst: %1
  call  fused_matmul_add in: %0, c[6], c[7], %2 dst: %void
  call  vm.builtin.alloc_storage in: %vm, c[8], i0, c[3], c[4] dst: %3
  call  vm.builtin.alloc_tensor in: %3, i0, c[9], c[0] dst: %4
  call  vm.builtin.null_value in:              dst: %3
  call  fused_matmul1_add1 in: %2, c[10], c[11], %4 dst: %void
  call  vm.builtin.null_value in:              dst: %2
  call  vm.builtin.alloc_storage in: %vm, c[12], i0, c[3], c[4] dst: %5
  call  vm.builtin.alloc_tensor in: %5, i0, c[13], c[0] dst: %6
  call  vm.builtin.null_value in:              dst: %5
  call  fused_matmul2_add2 in: %4, c[14], c[15], %6 dst: %void
  call  vm.builtin.null_value in:              dst: %4
  ret   %6

@vm.builtin.check_tensor_info packed_func;

@fused_matmul_add packed_func;
"""

# Two functions with control flow, synthesised in the same format.
BRANCH_TEXT = """\
@main:
  call  vm.builtin.check_tensor_info in: %0, i1, c[0], c[1] dst: %void
  call  vm.builtin.read_if_cond in: %0           dst: %1
  If    %1, 3
  call  helper in: %0              dst: %2
  goto  2
  call  vm.builtin.copy in: %0              dst: %2
  ret   %2

@vm.builtin.read_if_cond packed_func;

@helper:
  call  fused_relu in: %0, %1 dst: %void
  goto  1
  ret   %1

@fused_relu packed_func;
"""


# --------------------------------------------------------------------------- parse_bytecode


def test_mlp_counts():
    code = parse_bytecode(MLP_TEXT)
    assert list(code.functions) == ["forward"]  # `packed_func;` lines are externals, not functions
    assert code.counts() == {"forward": 17}


def test_mlp_by_callee():
    assert parse_bytecode(MLP_TEXT).by_callee() == {
        "vm.builtin.check_tensor_info": 1,
        "vm.builtin.match_shape": 1,
        "vm.builtin.alloc_storage": 3,
        "vm.builtin.alloc_tensor": 3,
        "vm.builtin.null_value": 5,
        "fused_matmul_add": 1,
        "fused_matmul1_add1": 1,
        "fused_matmul2_add2": 1,
        "ret": 1,
    }


def test_mlp_instruction_order():
    ops = parse_bytecode(MLP_TEXT).functions["forward"]
    assert ops[:3] == ("vm.builtin.check_tensor_info", "vm.builtin.match_shape", "vm.builtin.alloc_storage")
    assert ops[5] == "fused_matmul_add"
    assert ops[-1] == "ret"


def test_two_functions_with_goto_and_if():
    code = parse_bytecode(BRANCH_TEXT)
    assert code.functions == {
        "main": (
            "vm.builtin.check_tensor_info",
            "vm.builtin.read_if_cond",
            "If",
            "helper",
            "goto",
            "vm.builtin.copy",
            "ret",
        ),
        "helper": ("fused_relu", "goto", "ret"),
    }
    assert code.counts() == {"main": 7, "helper": 3}
    by_callee = code.by_callee()
    assert by_callee["goto"] == 2
    assert by_callee["If"] == 1
    assert by_callee["ret"] == 2
    assert sum(by_callee.values()) == 10


def test_blank_lines_inside_a_function_keep_it_open():
    code = parse_bytecode("@f:\n  call  a in: dst: %1\n\n  ret   %1\n")
    assert code.functions == {"f": ("a", "ret")}


def test_instructions_outside_functions_are_ignored():
    text = "  call  stray in: dst: %0\n@ext packed_func;\n  ret   %0\n@f:\n  ret   %0\n"
    assert parse_bytecode(text).functions == {"f": ("ret",)}


def test_external_declaration_closes_the_function():
    text = "@f:\n  ret   %0\n@ext packed_func;\n  call  x in: dst: %1\n"
    assert parse_bytecode(text).functions == {"f": ("ret",)}


def test_non_instruction_lines_are_not_counted():
    text = "@f:\n  # comment\n  callx  y\n  Iffy\n  call\n  ret   %0\n"
    code = parse_bytecode(text)
    assert code.functions == {"f": ("call", "ret")}  # a bare `call` counts under its opcode


def test_empty_function_and_empty_text():
    assert parse_bytecode("").functions == {}
    assert parse_bytecode("@f:\n\n@g packed_func;\n").counts() == {"f": 0}


def test_crlf_line_endings():
    assert parse_bytecode(MLP_TEXT.replace("\n", "\r\n")).counts() == {"forward": 17}


func_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.0123456789", min_size=1, max_size=12)
instructions = st.one_of(
    func_names.map(lambda callee: ("call", callee)),
    st.sampled_from([("ret", "ret"), ("goto", "goto"), ("If", "If")]),
)


@given(st.dictionaries(func_names, st.lists(instructions, max_size=10), max_size=4), st.lists(func_names, max_size=3))
def test_parse_synthesised_text(functions, externals):
    blocks = []
    for name, body in functions.items():
        lines = [f"@{name}:"]
        for op, callee in body:
            lines.append(f"  call  {callee} in: %0, c[1] dst: %2" if op == "call" else f"  {op}    %1, 2")
        blocks.append("\n".join(lines))
    blocks += [f"@{name} packed_func;" for name in externals]
    code = parse_bytecode("\n\n".join(blocks) + "\n")
    assert code.functions == {name: tuple(callee for _, callee in body) for name, body in functions.items()}
    assert sum(code.counts().values()) == sum(len(b) for b in functions.values())


def test_bytecode_counts_and_by_callee():
    code = Bytecode({"a": ("x", "ret"), "b": ("x", "x")})
    assert code.counts() == {"a": 2, "b": 2}
    assert code.by_callee() == {"x": 3, "ret": 1}
    assert Bytecode().counts() == {}


# --------------------------------------------------------------------------- ExactMetrics


FULL = ExactMetrics(
    instructions={"forward": 17, "helper": 3},
    by_callee={"ret": 2, "vm.builtin.alloc_tensor": 18},
    calls={"fused_add": 4, "vm.builtin.alloc_tensor": 6},
    kernels=3,
    storage_bytes=4096,
)


@pytest.mark.parametrize(
    ("metric", "value"),
    [("instructions", 20), ("calls", 10), ("kernels", 3), ("storage_bytes", 4096)],
)
def test_scalar(metric, value):
    assert FULL.scalar(metric) == value


@pytest.mark.parametrize("metric", ["instructions", "calls", "kernels", "storage_bytes"])
def test_scalar_none_is_na(metric):
    assert ExactMetrics().scalar(metric) is None


def test_scalar_empty_map_is_zero():
    assert ExactMetrics(instructions={}, calls={}).scalar("instructions") == 0
    assert ExactMetrics(instructions={}, calls={}).scalar("calls") == 0


@pytest.mark.parametrize("metric", ["time", "by_callee", "nope"])
def test_scalar_unknown_metric(metric):
    with pytest.raises(KeyError):
        FULL.scalar(metric)


def test_as_json_sorted_plain_ints():
    data = ExactMetrics(instructions={"b": 2.0, "a": 1}, kernels=2).as_json()
    assert data == {
        "instructions": {"a": 1, "b": 2},
        "by_callee": None,
        "calls": None,
        "kernels": 2,
        "storage_bytes": None,
    }
    assert list(data["instructions"]) == ["a", "b"]
    assert all(type(v) is int for v in data["instructions"].values())


def test_json_round_trip():
    assert ExactMetrics.from_json(json.loads(json.dumps(FULL.as_json()))) == FULL
    assert ExactMetrics.from_json(ExactMetrics().as_json()) == ExactMetrics()


def test_from_json_missing_keys_are_none():
    assert ExactMetrics.from_json({"kernels": 1}) == ExactMetrics(kernels=1)


maps = st.none() | st.dictionaries(func_names, st.integers(0, 10**12), max_size=5)


@given(
    st.builds(
        ExactMetrics,
        instructions=maps,
        by_callee=maps,
        calls=maps,
        kernels=st.none() | st.integers(0, 10**6),
        storage_bytes=st.none() | st.integers(0, 2**48),
    )
)
def test_json_round_trip_property(metrics):
    restored = ExactMetrics.from_json(json.loads(json.dumps(metrics.as_json())))
    assert restored == metrics
    for metric in ("instructions", "calls", "kernels", "storage_bytes"):
        assert restored.scalar(metric) == metrics.scalar(metric)
