"""Pure: a baseline entry keyed by what its kernels are (values/kernel_id.py), not by TVM's
numbering: TVM numbers its kernels in the order it meets them, so one layer added renames every
kernel after it (``fused_conv2d6_add6`` becomes ``fused_conv2d8_add8``), and re-recording a
network after a one-layer change gave a diff of hundreds of lines of renames. Keyed
``conv2d_add_relu@02f7e9c10c`` (its ops, then the start of its code's structural hash), an
unchanged kernel's lines do not change.

:func:`keyed_by_identity` keys every per-kernel map (``exact.by_callee``, ``exact.calls``,
``exact.per_kernel``, ``kernel_time_s``, ``kernels``, ``exact.resource_parts``' ``K`` and
``output of K``) and each bytecode ``call``; a CUDA kernel a kernel launches keeps its suffix
(``matmul_add@22ce49974e_kernel``); the bytecode's register numbers and constant indices are
left out (``%_``, ``c[_]``: they renumber after an added instruction). A record without kernel
identities (an old one, a loaded library, a PrimFunc test's one ``main``) is left as it is, and
so is a file in the older form: every reader matches kernels by identity (result/kernel_match.py,
which reads a failure's resource parts back under this build's names).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Mapping, TypeVar

from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.executor_rows import is_prim

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.values.record import Record

#: the digits of the structural hash a key keeps (40 bits: kernels of one program that
#: share them are told apart by a ``~2`` suffix, :func:`stable_names`)
KEY_DIGITS = 10
#: ``conv2d_add_relu@02f7e9c10c`` or ``conv2d_add_relu@02f7e9c10c~2``
STABLE_KEY = re.compile(r"^(?P<op>[^@\s]+)@(?P<key>[0-9a-f]{1,16})(?:~(?P<n>[2-9]|[1-9]\d+))?$")

#: what a change elsewhere in a function renumbers: its registers and its constant indices
_REGISTER = re.compile(r"%\d+")
_CONSTANT = re.compile(r"c\[\d+\]")
_CALL = re.compile(r"^(call )(\S+)( |$)", re.MULTILINE)
#: the names TVM gives the CUDA kernels a kernel ``K`` launches (its host-device split):
#: ``K_kernel``, then ``K_kernel_1``, ``K_kernel_2``, ...
DEVICE_SUFFIX = re.compile(r"_kernel(?:_[1-9]\d*)?$")
#: the mark a shown name may end with (``matmul@22ce49974e [new]``, ``K [removed]``)
_MARK = re.compile(r" \[[a-z]+\]$")
#: the site of an allocation holding a kernel's output (builder/vm_alloc.py)
OUTPUT_OF = "output of "

V = TypeVar("V")


def stable_key(ident: KernelId) -> str:
    """``conv2d_add_relu@02f7e9c10c``: the kernel's ops and the start of its code's hash."""
    return f"{ident.op}@{ident.key[:KEY_DIGITS]}"


def stable_names(kernels: Mapping[str, KernelId]) -> dict[str, str]:
    """{kernel name: its key in a baseline file}, one key per kernel: kernels whose keys are
    equal (the same code under two names) get ``~2``, ``~3``, ... in their names' numbering
    order. A name already of that form keeps it (keying is idempotent)."""
    groups: dict[str, list[str]] = {}
    for name, ident in kernels.items():
        groups.setdefault(stable_key(ident), []).append(name)
    out: dict[str, str] = {}
    for key, names in groups.items():
        for i, name in enumerate(sorted(names, key=_numbering)):
            out[name] = key if i == 0 else f"{key}~{i + 1}"
    return out


def _numbering(name: str) -> tuple:
    """``conv2d2`` before ``conv2d10``; a stable key by its ``~n``."""
    if m := STABLE_KEY.match(name):
        return (0, int(m.group("n") or 1), name)
    return (1, [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)], name)


def without_numbers(line: str) -> str:
    """A bytecode line with its register numbers and constant indices left out: an unchanged
    instruction after an added one reads the same though every number after it shifted."""
    return _CONSTANT.sub("c[_]", _REGISTER.sub("%_", line))


def _rename(counts: Mapping[str, V] | None, names: Mapping[str, str]) -> dict[str, V] | None:
    return None if counts is None else {names.get(k, k): v for k, v in counts.items()}


def device_parts(name: str) -> tuple[str, str]:
    """(the kernel, the suffix) of a CUDA kernel's name: ``fused_matmul_add_kernel_1`` ->
    (``fused_matmul_add``, ``_kernel_1``), ``matmul_add@22ce49974e_kernel`` ->
    (``matmul_add@22ce49974e``, ``_kernel``); any other name: (name, "")."""
    m = DEVICE_SUFFIX.search(name)
    return (name, "") if m is None or m.start() == 0 else (name[: m.start()], m.group())


def with_suffix(shown: str, suffix: str) -> str:
    """``shown`` (a kernel's name or key, maybe marked ``[new]``) with a CUDA kernel's
    suffix, before the mark: ``matmul@22ce49974e_kernel [new]``."""
    m = _MARK.search(shown)
    return shown + suffix if m is None else f"{shown[: m.start()]}{suffix}{m.group()}"


def kernel_renamed(name: str, names: Mapping[str, str]) -> str:
    """A per-kernel map's key under ``names``: a kernel's own; a CUDA kernel of a kernel
    ``K`` in ``names`` (``K_kernel``, ``K_kernel_1``: :func:`device_parts`) under
    ``names[K]`` with its suffix; any other (``[runtime]``, a kernel not named) as it is."""
    if name in names:
        return names[name]
    host, suffix = device_parts(name)
    return with_suffix(names[host], suffix) if suffix and host in names else name


def is_keyed(name: str) -> bool:
    """Does a per-kernel map's key (a kernel, ``output of K``, a CUDA kernel ``K_kernel``)
    name a kernel by its identity key?"""
    return bool(STABLE_KEY.match(name.removeprefix(OUTPUT_OF)) or STABLE_KEY.match(device_parts(name)[0]))


def renamed_sites(counts: Mapping[str, int], names: Mapping[str, str]) -> dict[str, int]:
    """One resource metric's parts with their kernels (``K``, ``output of K``) under ``names``;
    any other site (``returned or unused``) as it is. Sites that come to one name add up."""

    def one(site: str) -> str:
        head, sep, kernel = site.partition(OUTPUT_OF)
        if sep and not head and site not in names:
            renamed = kernel_renamed(kernel, names)
            return site if renamed == kernel else f"{sep}{renamed}"
        return kernel_renamed(site, names)

    out: dict[str, int] = {}
    for site, n in counts.items():
        out[one(site)] = out.get(one(site), 0) + n
    return out


def _renamed(exact: ExactMetrics, names: Mapping[str, str]) -> ExactMetrics:
    return replace(
        exact,
        by_callee=_rename(exact.by_callee, names),
        calls=_rename(exact.calls, names),
        per_kernel={m: {kernel_renamed(k, names): v for k, v in c.items()} for m, c in exact.per_kernel.items()},
        resource_parts={metric: renamed_sites(counts, names) for metric, counts in exact.resource_parts.items()},
    )


def keyed_bytecode(bytecode: Mapping[str, str] | None, names: Mapping[str, str]) -> dict[str, str] | None:
    """Each ``call <kernel>`` under the kernel's key, numbers left out."""
    if bytecode is None:
        return None
    called = {fn: _CALL.sub(lambda m: f"{m[1]}{names.get(m[2], m[2])}{m[3]}", text) for fn, text in bytecode.items()}
    return {fn: "\n".join(without_numbers(line) for line in text.splitlines()) for fn, text in called.items()}


def keyed_by_identity(record: "Record") -> "Record":
    """``record`` as a baseline file stores it: keyed by kernel identity (module docstring);
    unchanged where it has no identities or is a PrimFunc test (its one kernel, ``main``)."""
    if not record.kernels or is_prim(record.executor):
        return record
    names = stable_names(record.kernels)
    return replace(
        record,
        exact=_renamed(record.exact, names),
        kernel_time_s=_rename(record.kernel_time_s, names),
        bytecode=keyed_bytecode(record.bytecode, names),
        kernels={names[name]: ident for name, ident in record.kernels.items()},
    )


def in_build_names(exact: ExactMetrics, build: Mapping[str, KernelId] | None) -> ExactMetrics:
    """A stored entry's exact metrics keyed by identity, back under the names this build
    (``build``: its {name: identity}) gave the same kernels; a key none has stays as it is."""
    if not build:
        return exact
    back = {key: name for name, key in stable_names(build).items()}
    kernels = (device_parts(k)[0] for counts in exact.per_kernel.values() for k in counts)
    sites = (k.removeprefix(OUTPUT_OF) for counts in exact.resource_parts.values() for k in counts)
    named = (*(exact.by_callee or ()), *(exact.calls or ()), *kernels, *sites)
    return _renamed(exact, back) if any(k in back for k in named) else exact


def key_problem(name: str, ident: KernelId) -> str | None:
    """Why a kernel keyed by identity (``op@hex``) does not carry that identity (an edited
    key or entry), or None; a kernel keyed by its TVM name is not checked here."""
    if (m := STABLE_KEY.match(name)) is None:
        return None
    if m.group("op") != ident.op or not ident.key.startswith(m.group("key")):
        return (
            f"the key says op {m.group('op')!r} and code hash {m.group('key')}..., the entry says op "
            f"{ident.op!r} and hash {ident.key}"
        )
    return None
