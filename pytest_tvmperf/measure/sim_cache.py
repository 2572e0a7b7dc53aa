"""The simulated cost's counts, kept in the plugin's cache (store/user_cache.py) by what
determines them, so unchanged code is counted once per machine, not once per run.

A count is deterministic given the pinned build's bytes, the call's inputs, the function
and the measuring setup (valgrind's and TVM's versions, this plugin's harness and dump
reader: docs/gate.md, "Simulated cost"), so the count stored under their hash is what a
new measurement would give. ``TVMPERF_SIMULATE_CACHE=off`` measures every time. Entries
are protected as the cache's builds are (user-owned 0700 directories, sealed files); one
that does not check out is measured again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Mapping, Sequence

from pytest_tvmperf.store import user_cache
from pytest_tvmperf.store.artifacts import file_sha256

ENV_SWITCH = "TVMPERF_SIMULATE_CACHE"
#: the code whose change changes a count: the harness that runs the call, and the readers
_CODE = ("sim_harness.py", "callgrind.py", "simulate.py", "sim_cache.py")


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "on").strip().lower() not in ("off", "0", "false", "no")


def key(library: Path, inputs: Sequence[Path], func: str, vm: bool, setup: str) -> str:
    import tvm

    digest = hashlib.sha256()
    for part in (setup, str(tvm.__version__), func, str(vm)):
        digest.update(part.encode() + b"\0")
    here = Path(__file__).parent
    for path in (*(here / name for name in _CODE), library, *inputs):
        digest.update(file_sha256(path).encode() + b"\0")
    return digest.hexdigest()


def _path(digest: str) -> Path:
    return user_cache.cache_root() / "simulated" / digest[:2] / f"{digest}.json"


def load(digest: str) -> dict[str, dict[str, int]] | None:
    """The stored counts, or None (none, directories or seal not checking out, not a count)."""
    path = _path(digest)
    if not user_cache.lookup(path):
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and data and all(isinstance(per, dict) for per in data.values())
    if not ok or not all(isinstance(k, str) and type(v) is int for per in data.values() for k, v in per.items()):
        return None
    return data


def save(digest: str, counts: Mapping[str, Mapping[str, int]]) -> None:
    """Store the counts, sealed (a failure to write is no failure of the test: counted again)."""
    path = _path(digest)
    text = json.dumps({m: dict(v) for m, v in counts.items()}, sort_keys=True)
    root = user_cache.cache_root()
    with contextlib.suppress(OSError, user_cache.UnsafeCache):
        user_cache.store(path, lambda temp: temp.write_text(text), root, 0o600, trim_root=root / "simulated")
