"""Builders of made-up Records for the unit tests (no TVM needed)."""

from __future__ import annotations

from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record, Timing

REF = "matmul-test/v1"


def machine(cpu: str = "x", cores: int = 2) -> Machine:
    return Machine(
        cpu_model=cpu, logical_cores=cores, tvm_threads=1, tvm_version="0.27", llvm_version="22", target="{}"
    )


def exact(
    instructions: int | None = 10, kernels: int | None = 3, storage: int | None = 1024, calls: int | None = 4
) -> ExactMetrics:
    return ExactMetrics(
        instructions=None if instructions is None else {"main": instructions},
        by_callee=None if instructions is None else {"ret": 1, "vm.builtin.alloc_tensor": instructions - 1},
        calls=None if calls is None else {"fused_add": calls},
        kernels=kernels,
        storage_bytes=storage,
    )


def timing(
    samples,
    *,
    mach: Machine | None = None,
    reference=None,
    reference_name: str | None = REF,
    ab=None,
    artifact: str | None = None,
    artifact_sha256: str | None = None,
) -> Timing:
    """One machine's Timing; ``reference`` and ``ab`` (the baseline artifact's samples)
    pair one to one with ``samples``; ``reference_name`` only applies with a reference."""
    mach = mach or machine()
    return Timing(
        mach,
        TimeSamples(
            tuple(samples),
            None if reference is None else tuple(reference),
            None if reference is None else reference_name,
            None if ab is None else tuple(ab),
        ),
        artifact,
        artifact_sha256,
    )


def record(
    samples=(1e-3, 1.1e-3, 0.9e-3),
    *,
    mach: Machine | None = None,
    metrics: ExactMetrics | None = None,
    workload: str = "mlp",
    tvm_version: str = "0.27",
    compile_s: float | None = 0.5,
    reference=None,
    reference_name: str | None = REF,
    ab=None,
) -> Record:
    """A Record with one timing (a current measurement); ``samples=None`` gives no timing."""
    mach = mach or machine()
    timings = (
        {}
        if samples is None
        else {mach.fingerprint: timing(samples, mach=mach, reference=reference, reference_name=reference_name, ab=ab)}
    )
    return with_timings(
        timings.values(), metrics=metrics, workload=workload, tvm_version=tvm_version, compile_s=compile_s
    )


def with_timings(
    timings,
    *,
    metrics: ExactMetrics | None = None,
    workload: str = "mlp",
    tvm_version: str = "0.27",
    compile_s: float | None = 0.5,
) -> Record:
    """A Record holding ``timings`` (a baseline of several machines), keyed by fingerprint in the given order."""
    return Record(
        workload=workload,
        executor="vm-bytecode",
        target={"kind": "llvm"},
        tvm_version=tvm_version,
        exact=metrics if metrics is not None else exact(),
        timings={t.machine.fingerprint: t for t in timings},
        compile_s=compile_s,
    )
