"""Which CPU the kernels are built for: the CPU model LLVM names (its scheduling model is
worth having), less every feature the operating system does not enable, in ``mattr``: a
hypervisor may hide some, and a Zen 4 VM without AVX-512 (GitHub's hosted runners) still
reports ``znver4``, whose code dies there with SIGILL.

What the host enables is read from the ``flags`` of ``/proc/cpuinfo`` (:data:`KERNEL_FLAGS`)
and from LLVM's host detection (CPUID and XCR0; also off Linux and on an RPC device); a
feature counts as enabled when no view that knows it says otherwise. All but
:func:`read_host` is pure, unit-tested with the flag sets of real machines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Mapping

#: LLVM's x86 feature name -> the name of the same feature in ``/proc/cpuinfo``'s flags,
#: ``llvm:flag`` where the names differ (only features that are instructions the compiler
#: may emit, or state they need; LLVM's tuning flags such as ``fast-lzcnt`` are no
#: instructions and are never switched off)
_FLAGS = """
64bit:lm x87:fpu cmov cx8 cx16 mmx fxsr sse sse2 sse3:pni ssse3 sse4.1:sse4_1 sse4.2:sse4_2 crc32:sse4_2 sse4a popcnt
lzcnt:abm sahf:lahf_lm nopl movbe bmi:bmi1 bmi2 adx aes pclmul:pclmulqdq vpclmulqdq vaes gfni sha:sha_ni sha512 sm3
sm4 rdrnd:rdrand rdseed rdpid rdpru prfchw:3dnowprefetch xsave xsaveopt xsavec xsaves fsgsbase clflushopt clwb clzero
invpcid mwaitx wbnoinvd pku fsrm movdiri movdir64b serialize waitpkg cldemote enqcmd uintr tsxldtrk rtm hreset ptwrite
shstk:user_shstk fma fma4 xop tbm lwp f16c avx avx2 avxvnni:avx_vnni avxifma:avx_ifma avxvnniint8:avx_vnni_int8
avxneconvert:avx_ne_convert cmpccxadd avx512f avx512bw avx512cd avx512dq avx512vl avx512ifma avx512vbmi
avx512vbmi2:avx512_vbmi2 avx512vnni:avx512_vnni avx512bitalg:avx512_bitalg avx512vpopcntdq:avx512_vpopcntdq
avx512bf16:avx512_bf16 avx512fp16:avx512_fp16 avx512vp2intersect:avx512_vp2intersect amx-tile:amx_tile
amx-int8:amx_int8 amx-bf16:amx_bf16 amx-fp16:amx_fp16 amx-complex:amx_complex
"""
KERNEL_FLAGS: Mapping[str, str] = {p.partition(":")[0]: p.partition(":")[2] or p for p in _FLAGS.split()}

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
    """What one machine enables: its ``/proc/cpuinfo`` flags and LLVM's host detection (or None)."""

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
        views = ["/proc/cpuinfo"] if self.kernel_flags is not None else []
        views += ["LLVM's host detection"] if self.llvm_host else []
        return " and ".join(views) or "nothing"


@dataclass(frozen=True)
class HostCpu:
    """The llvm target fields for one machine's CPU, and how they were chosen."""

    mcpu: str
    #: features switched off, without the leading "-" (sorted)
    disabled: tuple[str, ...] = ()
    why: str = ""

    def fields(self) -> dict[str, object]:
        """``mcpu`` and, where something is switched off, ``mattr``: the target dict's fields."""
        return {"mcpu": self.mcpu, **({"mattr": ["-" + f for f in self.disabled]} if self.disabled else {})}


def generic_level(host: HostView) -> str:
    """The highest x86-64 level whose features this host enables (x86-64 at least)."""
    for i, (name, _) in enumerate(LEVELS):
        needed = frozenset().union(*(features for _, features in LEVELS[i:]))
        if all(host.enables(f) for f in needed):
            return name
    return "x86-64"


def resolve_host_cpu(model: str, model_features: Iterable[str] | None, host: HostView, x86: bool = True) -> HostCpu:
    """The CPU to build for, from the model LLVM names, its features (None where LLVM does
    not know it) and what ``host`` enables: off x86 the model as it is; on x86 the model
    less what the host does not enable, a generic level for an unknown model, x86-64-v2
    where nothing of the host is known."""
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
    """This machine's view: ``/proc/cpuinfo`` (or ``$TVMPERF_CPUINFO``'s file) and LLVM's."""
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
    return None if func is None else {str(k): bool(v) for k, v in dict(func()).items()}


def model_features(model: str, triple: str | None = None) -> frozenset[str] | None:
    """The features LLVM says CPU ``model`` has (None where LLVM does not know it)."""
    return target_features({"kind": "llvm", "mcpu": model, **({"mtriple": triple} if triple else {})})


def target_features(config: Mapping[str, object]) -> frozenset[str] | None:
    """The features an llvm target dict lets LLVM use (None where LLVM does not know its CPU)."""
    import tvm

    try:
        return frozenset(str(f) for f in tvm.target.codegen.llvm_get_cpu_features(tvm.target.Target(dict(config))))
    except Exception:
        return None


def is_x86(triple: str) -> bool:
    return triple.split("-", 1)[0] in ("x86_64", "i386", "i686", "amd64")


def llvm_target_problem(config: Mapping[str, object]) -> str | None:
    """Why TVM would not build for the llvm target ``config`` (``--tvmperf-llvm-target``), or None."""
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
    """What to add to the message of a kernel that crashed with ``how``: for ``SIGILL``
    the target it was built for (``llvm -mcpu=znver4 -mattr=-avx512f,...``), the features
    it assumes that this machine does not enable, and the option that changes it; else nothing."""
    if how != "SIGILL":
        return ""
    llvm = target_config.get("host") if target_config.get("kind") != "llvm" else target_config
    if not isinstance(llvm, Mapping) or llvm.get("kind") != "llvm":
        return ""
    host = host if host is not None else read_host()
    features = target_features(llvm)
    missing = None if features is None or not host.known else host.missing(features)
    built = "llvm" + (f" -mcpu={llvm['mcpu']}" if llvm.get("mcpu") else "")
    built += (" -mattr=" + ",".join(str(a) for a in llvm["mattr"])) if llvm.get("mattr") else ""
    if missing:
        why = f"; that target assumes CPU features this machine's OS does not enable: {', '.join(missing)}"
    elif missing is None:
        why = "; which CPU features this machine enables could not be told"
    else:
        why = "; as far as this machine tells, the OS enables every feature that target assumes"
    return (
        f"\nSIGILL means the CPU met an instruction it does not run: it was built for {built}{why}. Build for another "
        f"CPU with {OVERRIDE_HINT}, e.g. --tvmperf-llvm-target=x86-64-v2 (docs/machines.md, 'Which CPU the kernels "
        f"are built for')"
    )
