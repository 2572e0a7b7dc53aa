"""The resource metrics' pure parts (issue 48): their JSON and what a record from before
them reads as, thresholds and the switch, the comparison (n/a with the reason, held on
another setup), the failure's lines, the ELF reader and the allocation counter."""

from __future__ import annotations

import struct

import pytest

from pytest_tvmperf.builder.code_size import RUNTIME_PART, NotElf, by_kernel, elf_function_sizes
from pytest_tvmperf.builder.vm_alloc import UNUSED_SITE, AllocCounter
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit, parse_thresholds, thresholds_from_marker
from pytest_tvmperf.config.parsing import parse_resources
from pytest_tvmperf.judge.compare import compare_resources
from pytest_tvmperf.result.regression import resource_lines
from pytest_tvmperf.store.schema import SchemaProblem, check_exact
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.values.resources import parts_diff, predates_line

MEASURED = ExactMetrics(
    kernels=2,
    resources={"alloc_bytes": 240, "code_bytes": 1000},
    resource_parts={"alloc_bytes": {"output of matmul": 192, "output of matmul1": 48}},
    measured_with={"code_bytes": "tvm 0.27, llvm 22, target x"},
)


def _record(exact: ExactMetrics) -> Record:
    return Record("w", "vm-bytecode", {"kind": "llvm"}, "0.27", exact)


def test_json_round_trip_and_a_record_from_before():
    assert ExactMetrics.from_json(MEASURED.as_json()) == MEASURED
    na = ExactMetrics(not_measured={"alloc_bytes": "why"}, resources={"code_bytes": 5})
    assert na.as_json()["alloc_bytes"] is None and ExactMetrics.from_json(na.as_json()) == na
    old = ExactMetrics.from_json(ExactMetrics(kernels=2).as_json())  # no keys: recorded before they existed
    assert (
        old.predates == {"alloc_bytes", "code_bytes", "peak_bytes", "device_peak_bytes"}
        and MEASURED.without_resources() == old.without_resources()
    )
    check_exact(MEASURED.as_json())
    with pytest.raises(SchemaProblem, match="exact.alloc_bytes"):
        check_exact({**MEASURED.as_json(), "alloc_bytes": -1})


def test_thresholds_alias_defaults_and_the_switch():
    assert parse_thresholds("code=2%") == {"code_bytes": Limit(relative=0.02)}
    assert thresholds_from_marker({"code": "off"}) == {"code_bytes": Limit(enabled=False)}
    assert DEFAULT_THRESHOLDS["code_bytes"] == Limit(relative=0.01) and DEFAULT_THRESHOLDS["alloc_bytes"] == Limit()
    assert parse_resources("none") == () and parse_resources("code") == ("code_bytes",)
    assert parse_resources("all") == ("alloc_bytes", "code_bytes", "peak_bytes", "device_peak_bytes", "compile_s")
    with pytest.raises(ValueError, match="unknown resource metric 'peak'"):
        parse_resources("peak")
    assert parse_resources("memory") == ("peak_bytes",)


def test_compare_gates_grows_and_says_why_not():
    grown = ExactMetrics(
        resources={"alloc_bytes": 432, "code_bytes": 1005},
        resource_parts={"alloc_bytes": {"output of matmul": 384, "output of matmul1": 48}},
        measured_with=MEASURED.measured_with,
    )
    verdicts = {v.metric: v for v in compare_resources(_record(grown), _record(MEASURED), DEFAULT_THRESHOLDS)}
    assert (verdicts["alloc_bytes"].status, verdicts["code_bytes"].status) == ("regressed", "pass")  # 0.5% < 1%
    assert resource_lines(verdicts["alloc_bytes"], _record(grown), _record(MEASURED)) == [
        "  alloc_bytes 240 B -> 432 B (+192 B, limit no increase)",
        "    by allocation site: output of matmul: 192 -> 384 B (+192)",
    ]
    # n/a here, with the reason; predating baseline; code of another setup held, not failed
    na = ExactMetrics(
        not_measured={"alloc_bytes": "cannot read"},
        resources={"code_bytes": 9999},
        measured_with={"code_bytes": "tvm 0.28"},
    )
    old = ExactMetrics.from_json(ExactMetrics().as_json())
    v = {x.metric: x for x in compare_resources(_record(na), _record(MEASURED), DEFAULT_THRESHOLDS)}
    assert (v["alloc_bytes"].status, v["alloc_bytes"].note) == ("n/a", "cannot read")
    assert v["code_bytes"].status == "not gated" and "tvm 0.28" in v["code_bytes"].reason
    v = {x.metric: x for x in compare_resources(_record(grown), _record(old), DEFAULT_THRESHOLDS)}
    assert {x.status for x in v.values()} == {"n/a"} and v["code_bytes"].note == "the baseline predates it"


def test_a_build_that_does_not_run_keeps_the_baselines_run_time_counts():
    from dataclasses import replace

    from pytest_tvmperf.measure.plan import with_baseline_calls

    ran = replace(MEASURED, calls={"k": 1})  # recorded where it runs (a GPU machine)
    here = replace(MEASURED, resources={"code_bytes": 1000}, resource_parts={}, not_measured={"alloc_bytes": "not run"})
    assert with_baseline_calls(here, _record(ran)) == ran
    assert with_baseline_calls(replace(here, kernels=3), _record(ran)).kernels == 3


def test_lines():
    assert parts_diff({"a": 1, "b": 5}, {"a": 1, "b": 2, "c": 9}) == "c: 0 -> 9 B (+9); b: 5 -> 2 B (-3)"
    assert predates_line(["code_bytes", "alloc_bytes"]).startswith("the baseline predates alloc_bytes, code_bytes:")
    assert predates_line([]) == ""


def _elf64(symbols: list[tuple[str, int, int, int]]) -> bytes:
    """A little-endian ELF64 object: a null section, .strtab, .symtab of (name, type, shndx, size)."""
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n, *_ in symbols)
    offsets, pos = [], 1
    for name, *_ in symbols:
        offsets.append(pos)
        pos += len(name) + 1
    syms = b"\0" * 24 + b"".join(
        struct.pack("<IBBHQQ", off, kind, 0, shndx, 0, size) for off, (_, kind, shndx, size) in zip(offsets, symbols)
    )
    head = 64
    shoff = head + len(strtab) + len(syms)
    sections = (
        b"\0" * 64
        + struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, head, len(strtab), 0, 0, 1, 0)
        + struct.pack("<IIQQQQIIQQ", 0, 2, 0, 0, head + len(strtab), len(syms), 1, 0, 8, 24)
    )
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HH", header, 0x3A, 64, 3)
    return bytes(header) + strtab + syms + sections


def test_elf_function_sizes_and_kernels():
    data = _elf64(
        [
            ("__tvm_ffi_fused_add", 2, 1, 100),
            ("fused_add_compute_", 2, 1, 20),
            ("helper", 2, 1, 7),
            ("undefined", 2, 0, 50),
            ("a_variable", 1, 1, 8),
        ]
    )
    functions = elf_function_sizes(data)
    assert functions == {"__tvm_ffi_fused_add": 100, "fused_add_compute_": 20, "helper": 7}
    assert by_kernel(functions, ["fused_add", "fused"]) == {"fused_add": 120, RUNTIME_PART: 7}
    assert elf_function_sizes(data, 1) == {"a_variable": 8}  # data objects (a library's serialized CUDA module)
    for bad in (b"MZ" + bytes(100), data[:80]):
        with pytest.raises(NotElf):
            elf_function_sizes(bad)


class _Obj:
    """A runtime object as the instrument sees it: identity is ``same_as``."""

    def same_as(self, other):
        return other is self


def test_alloc_counter_sites():
    counter, s1, s2, t1 = AllocCounter(), _Obj(), _Obj(), _Obj()
    counter.observe("vm.builtin.alloc_storage", False, s1, ("vm", (12,), 0, "float32", "global"))
    counter.observe("vm.builtin.alloc_tensor", False, t1, (s1, 0, (3, 4), "float32"))
    counter.observe("vm.builtin.alloc_storage", False, s2, ("vm", (8,), 0, "uint8", "global"))
    counter.observe("fused_add", True, None, (object(), t1))
    counter.observe("fused_add", False, None, (object(), t1))
    assert counter.result().total == 48 + 8
    assert counter.result().sites == {"output of fused_add": 48, UNUSED_SITE: 8}
    broken = AllocCounter()  # a size of a form not known here: n/a with the reason, and the run goes on
    broken.observe("vm.builtin.alloc_storage", False, s1, ("vm", ("?",), 0, "float32", "global"))
    assert broken.result().startswith("vm.builtin.alloc_storage's arguments could not be read (ValueError")
