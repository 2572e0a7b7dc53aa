"""Pure: per-kernel times of the baseline and of this run, matched by structure or by name
(a renamed kernel matched to its old self by result/kernel_names.py before it is called
new), so a change that grew it by a few ms does not read as a new kernel taking its whole
time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from pytest_tvmperf.result.kernel_names import renamed

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.result.kernel_match import KernelMatch

#: per-kernel changes smaller than this are noise of the per-kernel timer, not shown
MIN_KERNEL_DELTA_S = 1e-6


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
