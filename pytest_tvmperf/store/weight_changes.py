"""Pure: which of a program's weights changed since its baseline, by their digests, as one
line of a failure's diagnosis. A weight is (its description, its sha256): for a seeded
baseline its dtype and shape (``float32[512,512,3,3]``), for one with weight files its
tensor's node in the IR."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

Described = tuple[str, str]  # (description, sha256)


def _listed(items: Sequence[str], limit: int) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def change_line(before: Sequence[Described], after: Sequence[Described], limit: int = 4) -> str:
    """Which weights changed ("" for none): by position while their descriptions are the
    same in the same order (the values changed), else those new and those gone."""
    if list(before) == list(after):
        return ""
    if [d for d, _ in before] == [d for d, _ in after]:
        changed = [f"#{i + 1} {d}" for i, ((d, old), (_, new)) in enumerate(zip(before, after)) if old != new]
        return f"{len(changed)} of {len(before)} weight(s) changed (by sha256): {_listed(changed, limit)}"
    was, now = Counter(before), Counter(after)
    new = [d for d, _ in (now - was).elements()]
    gone = [d for d, _ in (was - now).elements()]
    parts = [
        f"{len(new)} new ({_listed(new, limit)})" if new else "",
        f"{len(gone)} gone ({_listed(gone, limit)})" if gone else "",
    ]
    return (
        f"the weights changed (by sha256): {'; '.join(p for p in parts if p)}; "
        f"{len(after)} now, {len(before)} in the baseline"
    )
