"""Combinations a test can never run, left out at collection: a Relax test under ``prim``
and a PrimFunc test under a VM executor.

A test's workload is built inside the test, so the baselines tell its kind: an entry
recorded under a VM executor ran a Relax module, one under ``prim`` a PrimFunc. For a test
whose recorded entries are all of one kind, the other kind's combinations are not
generated (one summary line says so). Under ``--tvmperf-update`` every combination is
generated (a test whose workload changed kind re-records under its new executors)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from pytest_tvmperf.config.parsing import EXECUTORS, TARGETS
from pytest_tvmperf.values.executor_rows import is_prim

VM_EXECUTORS = frozenset(e for e in EXECUTORS if not is_prim(e))
PRIM_EXECUTORS = frozenset(e for e in EXECUTORS if e not in VM_EXECUTORS)


def without_combo(test_id: str) -> str:
    """``test_mlp[llvm-vm-bytecode-tuned]`` -> ``test_mlp[-tuned]``: the test id with its
    executor x target part taken out (longest match first), so its combinations share a key;
    a remote device's part (``rpc:KEY-llvm-prim``) goes with it: the workload's kind is one
    wherever it ran."""
    for combo in sorted((f"{t}-{e}" for t in TARGETS for e in EXECUTORS), key=len, reverse=True):
        if combo in test_id:
            return re.sub(r"(?:rpc:[A-Za-z0-9_.\-]+?-)?" + re.escape(combo), "", test_id, count=1)
    return test_id


def recorded_kinds(records: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """test id without its combination -> the kinds ("relax", "prim") its entries ran,
    from ``records`` (test id -> the executor it was recorded under)."""
    kinds: dict[str, set[str]] = {}
    for test_id, executor in records.items():
        kind = "relax" if executor in VM_EXECUTORS else "prim" if executor in PRIM_EXECUTORS else ""
        if kind:
            kinds.setdefault(without_combo(test_id), set()).add(kind)
    return {k: frozenset(v) for k, v in kinds.items()}


def never_runs(executor: str, kinds: Iterable[str]) -> bool:
    """Can ``executor`` never run a test whose recorded entries ran only ``kinds``?"""
    kinds = frozenset(kinds)
    if kinds == {"relax"}:
        return executor in PRIM_EXECUTORS
    if kinds == {"prim"}:
        return executor in VM_EXECUTORS
    return False


@dataclass(frozen=True)
class LeftOut:
    """What collection left out: counts by what could not run where."""

    relax_under_prim: int = 0
    prim_under_vm: int = 0

    def line(self) -> str:
        parts = []
        if self.relax_under_prim:
            parts.append(f"{self.relax_under_prim} Relax test id(s) under prim")
        if self.prim_under_vm:
            parts.append(f"{self.prim_under_vm} PrimFunc test id(s) under a VM executor")
        if not parts:
            return ""
        return (
            f"tvmperf: not generated, as they can never run: {' and '.join(parts)} (the workload's kind is "
            f"known from its recorded baselines; --tvmperf-update generates every combination)"
        )


def left_out_items(session, items: list) -> tuple[list, LeftOut]:
    """``items`` without the combinations that can never run, judged from each module's
    baseline file (an unreadable file leaves everything in: its tests report it)."""
    from pytest_tvmperf.combos import combo_of
    from pytest_tvmperf.values.node_ids import test_id
    from pytest_tvmperf.store.files import BaselineError, baseline_path

    kept, relax_prim, prim_vm = [], 0, 0
    kinds_of: dict = {}
    for item in items:
        combo = combo_of(item)
        if combo is None:
            kept.append(item)
            continue
        path = baseline_path(session.settings.baseline_dir, session.rootpath, item.path)
        if path not in kinds_of:
            try:
                records = session.store.baselines(path)
            except BaselineError:
                records = {}
            kinds_of[path] = recorded_kinds({tid: r.executor for tid, r in records.items()})
        kinds = kinds_of[path].get(without_combo(test_id(item.nodeid)), frozenset())
        if not never_runs(combo.executor, kinds):
            kept.append(item)
        elif combo.executor in PRIM_EXECUTORS:
            relax_prim += 1
        else:
            prim_vm += 1
    return kept, LeftOut(relax_prim, prim_vm)
