"""``alloc_bytes``: what the VM allocates at run time in one call, read by the instrument
that counts its executed calls (``vm.set_instrument`` sees each call's arguments and result).

Each ``vm.builtin.alloc_storage`` call allocates ``size x dtype`` bytes (dynamic shapes
included). Its site is the first call other than a VM builtin handed a tensor made from
it (``output of fused_matmul_add``; a kernel called twice adds up), else ``returned or
unused``; the tensors ``vm.builtin.alloc_tensor`` makes from it are views and allocate
nothing. The bytes asked of the allocator are counted, not what a pooled allocator
reserves: the same on every machine. :class:`AllocCounter` touches only the calls'
arguments' ``shape``, ``dtype`` and ``same_as``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from pytest_tvmperf.values.kernel_keys import OUTPUT_OF

#: the site of a storage that no kernel was handed (the result, or nothing)
UNUSED_SITE = "returned or unused"


@dataclass(frozen=True)
class Allocations:
    """One call's allocations: total bytes and bytes by site."""

    total: int
    sites: Mapping[str, int]


def _bytes_of(size: Any, dtype: Any) -> int:
    """``alloc_storage``'s size (a shape, a count of ``dtype`` elements) in bytes."""
    count = 1
    for dim in size if hasattr(size, "__len__") else [size]:
        count *= int(dim)
    match = re.match(r"^[a-z]+?(\d+)(x\d+)?$", str(dtype).strip())
    bits = int(match.group(1)) * (int(match.group(2)[1:]) if match.group(2) else 1) if match else 8
    return count * max(bits // 8, 1)


@dataclass
class AllocCounter:
    """The allocations of the calls it observes (one entry call: a fresh counter each)."""

    #: [site or None, bytes, the storage] per storage allocated, in order
    storages: list[list[Any]] = field(default_factory=list)
    #: (tensor, index into storages) of the views made from each storage, not yet handed to a kernel
    views: list[tuple[Any, int]] = field(default_factory=list)
    #: why the allocations could not be read (an argument of a form not known here): n/a, never a failed run
    problem: str = ""

    def observe(self, name: str, before_run: bool, ret_value: Any, args: tuple) -> None:
        """One call as the instrument sees it; it never raises (the VM would stop)."""
        if self.problem:
            return
        try:
            if name == "vm.builtin.alloc_storage" and not before_run and len(args) >= 4:
                self.storages.append([None, _bytes_of(args[1], args[3]), ret_value])
            elif name == "vm.builtin.alloc_tensor" and not before_run and args:
                index = next(
                    (i for i, s in enumerate(self.storages) if s[2] is not None and _same(s[2], args[0])), None
                )
                if index is not None:
                    self.views.append((ret_value, index))
            elif before_run and not name.startswith("vm.builtin.") and self.views:
                kept = []
                for tensor, index in self.views:
                    if any(_same(tensor, a) for a in args):
                        if self.storages[index][0] is None:
                            self.storages[index][0] = f"{OUTPUT_OF}{name}"
                    else:
                        kept.append((tensor, index))
                self.views = kept
        except Exception as exc:  # noqa: BLE001  (any: the program's run must go on)
            self.problem = f"{name}'s arguments could not be read ({type(exc).__name__}: {exc})"

    def result(self) -> "Allocations | str":
        """The allocations, or why they could not be read."""
        if self.problem:
            return self.problem
        sites: dict[str, int] = {}
        for site, size, _ in self.storages:
            key = site or UNUSED_SITE
            sites[key] = sites.get(key, 0) + size
        return Allocations(sum(size for _, size, _ in self.storages), sites)


def _same(a: Any, b: Any) -> bool:
    same_as = getattr(a, "same_as", None)
    try:
        return bool(same_as(b)) if same_as is not None else a is b
    except Exception:  # an argument of another kind (an int, a string)
        return False
