"""Pure: per-kernel times of the baseline and of this run, matched by name, and a renamed
kernel (fusion numbering moved: ``fused_conv2d_add`` -> ``fused_conv2d_add1``) matched to
its old self before it is called new, so a change that grew it by a few ms does not read
as a new kernel taking its whole time."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.result.kernel_match import KernelMatch

#: per-kernel changes smaller than this are noise of the per-kernel timer, not shown
MIN_KERNEL_DELTA_S = 1e-6
#: how alike two kernel names must be (difflib ratio, after the numbering) to be one kernel renamed
RENAME_SIMILARITY = 0.8


def _stem(name: str) -> str:
    """A kernel name without the numbering fusion appends (``fused_matmul2_add2`` -> ``fused_matmul_add``)."""
    return re.sub(r"\d+(?=_|$)", "", name)


def renamed(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, str]:
    """New name -> old name for the kernels that only one side has, paired when their names
    are the same but for the numbering, or alike (most alike first; each used once); the
    rest stay new or gone."""
    gone = [n for n in before if n not in after]
    new = [n for n in after if n not in before]
    pairs = []
    for n in new:
        for g in gone:
            same_stem = _stem(n) == _stem(g)
            score = 2.0 if same_stem else difflib.SequenceMatcher(None, _stem(n), _stem(g)).ratio()
            if same_stem or score >= RENAME_SIMILARITY:
                # among equals, the closest time (the same kernel takes about the same time)
                closeness = -abs(after[n] - before[g]) / max(after[n], before[g], 1e-12)
                pairs.append((score, closeness, n, g))
    out: dict[str, str] = {}
    used: set[str] = set()
    for _, _, n, g in sorted(pairs, key=lambda p: (-p[0], -p[1], p[2], p[3])):
        if n not in out and g not in used:
            out[n] = g
            used.add(g)
    return out


def kernel_changes(
    before: Mapping[str, float], after: Mapping[str, float], match: "KernelMatch | None" = None
) -> list[tuple[float, str, str, str]]:
    """(added seconds, name, old name or "", tag) per kernel that takes longer now, largest
    first; tag "new" for a kernel with no counterpart in the baseline ("changed" for one
    whose code or shapes changed, with ``match``). Changes under :data:`MIN_KERNEL_DELTA_S`
    are left out. ``match`` (result/kernel_match.py) pairs kernels by structure; without
    one, or one made by name, a kernel is matched by its name or renamed one."""
    by_structure = match is not None and match.by_structure
    old_of = dict(match.old_of) if by_structure else renamed(before, after)
    changes = []
    for name, now in after.items():
        status = match.status_of(name) if by_structure else None
        if status is not None:  # a kernel: its counterpart by structure, whatever its name
            old = old_of.get(name)
            old = old if old in before else None
            delta = now - (before[old] if old is not None else 0.0)
            if delta >= MIN_KERNEL_DELTA_S:
                tag = "new" if str(status) == "new" else ("changed" if str(status) == "changed" else "")
                changes.append((delta, name, old if old not in (None, name) else "", tag))
            continue
        old = name if name in before else old_of.get(name)
        delta = now - (before[old] if old is not None else 0.0)
        if delta >= MIN_KERNEL_DELTA_S:
            changes.append((delta, name, old if old not in (None, name) else "", "new" if old is None else ""))
    changes.sort(key=lambda c: (-c[0], c[1]))
    return changes
