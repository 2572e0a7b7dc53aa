"""Which tuning record each kernel of a program uses on this run's target.

A database may hold records of several targets (this one, the same CPU with other
features, another CPU or GPU architecture), and MetaSchedule's own look-up ignores the
target, so this module chooses:

1. the fastest record for exactly this target (it always wins);
2. else (unless the mode is ``exact``) the fastest record of another target of the same
   kind that applies here: its trace replays on this kernel, every tensor intrinsic it
   uses needs only instructions this target has (no AVX-512 VNNI dot product on a CPU
   without ``avx512vnni``), and on a GPU the kernel passes ``VerifyGPUCode``;
3. else nothing: the kernel stays untuned, and each record that could not apply is
   *left out*, with the reason (:class:`LeftOut`).

The rules on names and features are pure; the replay needs TVM, imported lazily.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from pytest_tvmperf.builder.targets import _plain
from pytest_tvmperf.builder.tuning_db import _records_hash
from pytest_tvmperf.config.parsing import TUNED_MODES  # noqa: E402  (how records match: --tvmperf-tuned)

#: LLVM intrinsic name prefix -> the LLVM target features it needs (first match wins);
#: the x86 and AArch64 intrinsics TVM's tensor intrinsics call
LLVM_INTRINSIC_FEATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("llvm.x86.avx512.vpdpbusd", ("avx512vnni",)),
    ("llvm.x86.avx512.vpdpwssd", ("avx512vnni",)),
    ("llvm.x86.avx512.pmaddubs.w", ("avx512bw",)),
    ("llvm.x86.avx512.pmaddw.d", ("avx512bw",)),
    ("llvm.x86.avx512.", ("avx512f",)),
    ("llvm.x86.avx2.vpdpbusd", ("avxvnni",)),
    ("llvm.x86.avx2.", ("avx2",)),
    ("llvm.x86.avx.", ("avx",)),
    ("llvm.x86.ssse3.", ("ssse3",)),
    ("llvm.x86.sse41.", ("sse4.1",)),
    ("llvm.x86.sse2.", ("sse2",)),
    ("llvm.x86.tdpb", ("amx-int8", "amx-tile")),
    ("llvm.x86.tile", ("amx-tile",)),
    ("llvm.aarch64.neon.sdot", ("dotprod",)),
    ("llvm.aarch64.neon.udot", ("dotprod",)),
    ("llvm.aarch64.neon.smmla", ("i8mm",)),
    ("llvm.aarch64.neon.ummla", ("i8mm",)),
    ("llvm.aarch64.sme.", ("sme",)),
    ("llvm.aarch64.sve.", ("sve",)),
    ("llvm.aarch64.neon.", ("neon",)),
)

#: an LLVM intrinsic's architecture (its name's second part) -> the target triple prefixes it runs on
LLVM_INTRINSIC_ARCHES: Mapping[str, tuple[str, ...]] = {
    "x86": ("x86_64", "i386", "i686", "x86"),
    "aarch64": ("aarch64", "arm64"),
    "arm": ("arm", "thumb"),
    "riscv": ("riscv",),
    "amdgcn": ("amdgcn",),
    "nvvm": ("nvptx",),
}


@dataclass(frozen=True)
class Choice:
    """The record a kernel uses here, and where it was measured."""

    task: str
    record: Any
    #: True when the record was measured for exactly this target
    exact: bool
    #: where the record was measured (:func:`target_label` of its target)
    source: str


@dataclass(frozen=True)
class LeftOut:
    """A record of another target that cannot apply to this kernel here, and why."""

    task: str
    source: str
    reason: str

    def describe(self) -> str:
        return f"{self.task} (tuned on {self.source}: {self.reason})"


@dataclass(frozen=True)
class Resolution:
    """What the database gives each tunable task of a program on one target."""

    chosen: Mapping[str, Choice]
    left_out: tuple[LeftOut, ...]
    #: tasks with records for other targets only (none chosen here)
    elsewhere: tuple[str, ...]
    other_targets: tuple[str, ...]


def required_features(llvm_intrinsics: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(LLVM features the intrinsics need, sorted; intrinsics this table does not know)."""
    needed: set[str] = set()
    unknown: list[str] = []
    for name in llvm_intrinsics:
        for prefix, features in LLVM_INTRINSIC_FEATURES:
            if name.startswith(prefix):
                needed.update(features)
                break
        else:
            unknown.append(name)
    return tuple(sorted(needed)), tuple(sorted(set(unknown)))


def intrinsic_problem(
    tensor_intrin: str, llvm_intrinsics: Sequence[str], triple: str, features: frozenset[str]
) -> str | None:
    """Why a trace tensorizing with ``tensor_intrin`` cannot run on this CPU; None when it can."""
    for name in llvm_intrinsics:
        arch = name.split(".")[1] if name.count(".") >= 2 else ""
        arches = LLVM_INTRINSIC_ARCHES.get(arch)
        if arches is not None and not triple.startswith(arches):
            return f"tensorizes with {tensor_intrin}, an {arch} intrinsic, on a {triple.split('-')[0] or 'other'} CPU"
    needed, unknown = required_features(llvm_intrinsics)
    missing = [f for f in needed if f not in features]
    if missing:
        return f"tensorizes with {tensor_intrin}, which needs {', '.join(missing)}, which this CPU lacks"
    if unknown:
        return f"tensorizes with {tensor_intrin}, which calls {', '.join(unknown)} (not known to be safe here)"
    return None


def target_label(target_json: Mapping[str, Any]) -> str:
    """A target as a user names a machine: the CPU model, the GPU architecture, else the kind."""
    return str(next((target_json[k] for k in ("mcpu", "arch") if target_json.get(k)), target_json.get("kind", "?")))


def source_note(chosen: Sequence[Choice], tasks: int, here: str) -> str:
    """``schedules tuned on znver4, applied on znver3: 31 of 31 kernels`` (for the
    records of other targets; "" when every applied record is this target's own)."""
    portable = [c for c in chosen if not c.exact]
    if not portable:
        return ""
    sources = sorted({c.source for c in portable})
    where = f"{here} with other CPU features or cores" if sources == [here] else ", ".join(sources)
    exact = len(chosen) - len(portable)
    own = f" ({exact} with this target's own records)" if exact else ""
    return f"schedules tuned on {where}, applied on {here}: {len(chosen)} of {tasks} kernels{own}"


def left_out_line(db_dir: str, left_out: Sequence[str], here: str) -> str:
    """One summary line naming the records (:meth:`LeftOut.describe`) left out here."""
    shown = "; ".join(left_out[:6]) + ("; ..." if len(left_out) > 6 else "")
    return (
        f"tvmperf: tuning database {db_dir}: {len(left_out)} record(s) left out on {here} (their kernels run "
        f"untuned unless another record applies): {shown}"
    )


def target_json(target: Any) -> dict[str, Any]:
    return _plain(target.export())


def target_key(target: Any) -> str:
    """A target as canonical JSON: a record is this target's own only when this is equal."""
    return json.dumps(target_json(target), sort_keys=True)


@functools.lru_cache(maxsize=None)
def _llvm_calls(tensor_intrin: str) -> tuple[str, ...]:
    from tvm.s_tir import TensorIntrin

    try:
        impl = TensorIntrin.get(tensor_intrin).impl
    except Exception:  # not registered here: the trace does not replay either
        return ()
    return tuple(sorted(set(re.findall(r"llvm\.[A-Za-z0-9_]+\.[A-Za-z0-9_.]+", impl.script()))))


class _TargetFacts:
    """What this run's target is, read once: its kind, triple and LLVM features."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.kind = str(target.kind.name)
        self.json = target_json(target)
        self.key = json.dumps(self.json, sort_keys=True)
        self.label = target_label(self.json)
        self._gpu_check: Any = None

    @property
    def triple(self) -> str:
        triple = str(self.json.get("mtriple") or "")
        if not triple and self.kind == "llvm":
            import tvm

            triple = str(tvm.target.codegen.llvm_get_system_triple())
        return triple

    @functools.cached_property
    def features(self) -> frozenset[str]:
        import tvm

        try:
            return frozenset(str(f) for f in tvm.target.codegen.llvm_get_cpu_features(self.target))
        except Exception:  # an LLVM without this target's backend
            return frozenset()

    def verify_gpu(self, sch: Any) -> bool:
        """MetaSchedule's VerifyGPUCode for this target (threads, shared memory, registers);
        True where the target does not state its limits (``max_shared_memory_per_block``,
        ... : a target read from a device has them), so the replay alone decides."""
        from tvm.s_tir import meta_schedule as ms

        if self._gpu_check is None:
            check = ms.postproc.VerifyGPUCode()
            try:
                check._initialize_with_tune_context(ms.TuneContext(mod=sch.mod, target=self.target))
            except Exception:  # noqa: BLE001 - a target without its limits: nothing to verify against
                check = False
            self._gpu_check = check
        return True if self._gpu_check is False else bool(self._gpu_check.apply(sch))


def why_not_here(record: Any, task_mod: Any, facts: _TargetFacts) -> str | None:
    """Why ``record`` (of another target) cannot schedule ``task_mod`` here; None when it can."""
    from tvm.s_tir import Schedule

    kind = str(record.target.kind.name)
    if kind != facts.kind:
        return f"a {kind} record, this target is {facts.kind}"
    if facts.kind == "llvm":
        tensorize = [i for i in record.trace.insts if str(i.kind.name) == "Tensorize"]
        for name in [str(a) for i in tensorize for a in i.attrs if isinstance(a, str) or type(a).__name__ == "String"]:
            problem = intrinsic_problem(name, _llvm_calls(name), facts.triple, facts.features)
            if problem:
                return problem
    try:
        sch = Schedule(task_mod)
        record.trace.apply_to_schedule(sch, remove_postproc=False)
    except Exception as exc:  # TVM's ScheduleError, TVMError, ...: the trace does not fit this kernel
        lines = [line for line in str(exc).strip().splitlines() if line.strip()]
        return f"its schedule does not replay here ({lines[-1][:160] if lines else type(exc).__name__})"
    if "gpu" in [str(k) for k in facts.target.keys]:
        try:
            ok = facts.verify_gpu(sch)
        except Exception:  # noqa: BLE001 - a kernel the check cannot lower does not apply either
            ok = False
        if not ok:
            return f"its kernel exceeds what {facts.label} allows (MetaSchedule's VerifyGPUCode)"
    return None


def record_entry(record: Any) -> list[Any]:
    """A record as it is hashed: its kernel's structural hash and the record's JSON."""
    return [str(record.workload.as_json()[0]), _plain(record.as_json())]


def record_digest(record: Any) -> str:
    """A record's identity (sha256 of :func:`record_entry`), the same in every copy of the database."""
    return str(_records_hash(record_entry(record)))


def resolve(
    db: Any, tasks: Sequence[tuple[str, Any]], target: Any, mode: str = "any", pinned: Mapping[str, str] | None = None
) -> Resolution:
    """The record each task uses on ``target`` (the module's rules; ``mode`` ``exact``:
    its own records only). ``pinned``: task -> :func:`record_digest` of the record the
    test's baseline was measured with, kept while the database holds it and it applies
    here (another test's tuning never moves this test)."""
    if mode not in TUNED_MODES:
        raise ValueError(f"unknown tuned mode {mode!r}; expected one of {', '.join(TUNED_MODES)}")
    facts = _TargetFacts(target)
    chosen: dict[str, Choice] = {}
    left_out: list[LeftOut] = []
    elsewhere: list[str] = []
    others: set[str] = set()
    for name, task_mod in tasks:
        known = db.commit_workload(task_mod) if db.has_workload(task_mod) else None  # known: returns it, writes nothing
        top = db.get_top_k(known, max(1, len(db))) if known is not None else []  # fastest first
        records = [(target_key(r.target), r) for r in top if r.target is not None]  # the successful ones
        pin = (pinned or {}).get(name)
        held = next((r for _, r in records if pin and record_digest(r) == pin), None)
        if held is not None:
            exact = target_key(held.target) == facts.key
            if exact or (mode != "exact" and why_not_here(held, task_mod, facts) is None):
                chosen[name] = Choice(name, held, exact, target_label(target_json(held.target)))
                continue
        own = next((r for k, r in records if k == facts.key), None)
        if own is not None:
            chosen[name] = Choice(name, own, True, facts.label)
            continue
        if not records:
            continue
        others |= {k for k, _ in records}
        elsewhere.append(name)
        if mode == "exact":
            continue
        reasons: dict[str, LeftOut] = {}
        for _, record in records:
            source = target_label(target_json(record.target))
            problem = why_not_here(record, task_mod, facts)
            if problem is None:
                chosen[name] = Choice(name, record, False, source)
                break
            reasons.setdefault(problem, LeftOut(name, source, problem))
        else:
            left_out.extend(reasons.values())
    return Resolution(chosen, tuple(left_out), tuple(elsewhere), tuple(sorted(others)))
