"""Pure comparison of a workload's outputs with its reference (NumPy, onnxruntime, eager torch, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Mismatch:
    """Why outputs differ from the reference, ready to print."""

    output: int
    problem: str
    detail: str = ""
    #: the values differ beyond the tolerance (the message then says which tolerance, and how to change it)
    tolerance: bool = False

    def message(self, where: str = "") -> str:
        head = f"output {self.output}{' ' + where if where else ''}: {self.problem}"
        return head + (f"\n{self.detail}" if self.detail else "")


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if shape else "()"


def check_outputs(
    actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float
) -> Mismatch | None:
    """First problem found, or None: count, shape, NaN/Inf, then ``|a - e| <= atol + rtol * |e|``."""
    if len(actual) != len(expected):
        return Mismatch(0, f"produced {len(actual)} outputs, the reference {len(expected)}")
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape:
            return Mismatch(i, f"shape {a.shape}, the reference has shape {e.shape}")
        if a.size == 0:
            continue
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        bad = ~np.isfinite(a64)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            kinds = [f"{int(n)} {w}" for n, w in ((np.isnan(a64).sum(), "NaN"), (np.isinf(a64).sum(), "Inf")) if n]
            return Mismatch(
                i,
                f"{' and '.join(kinds)} of {a.size} values (first at {_fmt_index(first, a.shape)})",
                "the workload produced non-finite values; check its inputs, weights and reference",
            )
        if not np.isfinite(e64).all():
            first = int(np.flatnonzero(~np.isfinite(e64))[0])
            return Mismatch(
                i,
                f"the reference has non-finite values (first at {_fmt_index(first, e.shape)})",
                "the reference must be finite to check against; fix the reference or its inputs",
            )
        diff = np.abs(a64 - e64)
        allowed = atol + rtol * np.abs(e64)
        over = diff > allowed
        if over.any():
            worst = int(np.argmax(diff - allowed))
            with np.errstate(over="ignore", divide="ignore"):
                rel = diff / np.maximum(np.abs(e64), np.finfo(np.float64).tiny)
            where = _fmt_index(worst, a.shape)
            return Mismatch(
                i,
                f"{int(over.sum())} of {a.size} values differ from the reference beyond rtol={rtol:g}, atol={atol:g}",
                f"  max abs error {float(diff.max()):.6g}, max rel error {float(rel.max()):.6g}\n"
                f"  worst at {where}: got {a64.flat[worst]:.8g}, expected {e64.flat[worst]:.8g}\n"
                + "  index            got              expected"  # the first few mismatching values
                + "".join(
                    f"\n  {_fmt_index(int(k), a.shape):16} {a64.flat[k]:<16.8g} {e64.flat[k]:.8g}"
                    for k in np.flatnonzero(over)[:5]
                ),
                tolerance=True,
            )
    return None


def mismatch_text(workload, mismatch: Mismatch, where: str = "") -> str:
    """The mismatch's message, with the tolerance and how to change it where values differ beyond it."""
    text = mismatch.message(where)
    return f"{text}\n  {workload.tolerance_note()}" if mismatch.tolerance else text
