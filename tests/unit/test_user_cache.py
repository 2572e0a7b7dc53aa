"""The plugin's cache directory (store/user_cache.py): where it is, what a hit needs,
and its bound."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_tvmperf.store import user_cache


def test_the_cache_lives_outside_every_project():
    assert user_cache.cache_root({"TVMPERF_CACHE_DIR": "/c"}) == Path("/c")
    assert user_cache.cache_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/pytest-tvmperf")
    assert user_cache.cache_root({}) == Path(os.path.expanduser("~")) / ".cache" / "pytest-tvmperf"


def test_the_bound_is_read_from_the_environment():
    assert user_cache.max_bytes({}) == 2048 * 2**20
    assert user_cache.max_bytes({"TVMPERF_CACHE_MAX_MB": "1.5"}) == int(1.5 * 2**20)
    assert user_cache.max_bytes({"TVMPERF_CACHE_MAX_MB": "lots"}) == 2048 * 2**20
    assert user_cache.max_bytes({"TVMPERF_CACHE_MAX_MB": "-1"}) == 2048 * 2**20


def _build(data: bytes):
    return lambda temp: temp.write_bytes(data)


def test_a_hit_needs_the_build_whole_and_unaltered(tmp_path):
    path = tmp_path / "ab" / "fp" / "prim-x.so"
    assert not user_cache.lookup(path)
    user_cache.store(path, _build(b"library"), tmp_path)
    assert user_cache.lookup(path)
    path.write_bytes(b"library, planted over the cached one")
    assert not user_cache.lookup(path)
    path.unlink()
    assert not user_cache.lookup(path)
    user_cache.store(path, _build(b"library"), tmp_path)
    user_cache.drop(path)
    assert not path.exists() and not path.with_name(path.name + ".sha256").exists()


def test_a_failed_build_leaves_nothing(tmp_path):
    path = tmp_path / "ab" / "prim-x.so"

    def broken(temp: Path) -> None:
        temp.write_bytes(b"half")
        raise RuntimeError("code generation failed")

    try:
        user_cache.store(path, broken, tmp_path)
    except RuntimeError:
        pass
    assert list(path.parent.iterdir()) == []


def test_past_its_bound_the_least_recently_used_builds_go(tmp_path, monkeypatch):
    monkeypatch.setenv("TVMPERF_CACHE_MAX_MB", str(2.5 * 1024 / 2**20))  # room for two builds of 1 KiB
    paths = [tmp_path / "ab" / f"prim-{i}.so" for i in range(3)]
    for i, path in enumerate(paths[:2]):
        user_cache.store(path, _build(b"x" * 1024), tmp_path)
        os.utime(path, (1000 + i, 1000 + i))
    assert user_cache.lookup(paths[0])  # used now: the most recent
    user_cache.store(paths[2], _build(b"x" * 1024), tmp_path)
    assert [p.exists() for p in paths] == [True, False, True]
