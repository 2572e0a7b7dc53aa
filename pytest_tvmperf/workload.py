"""The :class:`Workload` value: what to compile, how to feed it and what it must compute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

InputMaker = Callable[[np.random.Generator, Mapping[str, int]], Sequence[np.ndarray]]
Reference = Callable[..., "np.ndarray | Sequence[np.ndarray]"]


class WorkloadError(ValueError):
    """A workload definition that cannot be used, with what to fix."""


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

    def __post_init__(self) -> None:
        if not self.name:
            raise WorkloadError("a Workload needs a non-empty name")
        if not callable(self.make_inputs):
            raise WorkloadError(f"workload {self.name}: make_inputs must be callable(rng, dims)")
        if not callable(self.reference):
            raise WorkloadError(f"workload {self.name}: reference must be callable(*inputs)")
        if self.rtol < 0 or self.atol < 0:
            raise WorkloadError(f"workload {self.name}: rtol and atol must be >= 0")
        for dim, bounds in self.dim_ranges.items():
            if len(bounds) != 2 or not 1 <= bounds[0] <= bounds[1]:
                raise WorkloadError(f"workload {self.name}: dim_ranges[{dim!r}] must be (low, high) with 1 <= low <= high")
        missing = set(self.dim_ranges) - set(self.dims)
        if missing:
            raise WorkloadError(f"workload {self.name}: dims needs a value for {sorted(missing)} (used for the timed run)")
        kind = self.kind  # validates the program type
        if kind == "relax":
            names = [gv.name_hint for gv in self.program.get_global_vars()]
            if self.entry not in names:
                raise WorkloadError(f"workload {self.name}: entry {self.entry!r} not in the module (functions: {', '.join(sorted(names))})")

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

    def inputs(self, seed: int | None = None, dims: Mapping[str, int] | None = None) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return [np.ascontiguousarray(a) for a in self.make_inputs(rng, dict(self.dims if dims is None else dims))]

    def expected(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = self.reference(*inputs)
        if isinstance(out, (list, tuple)):
            return [np.asarray(o) for o in out]
        return [np.asarray(out)]
