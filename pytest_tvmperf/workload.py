"""The :class:`Workload` value: what to compile, how to feed it and what it must compute."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pytest_tvmperf.values.source_layer import SourceLayer
from pytest_tvmperf.values.executor_rows import PRIM_KIND

InputMaker = Callable[[np.random.Generator, Mapping[str, int]], Sequence[np.ndarray]]
Reference = Callable[..., "np.ndarray | Sequence[np.ndarray]"]
#: ``factory() -> run`` where ``run(*inputs)`` computes the workload's outputs in a peer
#: framework (NumPy, PyTorch, onnxruntime) from the same NumPy inputs; the factory
#: imports what it needs, so a missing package raises ImportError (or PeerUnavailable)
PeerFactory = Callable[[], Callable[..., Any]]

#: how a program is compiled: see ``pytest_tvmperf.builder.pipelines``
PIPELINES = ("default", "unfused", "dlight", "tuned")


def output_specs(outputs: Sequence[np.ndarray]) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of each output: what a PrimFunc's destination buffers are allocated from."""
    return [(tuple(o.shape), str(o.dtype)) for o in outputs]


class WorkloadError(ValueError):
    """A workload definition that cannot be used, with what to fix."""


class PeerUnavailable(Exception):
    """A peer framework cannot run this workload here; the message says why."""


def random_input(rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype, what: str) -> np.ndarray:
    """A seeded default input: normal floats, integers in [0, 10), random booleans;
    ``what`` names the input in the error for any other dtype."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(tuple(shape)).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 10, size=tuple(shape)).astype(dtype)
    if dtype.kind == "b":
        return rng.random(tuple(shape)) < 0.5
    raise WorkloadError(f"{what}: no default inputs of dtype {dtype}; pass make_inputs=")


@dataclass(frozen=True)
class Workload:
    """A program to measure, with its seeded inputs and NumPy reference.

    program
        A Relax ``IRModule`` (run on the Relax VM) or a TE/TIR ``PrimFunc`` (or an
        IRModule holding only PrimFuncs), run directly by the ``prim`` executor.
        PrimFuncs use destination passing: outputs come after the inputs and are
        allocated from the shapes of the reference's result.
    make_inputs
        ``make_inputs(rng, dims) -> [arrays]``: the run-time inputs, from a seeded
        ``numpy.random.Generator`` and the values of the symbolic dims.
    reference
        ``reference(*inputs) -> array or [arrays]``: what the program must compute.
    params
        Weights passed at run time after the inputs, as ``(name, array)`` pairs (empty
        when weights are bound into the program as constants).
    dims / dim_ranges
        Values of symbolic dims for the timed run, and the ranges Hypothesis draws
        from to check correctness on other shapes (compiled once).
    pipeline
        How it is compiled: ``default`` (the fused default pipeline), ``unfused``
        (what ``tvm.compile`` does), ``dlight`` (fused, with dlight default
        schedules) or ``tuned`` (fused, with the schedules of a MetaSchedule
        tuning database applied). Recorded in the baseline.
    tuning_db
        The tuning database directory for ``pipeline="tuned"`` (relative paths are
        from pytest's rootdir); None uses ``--tvmperf-tuning-db``.
    peers
        Peer frameworks that compute the same thing, by name (``numpy``, ``torch``,
        ``onnxruntime``): timed side by side with TVM when asked for, and gated with
        ``@pytest.mark.tvmperf(vs_torch=1.2)``.
    simulate_as
        A smaller workload of the same computation whose simulated cost is counted
        instead of this one's (a scaled-down shape for a kernel too slow to simulate:
        valgrind runs ~100x native time). Named in the record's ``exact.measured_with``.
    reference_name / made_by
        What the reference is (``NumPy``, ``onnxruntime``, ``eager torch``) and the call
        that made the workload (where ``rtol=``/``atol=`` are set): named in a
        correctness failure, with the tolerance used.
    layers
        The layers of the model it was imported from (convolutions, linears, pools, with
        their module path or node name and shapes; ``torch_workload`` and ``onnx_model``
        fill it): each kernel in a failure is named by the layers it computes.
    """

    name: str
    program: Any
    make_inputs: InputMaker
    reference: Reference
    params: Sequence[tuple[str, np.ndarray]] = ()
    entry: str = "main"
    rtol: float = 1e-5
    atol: float = 1e-5
    dims: Mapping[str, int] = field(default_factory=dict)
    dim_ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    seed: int = 0
    pipeline: str = "default"
    tuning_db: str | None = None
    peers: Mapping[str, PeerFactory] = field(default_factory=dict)
    simulate_as: "Workload | None" = None
    reference_name: str = "NumPy"
    made_by: str = "Workload"
    layers: tuple[SourceLayer, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise WorkloadError("a Workload needs a non-empty name")
        w = f"workload {self.name}"
        if not callable(self.make_inputs):
            raise WorkloadError(f"{w}: make_inputs must be callable(rng, dims)")
        if not callable(self.reference):
            raise WorkloadError(f"{w}: reference must be callable(*inputs)")
        if self.rtol < 0 or self.atol < 0:
            raise WorkloadError(f"{w}: rtol and atol must be >= 0")
        for dim, bounds in self.dim_ranges.items():
            if len(bounds) != 2 or not 1 <= bounds[0] <= bounds[1]:
                raise WorkloadError(f"{w}: dim_ranges[{dim!r}] must be (low, high) with 1 <= low <= high")
        missing = set(self.dim_ranges) - set(self.dims)
        if missing:
            raise WorkloadError(f"{w}: dims needs a value for {sorted(missing)} (used for the timed run)")
        if self.pipeline not in PIPELINES:
            raise WorkloadError(f"{w}: unknown pipeline {self.pipeline!r}; choose from {', '.join(PIPELINES)}")
        for peer, factory in self.peers.items():
            if not callable(factory):
                raise WorkloadError(f"{w}: peers[{peer!r}] must be a callable factory() -> run(*inputs)")
        if self.simulate_as is not None and not isinstance(self.simulate_as, Workload):
            raise WorkloadError(
                f"{w}: simulate_as must be a Workload (a scaled-down one), got {type(self.simulate_as).__name__}"
            )
        kind = self.kind  # validates the program type
        if kind == PRIM_KIND and self.pipeline == "unfused":
            raise WorkloadError(
                f"{w}: pipeline 'unfused' applies to Relax programs (a PrimFunc has nothing to fuse); use 'default'"
            )
        if kind == "relax":
            names = [gv.name_hint for gv in self.program.get_global_vars()]
            if self.entry not in names:
                raise WorkloadError(
                    f"{w}: entry {self.entry!r} not in the module (functions: {', '.join(sorted(names))})"
                )

    def tolerance_note(self) -> str:
        """The tolerance, as a correctness failure states it, and the call that sets it."""
        return (
            f"tolerance rtol={self.rtol:g}, atol={self.atol:g} (|got - expected| <= atol + rtol * |expected|, "
            f"against the {self.reference_name} reference); to change it: "
            f"{self.made_by}(..., rtol=..., atol=...)"
        )

    @property
    def kind(self) -> str:
        """``"relax"`` for a Relax IRModule, ``"prim"`` for a PrimFunc-only program."""
        import tvm
        from tvm import relax, tirx

        if isinstance(self.program, tirx.PrimFunc):
            return "prim"
        if isinstance(self.program, tvm.IRModule):
            funcs = list(self.program.functions.values())
            if any(isinstance(f, relax.Function) for f in funcs):
                return "relax"
            if funcs:
                return "prim"
        raise WorkloadError(
            f"workload {self.name}: program must be a Relax IRModule or a TE/TIR PrimFunc, got {type(self.program).__name__}"
        )

    def with_pipeline(self, pipeline: str, tuning_db: str | None = None) -> "Workload":
        """The same workload compiled with another pipeline (see ``pipeline``)."""
        db = tuning_db if tuning_db is not None else self.tuning_db
        smaller = self.simulate_as.with_pipeline(pipeline, tuning_db) if self.simulate_as is not None else None
        return replace(self, pipeline=pipeline, tuning_db=db, simulate_as=smaller)

    def inputs(self, seed: int | None = None, dims: Mapping[str, int] | None = None) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return [np.ascontiguousarray(a) for a in self.make_inputs(rng, dict(self.dims if dims is None else dims))]

    def call_args(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The arguments of one call: the inputs, then the run-time weights (``params``)."""
        return [*inputs, *(a for _, a in self.params)]

    def expected(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = self.reference(*inputs)
        return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
