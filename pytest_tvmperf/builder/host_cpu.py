"""Which CPU the kernels are built for: the CPU model LLVM names, less every feature the
operating system does not enable.

LLVM names the host CPU by its model (``znver4``) and then assumes every feature that
model has. A hypervisor may hide some of them: a Zen 4 VM without AVX-512 (GitHub's
hosted runners) still reports ``znver4``, and code built for it dies with SIGILL at its
first AVX-512 instruction. So the model is kept (its scheduling model is worth having)
and every feature it implies that the host does not enable is switched off through the
target's ``mattr`` (``-avx512f``, ...).

What the host enables is read from two views, both in LLVM's feature names:

* the kernel's, the ``flags`` of ``/proc/cpuinfo`` (:data:`KERNEL_FLAGS` maps them);
* LLVM's own host detection (``tvm.codegen.llvm.GetHostCPUFeatures``: CPUID and the
  state the OS enabled in XCR0), which also works off Linux and on an RPC device.

A feature counts as enabled when no view that knows it says otherwise. Everything here
but :func:`read_host` is pure, so it is unit-tested with the flag sets of real machines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Mapping

#: LLVM's x86 feature name -> the name of the same feature in ``/proc/cpuinfo``'s flags
#: (only features that are instructions the compiler may emit, or state they need;
#: LLVM's tuning flags such as ``fast-lzcnt`` are no instructions and are never switched off)
KERNEL_FLAGS: Mapping[str, str] = {
    "64bit": "lm",
    "x87": "fpu",
    "cmov": "cmov",
    "cx8": "cx8",
    "cx16": "cx16",
    "mmx": "mmx",
    "fxsr": "fxsr",
    "sse": "sse",
    "sse2": "sse2",
    "sse3": "pni",
    "ssse3": "ssse3",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
    "crc32": "sse4_2",
    "sse4a": "sse4a",
    "popcnt": "popcnt",
    "lzcnt": "abm",
    "sahf": "lahf_lm",
    "nopl": "nopl",
    "movbe": "movbe",
    "bmi": "bmi1",
    "bmi2": "bmi2",
    "adx": "adx",
    "aes": "aes",
    "pclmul": "pclmulqdq",
    "vpclmulqdq": "vpclmulqdq",
    "vaes": "vaes",
    "gfni": "gfni",
    "sha": "sha_ni",
    "sha512": "sha512",
    "sm3": "sm3",
    "sm4": "sm4",
    "rdrnd": "rdrand",
    "rdseed": "rdseed",
    "rdpid": "rdpid",
    "rdpru": "rdpru",
    "prfchw": "3dnowprefetch",
    "xsave": "xsave",
    "xsaveopt": "xsaveopt",
    "xsavec": "xsavec",
    "xsaves": "xsaves",
    "fsgsbase": "fsgsbase",
    "clflushopt": "clflushopt",
    "clwb": "clwb",
    "clzero": "clzero",
    "invpcid": "invpcid",
    "mwaitx": "mwaitx",
    "wbnoinvd": "wbnoinvd",
    "pku": "pku",
    "fsrm": "fsrm",
    "movdiri": "movdiri",
    "movdir64b": "movdir64b",
    "serialize": "serialize",
    "waitpkg": "waitpkg",
    "cldemote": "cldemote",
    "enqcmd": "enqcmd",
    "uintr": "uintr",
    "tsxldtrk": "tsxldtrk",
    "rtm": "rtm",
    "hreset": "hreset",
    "ptwrite": "ptwrite",
    "shstk": "user_shstk",
    "fma": "fma",
    "fma4": "fma4",
    "xop": "xop",
    "tbm": "tbm",
    "lwp": "lwp",
    "f16c": "f16c",
    "avx": "avx",
    "avx2": "avx2",
    "avxvnni": "avx_vnni",
    "avxifma": "avx_ifma",
    "avxvnniint8": "avx_vnni_int8",
    "avxneconvert": "avx_ne_convert",
    "cmpccxadd": "cmpccxadd",
    "avx512f": "avx512f",
    "avx512bw": "avx512bw",
    "avx512cd": "avx512cd",
    "avx512dq": "avx512dq",
    "avx512vl": "avx512vl",
    "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi",
    "avx512vbmi2": "avx512_vbmi2",
    "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16",
    "avx512vp2intersect": "avx512_vp2intersect",
    "amx-tile": "amx_tile",
    "amx-int8": "amx_int8",
    "amx-bf16": "amx_bf16",
    "amx-fp16": "amx_fp16",
    "amx-complex": "amx_complex",
}

#: the generic x86-64 levels, highest first, with the features each needs beyond the next
#: lower one (the psABI's micro-architecture levels, in LLVM's names)
LEVELS: tuple[tuple[str, frozenset[str]], ...] = (
    ("x86-64-v4", frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})),
    ("x86-64-v3", frozenset({"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"})),
    ("x86-64-v2", frozenset({"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"})),
)

#: the option that sets the host target, named in every message about it
OVERRIDE_HINT = "--tvmperf-llvm-target (ini tvmperf_llvm_target, $TVMPERF_LLVM_TARGET)"

#: a file read in place of /proc/cpuinfo (the tests emulate other hosts with it)
CPUINFO_ENV = "TVMPERF_CPUINFO"


@dataclass(frozen=True)
class HostView:
    """What one machine enables, as far as it can be told: the flags of its kernel
    (``/proc/cpuinfo``) and LLVM's host detection, each None where unavailable."""

    kernel_flags: frozenset[str] | None = None
    #: LLVM feature name -> enabled, from ``GetHostCPUFeatures``
    llvm_host: Mapping[str, bool] | None = None

    @property
    def known(self) -> bool:
        return self.kernel_flags is not None or bool(self.llvm_host)

    def knows(self, feature: str) -> bool:
        return (self.kernel_flags is not None and feature in KERNEL_FLAGS) or (
            self.llvm_host is not None and feature in self.llvm_host
        )

    def enables(self, feature: str) -> bool:
        """Does no view that knows ``feature`` say it is off?"""
        if self.kernel_flags is not None and feature in KERNEL_FLAGS and KERNEL_FLAGS[feature] not in self.kernel_flags:
            return False
        if self.llvm_host is not None and feature in self.llvm_host and not self.llvm_host[feature]:
            return False
        return self.knows(feature)

    def missing(self, features: Iterable[str]) -> tuple[str, ...]:
        """The features of ``features`` this host is known not to enable, sorted."""
        return tuple(sorted(f for f in set(features) if self.knows(f) and not self.enables(f)))

    def describe(self) -> str:
        views = [
            v
            for v, have in (
                ("/proc/cpuinfo", self.kernel_flags is not None),
                ("LLVM's host detection", bool(self.llvm_host)),
            )
            if have
        ]
        return " and ".join(views) or "nothing"


@dataclass(frozen=True)
class HostCpu:
    """The llvm target fields for one machine's CPU, and how they were chosen."""

    mcpu: str
    #: features switched off, without the leading "-" (sorted)
    disabled: tuple[str, ...] = ()
    why: str = ""

    @property
    def mattr(self) -> tuple[str, ...]:
        return tuple("-" + f for f in self.disabled)

    def fields(self) -> dict[str, object]:
        """``mcpu`` and, where something is switched off, ``mattr``: the target dict's fields."""
        out: dict[str, object] = {"mcpu": self.mcpu}
        if self.disabled:
            out["mattr"] = list(self.mattr)
        return out


def generic_level(host: HostView) -> str:
    """The highest x86-64 level whose features this host enables (x86-64 at least)."""
    names = [name for name, _ in LEVELS]
    for i, name in enumerate(names):
        needed = frozenset().union(*(features for _, features in LEVELS[i:]))
        if all(host.enables(f) for f in needed):
            return name
    return "x86-64"


def resolve_host_cpu(model: str, model_features: Iterable[str] | None, host: HostView, x86: bool = True) -> HostCpu:
    """The CPU to build for, from the model LLVM names (``znver4``), the features LLVM says
    that model has (None where LLVM does not know the model) and what ``host`` enables.

    Off x86 the model is kept as it is (no table of another architecture's flags here).
    On x86: the model less every feature it has that the host does not enable; a generic
    level where the model is unknown; x86-64-v2 where nothing of the host is known."""
    model = str(model or "").strip()
    if not x86:
        return HostCpu(model or "generic", why="the CPU model LLVM names (not x86: no feature check)")
    if not host.known:
        return HostCpu(
            "x86-64-v2",
            why="nothing tells which CPU features the OS enables; "
            "x86-64-v2 runs on every x86-64 CPU of the last 15 years",
        )
    if not model or model == "generic" or not model_features:
        level = generic_level(host)
        return HostCpu(
            level,
            why=f"LLVM does not know the CPU model {model or '(none)'!r}; {level} is the highest "
            f"level the features that {host.describe()} report reach",
        )
    disabled = host.missing(model_features)
    if not disabled:
        return HostCpu(
            model, why=f"the CPU model LLVM names; the OS enables every feature it has (by {host.describe()})"
        )
    return HostCpu(
        model,
        disabled,
        why=f"the CPU model LLVM names, less {len(disabled)} feature(s) that it has and "
        f"the OS does not enable (by {host.describe()}): {', '.join(disabled)}",
    )


def parse_cpuinfo_flags(text: str) -> frozenset[str] | None:
    """The flags of the first processor in ``/proc/cpuinfo`` text; None without a flags line."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return None


def read_host() -> HostView:
    """This machine's view: ``/proc/cpuinfo`` (or the file ``$TVMPERF_CPUINFO`` names) and
    LLVM's host detection."""
    path = os.environ.get(CPUINFO_ENV) or "/proc/cpuinfo"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            flags = parse_cpuinfo_flags(f.read())
    except OSError:
        flags = None
    return HostView(flags, llvm_host_features())


def llvm_host_features() -> dict[str, bool] | None:
    """LLVM's ``sys::getHostCPUFeatures`` through TVM (None where TVM lacks it)."""
    import tvm  # noqa: F401  (registers the codegen functions)
    import tvm_ffi

    func = tvm_ffi.get_global_func("tvm.codegen.llvm.GetHostCPUFeatures", allow_missing=True)
    if func is None:
        return None
    return {str(k): bool(v) for k, v in dict(func()).items()}


def model_features(model: str, triple: str | None = None) -> frozenset[str] | None:
    """The features LLVM says CPU ``model`` has (None where LLVM does not know it)."""
    import tvm

    config: dict[str, object] = {"kind": "llvm", "mcpu": model}
    if triple:
        config["mtriple"] = triple
    try:
        return frozenset(str(f) for f in tvm.target.codegen.llvm_get_cpu_features(tvm.target.Target(config)))
    except Exception:  # an mcpu this LLVM does not know
        return None


def target_features(config: Mapping[str, object]) -> frozenset[str] | None:
    """The features an llvm target dict (with its ``mcpu`` and ``mattr``) lets LLVM use."""
    import tvm

    try:
        return frozenset(str(f) for f in tvm.target.codegen.llvm_get_cpu_features(tvm.target.Target(dict(config))))
    except Exception:
        return None


def is_x86(triple: str) -> bool:
    return triple.split("-", 1)[0] in ("x86_64", "i386", "i686", "amd64")


def describe_target(config: Mapping[str, object]) -> str:
    """``llvm -mcpu=znver4 -mattr=-avx512f,...`` for messages."""
    parts = [str(config.get("kind", "llvm"))]
    if config.get("mcpu"):
        parts.append(f"-mcpu={config['mcpu']}")
    mattr = config.get("mattr")
    if mattr:
        parts.append("-mattr=" + ",".join(str(a) for a in mattr))  # type: ignore[union-attr]
    return " ".join(parts)


def sigill_advice(config: Mapping[str, object], assumed_not_enabled: tuple[str, ...] | None) -> str:
    """Why a kernel built for ``config`` may have died of SIGILL here, and what to do."""
    built = f"it was built for {describe_target(config)}"
    if assumed_not_enabled:
        why = f"; that target assumes CPU features this machine's OS does not enable: {', '.join(assumed_not_enabled)}"
    elif assumed_not_enabled is None:
        why = "; which CPU features this machine enables could not be told"
    else:
        why = "; as far as this machine tells, the OS enables every feature that target assumes"
    return (
        f"SIGILL means the CPU met an instruction it does not run: {built}{why}. Build for another CPU with "
        f"{OVERRIDE_HINT}, e.g. --tvmperf-llvm-target=x86-64-v2 (docs/machines.md, 'Which CPU the kernels are built for')"
    )


def llvm_target_problem(config: Mapping[str, object]) -> str | None:
    """Why TVM would not build for the llvm target ``config`` (``--tvmperf-llvm-target``),
    or None."""
    import tvm

    try:
        tvm.target.Target(dict(config))
    except Exception as exc:  # TVM's own word on a field it does not take
        return f"TVM does not take the target {dict(config)}: {str(exc).strip().splitlines()[-1]}"
    mcpu = config.get("mcpu")
    if mcpu:
        triple = str(config.get("mtriple") or tvm.target.codegen.llvm_get_system_triple())
        try:
            valid = bool(tvm.target.codegen.llvm_is_valid_cpu(str(mcpu), triple))
        except Exception:
            valid = True  # this LLVM cannot tell: TVM's build will
        if not valid:
            return (
                f"LLVM does not know the CPU {mcpu!r} for {triple} (try x86-64-v2, x86-64-v3, haswell, znver3, "
                f"or `llc -mcpu=help`)"
            )
    return None


def crash_note(how: str, target_config: Mapping[str, object], host: HostView | None = None) -> str:
    """What to add to the message of a kernel that crashed with ``how`` (``SIGILL``,
    ``SIGSEGV``): for SIGILL, the target it was built for, the features that target
    assumes and this machine does not enable, and the option that changes it; for any
    other way of dying, nothing."""
    if how != "SIGILL":
        return ""
    llvm = target_config.get("host") if target_config.get("kind") != "llvm" else target_config
    if not isinstance(llvm, Mapping) or llvm.get("kind") != "llvm":
        return ""
    host = host if host is not None else read_host()
    features = target_features(llvm)
    return "\n" + sigill_advice(llvm, None if features is None or not host.known else host.missing(features))
