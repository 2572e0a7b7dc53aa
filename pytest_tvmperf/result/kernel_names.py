"""Pure: a renamed kernel (``fused_conv2d_add`` -> ``fused_conv2d_add1``) matched to its old
self by its name, where no structural match (result/kernel_match.py) is at hand."""

from __future__ import annotations

import difflib
import re
from typing import Mapping

#: how alike two kernel names must be (difflib ratio, after the numbering) to be one kernel renamed
RENAME_SIMILARITY = 0.8


def _stem(name: str) -> str:
    """A kernel name without the numbering fusion appends (``fused_matmul2_add2`` -> ``fused_matmul_add``)."""
    return re.sub(r"\d+(?=_|$)", "", name)


def renamed(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, str]:
    """New name -> old name for the kernels only one side has whose names are the same but for
    the numbering, or alike (most alike first, each used once)."""
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
