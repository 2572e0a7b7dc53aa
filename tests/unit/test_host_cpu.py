"""Which CPU the kernels are built for (builder/host_cpu.py): the CPU model LLVM names less
what the OS does not enable, tested with the /proc/cpuinfo flags of real machines
(tests/unit/cpuinfo/*.flags) and LLVM's own feature lists of their models."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tvmperf.builder import host_cpu
from pytest_tvmperf.builder.host_cpu import HostView, generic_level, resolve_host_cpu

CPUINFO = Path(__file__).parent / "cpuinfo"
AVX512 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


def flags(machine: str) -> frozenset[str]:
    return frozenset((CPUINFO / f"{machine}.flags").read_text().split())


def kernel(machine: str) -> HostView:
    return HostView(kernel_flags=flags(machine))


def features(model: str) -> frozenset[str]:
    got = host_cpu.model_features(model)
    assert got, f"LLVM knows {model}"
    return got


def runs_on(cpu: host_cpu.HostCpu, host: HostView) -> bool:
    """Does every feature the resolved target lets LLVM use run on ``host``?"""
    used = host_cpu.target_features({"kind": "llvm", **cpu.fields()})
    assert used is not None
    return not host.missing(used)


# --- real machines -------------------------------------------------------------------------


def test_zen4_vm_without_avx512_keeps_znver4_and_switches_avx512_off():
    """GitHub's hosted runners: an EPYC 9V74 whose hypervisor hides AVX-512."""
    host = kernel("zen4_vm_no_avx512")
    cpu = resolve_host_cpu("znver4", features("znver4"), host)
    assert cpu.mcpu == "znver4"
    assert {"avx512f", "avx512bw", "avx512vl", "avx512bf16", "avx512vnni", "gfni"} <= set(cpu.disabled)
    assert "-avx512f" in cpu.fields()["mattr"]
    used = host_cpu.target_features({"kind": "llvm", **cpu.fields()})
    assert not any(f.startswith("avx512") for f in used)
    assert {"avx2", "fma", "bmi2", "vaes"} <= used  # what the VM does enable is kept
    assert runs_on(cpu, host)
    assert "avx512f" in cpu.why and "/proc/cpuinfo" in cpu.why


def test_zen4_with_avx512_enabled_is_built_for_all_of_it():
    host = kernel("zen4_epyc_genoa")
    cpu = resolve_host_cpu("znver4", features("znver4"), host)
    assert cpu.mcpu == "znver4"
    assert not any(f.startswith("avx512") for f in cpu.disabled)
    assert runs_on(cpu, host)


@pytest.mark.parametrize(
    "machine, model", [("icelake_xeon_8370c", "icelake-server"), ("sapphirerapids_xeon_8480", "sapphirerapids")]
)
def test_intel_xeons_with_avx512_keep_it(machine, model):
    host = kernel(machine)
    cpu = resolve_host_cpu(model, features(model), host)
    assert cpu.mcpu == model
    assert not AVX512 & set(cpu.disabled)
    assert runs_on(cpu, host)


def test_sapphire_rapids_vm_that_hides_amx_and_avx512_fp16():
    host = HostView(
        kernel_flags=flags("sapphirerapids_xeon_8480") - {"amx_tile", "amx_int8", "amx_bf16", "avx512_fp16"}
    )
    cpu = resolve_host_cpu("sapphirerapids", features("sapphirerapids"), host)
    assert {"amx-tile", "amx-int8", "amx-bf16", "avx512fp16"} <= set(cpu.disabled)
    assert "avx512f" not in cpu.disabled
    assert runs_on(cpu, host)


def test_haswell_is_haswell():
    host = kernel("haswell_xeon_e5_2676v3")
    cpu = resolve_host_cpu("haswell", features("haswell"), host)
    assert cpu.mcpu == "haswell"
    assert not {"avx2", "fma", "bmi2"} & set(cpu.disabled)
    assert runs_on(cpu, host)


def test_an_avx2_less_machine_gets_no_avx():
    host = kernel("westmere_x86_64_v2")
    cpu = resolve_host_cpu("westmere", features("westmere"), host)
    assert runs_on(cpu, host)
    assert generic_level(host) == "x86-64-v2"
    # a VM that reports a newer model than its flags allow still gets only what it enables
    cpu = resolve_host_cpu("haswell", features("haswell"), host)
    assert {"avx", "avx2", "fma", "bmi2", "movbe"} <= set(cpu.disabled)
    assert runs_on(cpu, host)


def test_this_milan_vm():
    host = kernel("zen3_vm_epyc_milan")
    cpu = resolve_host_cpu("znver3", features("znver3"), host)
    assert cpu.mcpu == "znver3" and runs_on(cpu, host)
    assert not {"avx2", "fma", "vaes"} & set(cpu.disabled)


# --- the two views, fallbacks, other architectures -------------------------------------------


def test_llvm_host_detection_alone_is_enough():
    """Off Linux, or on an RPC device: LLVM's CPUID + XCR0 view in its own names."""
    llvm_host = {f: True for f in features("znver4")} | {f: False for f in features("znver4") if "avx512" in f}
    cpu = resolve_host_cpu("znver4", features("znver4"), HostView(None, llvm_host))
    assert "avx512f" in cpu.disabled and "avx2" not in cpu.disabled


def test_a_feature_is_off_when_either_view_says_so():
    llvm_host = {"avx512f": True, "avx2": True}
    view = HostView(kernel_flags=frozenset({"avx2"}), llvm_host=llvm_host)  # the kernel cleared AVX-512
    assert not view.enables("avx512f") and view.enables("avx2")
    view = HostView(kernel_flags=frozenset({"avx2", "avx512f"}), llvm_host={"avx512f": False})  # XCR0 says no
    assert not view.enables("avx512f")


def test_tuning_flags_are_never_switched_off():
    cpu = resolve_host_cpu("znver4", features("znver4"), kernel("zen4_vm_no_avx512"))
    assert not [f for f in cpu.disabled if f.startswith(("fast-", "slow-", "allow-"))]


@pytest.mark.parametrize(
    "machine, level",
    [
        ("zen4_epyc_genoa", "x86-64-v4"),
        ("zen4_vm_no_avx512", "x86-64-v3"),
        ("haswell_xeon_e5_2676v3", "x86-64-v3"),
        ("westmere_x86_64_v2", "x86-64-v2"),
    ],
)
def test_an_unknown_model_falls_back_to_the_highest_generic_level(machine, level):
    cpu = resolve_host_cpu("generic", None, kernel(machine))
    assert cpu.mcpu == level and not cpu.disabled and "highest level" in cpu.why
    assert resolve_host_cpu("some-future-cpu", None, kernel(machine)).mcpu == level


def test_nothing_known_of_the_host_gives_x86_64_v2():
    cpu = resolve_host_cpu("znver4", features("znver4"), HostView(None, None))
    assert cpu.mcpu == "x86-64-v2" and "nothing tells" in cpu.why


def test_another_architecture_keeps_its_model():
    cpu = resolve_host_cpu("cortex-a72", None, HostView(None, None), x86=False)
    assert cpu.fields() == {"mcpu": "cortex-a72"}


def test_cpuinfo_parsing_takes_the_first_processor():
    text = "processor\t: 0\nflags\t\t: fpu avx2\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert host_cpu.parse_cpuinfo_flags(text) == {"fpu", "avx2"}
    assert host_cpu.parse_cpuinfo_flags("processor: 0\n") is None


def test_read_host_reads_the_file_the_environment_names(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("flags : fpu sse2\n")
    monkeypatch.setenv(host_cpu.CPUINFO_ENV, str(info))
    assert host_cpu.read_host().kernel_flags == {"fpu", "sse2"}


def test_every_kernel_flag_maps_to_a_feature_llvm_knows():
    known = set(host_cpu.llvm_host_features() or {}) | features("sapphirerapids") | features("znver4")
    unknown = [
        f
        for f in host_cpu.KERNEL_FLAGS
        if f not in known and f not in {"nopl", "64bit", "x87", "lwp", "fma4", "xop", "tbm", "sse4a"}
    ]
    assert not unknown, unknown


# --- the SIGILL message ---------------------------------------------------------------------------


def test_sigill_names_the_target_the_missing_features_and_the_option():
    note = host_cpu.crash_note("SIGILL", {"kind": "llvm", "mcpu": "znver4"}, kernel("zen4_vm_no_avx512"))
    assert "built for llvm -mcpu=znver4" in note
    assert "avx512f" in note and "does not enable" in note
    assert "--tvmperf-llvm-target" in note and "x86-64-v2" in note


def test_sigill_of_a_cuda_target_speaks_of_its_host():
    note = host_cpu.crash_note(
        "SIGILL", {"kind": "cuda", "host": {"kind": "llvm", "mcpu": "znver4"}}, kernel("zen4_vm_no_avx512")
    )
    assert "llvm -mcpu=znver4" in note and "avx512f" in note


def test_sigill_when_every_feature_is_enabled_says_so():
    everything = HostView(llvm_host={f: True for f in features("haswell")})
    note = host_cpu.crash_note("SIGILL", {"kind": "llvm", "mcpu": "haswell", "mattr": ["-avx512f"]}, everything)
    assert "-mattr=-avx512f" in note and "the OS enables every feature that target assumes" in note
    unknown = host_cpu.crash_note("SIGILL", {"kind": "llvm", "mcpu": "haswell"}, HostView(None, None))
    assert "could not be told" in unknown


def test_other_signals_keep_their_message():
    assert host_cpu.crash_note("SIGSEGV", {"kind": "llvm", "mcpu": "znver4"}, kernel("zen4_vm_no_avx512")) == ""
