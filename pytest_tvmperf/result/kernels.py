"""Pure: per-kernel times of the baseline and of this run, matched by structure or by (renamed)
name, so a kernel that grew by a few ms does not read as a new kernel taking its whole time."""

from __future__ import annotations

from typing import Mapping

from pytest_tvmperf.result.kernel_match import KernelMatch
from pytest_tvmperf.result.kernel_names import renamed

#: per-kernel changes smaller than this are noise of the per-kernel timer, not shown
MIN_KERNEL_DELTA_S = 1e-6


def kernel_changes(
    before: Mapping[str, float], after: Mapping[str, float], match: KernelMatch | None = None
) -> list[tuple[float, str, str, str]]:
    """(added seconds, name, old name or "", tag) per kernel at least :data:`MIN_KERNEL_DELTA_S` slower,
    largest first; tag "new", or "changed" (by a ``match`` by structure); else matched by name."""
    by_structure = match is not None and match.by_structure
    old_of = dict(match.old_of) if by_structure else renamed(before, after)
    changes = []
    for name, now in after.items():
        status = match.status.get(name) if by_structure else None
        if status is not None:  # a kernel: its counterpart by structure, whatever its name
            old = old_of.get(name) if old_of.get(name) in before else None
            tag = str(status) if str(status) in ("new", "changed") else ""
        else:  # by name (a VM builtin, or no match by structure): the same name, or the one it was renamed from
            old = name if name in before else old_of.get(name)
            tag = "new" if old is None else ""
        delta = now - (before[old] if old is not None else 0.0)
        if delta >= MIN_KERNEL_DELTA_S:
            changes.append((delta, name, old if old not in (None, name) else "", tag))
    changes.sort(key=lambda c: (-c[0], c[1]))
    return changes
