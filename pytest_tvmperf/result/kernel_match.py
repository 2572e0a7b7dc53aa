"""Pure: the kernels of a build matched with its baseline's by what they are, not by name.

TVM numbers kernels in the order it meets them, so one changed layer renames the kernels
after it (``conv2d19`` becomes ``conv2d20``), and matching by name compares two different
kernels. With both sides' :class:`~pytest_tvmperf.values.kernel_id.KernelId`:

1. same code (equal structural hash): the same kernel, whatever its name now;
2. left over, same op and shapes: the same kernel with its code **changed** (a schedule,
   a TVM upgrade);
3. left over, same op: the kernel of the same layer **changed** shape (a 3x3 conv made
   5x5), the same name first, then so that the pairs share the most parameter shapes
   (:func:`match_kernels`: the first layer of two made wider shares its input with its old
   self, the second its output), then in name order (a baseline keyed by identity sorts
   by code hash, which says nothing of the layer);
4. the rest: **new** kernels of this build, and kernels **removed** since the baseline.

A baseline recorded before kernels were identified has no identities: kernels are then
matched by name (a renamed one by its name without the numbering, result/kernel_names.py), and
:attr:`KernelMatch.note` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Mapping

from pytest_tvmperf.result.kernel_names import renamed
from pytest_tvmperf.values.kernel_id import KernelId
from pytest_tvmperf.values.kernel_keys import device_parts, renamed_sites, stable_key, with_suffix


class KernelStatus(str, Enum):
    SAME = "same"  # same code (maybe under another name)
    CHANGED = "changed"  # the baseline's kernel of the same op, with other code or shapes
    NEW = "new"  # no counterpart in the baseline

    __str__ = str.__str__


#: the note of a match made by name
BY_NAME_NOTE = (
    "kernels matched by name: the baseline has no kernel identities (recorded before tvmperf stored "
    "them); a renumbered kernel may be compared with another one. Re-record it with --tvmperf-update "
    "to match kernels by structure"
)


@dataclass(frozen=True)
class KernelMatch:
    """old_of: {name now: its baseline counterpart's}; status: {name now: KernelStatus} (no entry for a
    VM builtin); removed: the baseline's kernels with no counterpart; before/after: the identities
    (none when matched by name)."""

    old_of: Mapping[str, str] = field(default_factory=dict)
    status: Mapping[str, KernelStatus] = field(default_factory=dict)
    removed: tuple[str, ...] = ()
    before: Mapping[str, KernelId] = field(default_factory=dict)
    after: Mapping[str, KernelId] = field(default_factory=dict)
    by_structure: bool = True

    @property
    def note(self) -> str:
        return "" if self.by_structure else BY_NAME_NOTE

    def listing(self, texts: Mapping[str, str] | None) -> dict[str, str] | None:
        """VM bytecode with each ``call <kernel>`` as :meth:`shown_name` names it (a diff shows changed calls)."""
        if texts is None or not self.by_structure:
            return None if texts is None else dict(texts)
        callee = lambda m: f"{m.group(1)}{self.shown_name(m.group(2))}{m.group(3)}"  # noqa: E731
        return {fn: re.sub(r"^(call )(\S+)( |$)", callee, text, flags=re.MULTILINE) for fn, text in texts.items()}

    def label(self, name: str, old: bool = False) -> str:
        """What a user recognises: the source layer, ``layer3.0.conv2 (Conv2d 5x5) [fused_conv2d1_add_relu]``,
        else what it computes, ``conv2d_add_relu(1x8x16x16, ...) -> 1x8x16x16 [...]``; a CUDA kernel
        as the kernel that launches it, under its own name; the bare name without an identity."""
        kernels = self.before if old else self.after
        ident = kernels.get(name) or kernels.get(self.launcher(name, old))
        return f"{ident.describe()} [{name}]" if ident is not None else name

    def launcher(self, name: str, old: bool = False) -> str:
        """The kernel (``old``: the baseline's) launching CUDA kernel ``name`` (``K_kernel``: ``K``), or ``name``."""
        kernels = self.before if old else self.after
        host, suffix = device_parts(name)
        return host if suffix and name not in kernels and host in kernels else name

    def devices_by_name(self, stored: Mapping[str, float] | None) -> bool:
        """Does the baseline's per-kernel map ``stored`` key its CUDA kernels by TVM name, though
        its kernels by identity (a file of before they were keyed so)? Then they compare by name."""
        return self.by_structure and any(
            device_parts(k)[1] and k not in self.before and device_parts(k)[0] not in self.before for k in stored or ()
        )

    def translate(
        self, counts: Mapping[str, float] | None, stored: Mapping[str, float] | None = None
    ) -> dict[str, float] | None:
        """A map of this build's kernels under their baseline names (:meth:`key_name`), to compare key by
        key with ``stored``, the baseline's (where it keys CUDA kernels by TVM name, they keep theirs)."""
        if counts is None:
            return None
        if not self.by_structure:  # matched by name: the names are compared as they are
            return dict(counts)
        by_name = self.devices_by_name(stored)
        out: dict[str, float] = {}
        for name, value in counts.items():
            key = name if by_name and self.launcher(name) != name else self.key_name(name)
            out[key] = out.get(key, 0) + value
        return out

    def key_name(self, name: str) -> str:
        """This build's kernel under its baseline counterpart's name; a new one as :meth:`new_name`
        shows it; a CUDA kernel under its launcher's, with its suffix (``matmul_add@22ce49974e_kernel``)."""
        status = self.status.get(name)
        if status is None and self.by_structure and self.launcher(name) != name:
            return with_suffix(self.key_name(self.launcher(name)), device_parts(name)[1])
        if status is None or not self.by_structure:
            return name
        return self.new_name(name) if status == KernelStatus.NEW else self.old_of[name]

    def shown_name(self, name: str) -> str:
        """This build's kernel under its baseline name (``name [changed]``), a new one as :meth:`new_name`."""
        status = self.status.get(name)
        if status is None or not self.by_structure:
            return name
        return self.key_name(name) + (" [changed]" if status == KernelStatus.CHANGED else "")

    def baseline_sites(self, parts: Mapping[str, int] | None) -> dict[str, int] | None:
        """A baseline's resource parts (``K``, ``output of K``) with each kernel under the name this
        build gives its counterpart, so a changed kernel's part reads as one ``before -> after``,
        not one removed and one added. A removed kernel keeps its key (``K [removed]`` where this
        build has another ``K``); a site that names no kernel is kept as it is."""
        if parts is None:
            return None
        names = {old: new for new, old in self.old_of.items()}
        names.update({old: f"{old} [removed]" for old in self.removed if old in self.status})
        return renamed_sites(parts, names)

    def new_name(self, name: str) -> str:
        """A new kernel under its TVM name, unless the baseline has another kernel of that name (a new
        5x5 ``conv2d1`` as the 3x3 was): then under its identity key (``conv2d_add_relu@02f7e9c10c [new]``)."""
        ident = self.after.get(name)
        if name not in self.before or ident is None:
            return name
        return f"{stable_key(ident)} [new]"


def match_kernels(
    before: Mapping[str, KernelId] | None,
    after: Mapping[str, KernelId] | None,
    before_names: tuple[str, ...] = (),
    after_names: tuple[str, ...] = (),
) -> KernelMatch:
    """Match this build's kernels (``after``) with the baseline's (``before``); without identities
    on either side, those named in ``before_names`` / ``after_names`` by name."""
    if not before or not after:
        return _by_name(before_names or tuple(before or ()), after_names or tuple(after or ()))
    old_left = sorted(before)
    new_left = sorted(after)
    old_of: dict[str, str] = {}
    status: dict[str, KernelStatus] = {}

    def pair(key, kind: KernelStatus) -> None:
        groups: dict[object, list[str]] = {}
        for old in old_left:
            groups.setdefault(key(before[old]), []).append(old)
        for new in list(new_left):
            candidates = groups.get(key(after[new]))
            if not candidates:
                continue
            old = new if new in candidates else candidates[0]  # the same name first, else in name order
            candidates.remove(old)
            old_left.remove(old)
            new_left.remove(new)
            old_of[new], status[new] = old, kind

    pair(lambda k: k.key, KernelStatus.SAME)
    pair(lambda k: (k.op, k.shapes), KernelStatus.CHANGED)
    for op in sorted({before[old].op for old in old_left}):
        # step 3 (above): as many pairs as the shorter side has; among equals, the earliest old kernel
        olds = [old for old in old_left if before[old].op == op]
        news = [new for new in new_left if after[new].op == op]
        if not news or not olds:
            continue
        score = [[_shared(after[n], before[o]) + SAME_NAME * (n == o) for o in olds] for n in news]
        for i, j in _best_assignment(score):
            new, old = news[i], olds[j]
            old_of[new], status[new] = old, KernelStatus.CHANGED
            old_left.remove(old)
            new_left.remove(new)
    status.update({new: KernelStatus.NEW for new in new_left})
    return KernelMatch(old_of, status, tuple(old_left), dict(before), dict(after))


#: the most (new kernels x subsets of the baseline's) of one op left over that are paired by
#: the best assignment; beyond (a rebuilt network, not a changed layer), each new kernel in
#: name order takes its best one left
BEST_PAIRING_STATES = 1 << 14


#: a pair under one name outweighs any shapes shared (every shape of a kernel: under 100)
SAME_NAME = 100


def _shared(a: KernelId, b: KernelId) -> int:
    """The parameter shapes two kernels of one op share: inputs by position, and the output."""
    x, y = a.shapes.split(","), b.shapes.split(",")
    return sum(1 for i, j in zip(x[:-1], y[:-1]) if i == j) + (x[-1] == y[-1])


def _best_assignment(score: list[list[int]]) -> list[tuple[int, int]]:
    """(row, column) pairs, as many as the shorter side has, of the greatest total score (among equals,
    the earliest columns); beyond :data:`BEST_PAIRING_STATES`, each row takes its best column left."""
    rows, cols = len(score), len(score[0])
    if rows << cols > BEST_PAIRING_STATES:
        left, out = list(range(cols)), []
        for i, row in enumerate(score):
            if left:
                j = max(left, key=lambda c, row=row: (row[c], -c))
                left.remove(j)
                out.append((i, j))
        return out

    @lru_cache(maxsize=None)
    def best(i: int, used: int) -> tuple[tuple[int, int], tuple[tuple[int, int], ...]]:
        """((pairs, total score), the pairs) of rows i.., the columns in ``used`` taken."""
        if i == rows:
            return (0, 0), ()
        options = []
        for j in range(cols):
            if not used >> j & 1:
                (n, total), rest = best(i + 1, used | 1 << j)
                options.append(((n + 1, total + score[i][j]), ((i, j), *rest)))
        options.append(best(i + 1, used))  # row i left unpaired
        return max(options, key=lambda o: o[0])  # max keeps the first of equals: the earliest column

    return list(best(0, 0)[1])


def _by_name(before: tuple[str, ...], after: tuple[str, ...]) -> KernelMatch:
    """The fallback: equal names, then renamed ones (result/kernel_names.py's heuristic)."""
    old_of = {n: n for n in after if n in before}
    old_of.update(renamed({n: 0.0 for n in before}, {n: 0.0 for n in after}))
    status = {n: (KernelStatus.SAME if n in old_of else KernelStatus.NEW) for n in after}
    removed = tuple(sorted(set(before) - set(old_of.values())))
    return KernelMatch(old_of, status, removed, by_structure=False)
