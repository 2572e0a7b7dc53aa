"""The plugin's cache directory (store/user_cache.py): where it is, what a hit needs,
and its bound."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import pytest

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


# ---------------------------------------------------------------- issue 33, case 6: who else writes the cache


@pytest.fixture
def own_config(tmp_path, monkeypatch):
    """The key file in a config directory of the test's own (not the user's)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TVMPERF_CACHE_KEY", raising=False)
    return tmp_path / "config" / "pytest-tvmperf" / "cache-key"


def test_a_planted_library_with_its_sha256_beside_it_is_no_hit(tmp_path, own_config):
    root = tmp_path / "cache"
    path = root / "ab" / "fp" / "prim-x.so"
    user_cache.store(path, _build(b"library"), root)
    assert user_cache.lookup(path, root)
    path.write_bytes(b"planted library")  # a writer of the cache writes both files
    path.with_name(path.name + ".sha256").write_text(hashlib.sha256(b"planted library").hexdigest() + "\n")
    assert not user_cache.lookup(path, root)
    forged = hmac.new(b"a key the planter guessed" * 2, b"planted library", hashlib.sha256).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"hmac-sha256:{forged}\n")
    assert not user_cache.lookup(path, root)
    assert own_config.stat().st_mode & 0o777 == 0o600


def test_the_key_can_come_from_the_environment_and_a_key_file_others_can_read_is_not_used(
    tmp_path, own_config, monkeypatch
):
    monkeypatch.setenv("TVMPERF_CACHE_KEY", "k" * 40)
    assert user_cache.cache_key() == b"k" * 40
    monkeypatch.delenv("TVMPERF_CACHE_KEY")
    key = user_cache.cache_key()
    assert user_cache.cache_key() == key  # the same key from the file each time
    own_config.chmod(0o644)  # readable by others: anyone could seal a planted library
    assert user_cache.cache_key() != key and user_cache.cache_key() != user_cache.cache_key()


@pytest.mark.parametrize(
    "mode, says",
    [(0o775, "writable by its group (mode 775)"), (0o757, "writable by others (mode 757)")],
    ids=["group", "others"],
)
def test_a_cache_directory_others_can_write_is_refused_as_ssh_does(tmp_path, own_config, monkeypatch, mode, says):
    root = tmp_path / "cache"
    path = root / "builds" / "prim-x.so"
    user_cache.store(path, _build(b"library"), root / "builds")
    assert user_cache.lookup(path, root)
    root.chmod(mode)
    assert not user_cache.lookup(path, root)
    monkeypatch.setenv("TVMPERF_CACHE_DIR", str(root))
    problem = user_cache.cache_problem()
    assert problem is not None and says in problem and f"chmod go-w {root}" in problem
    with pytest.raises(user_cache.UnsafeCache, match="writable by"):
        user_cache.builds_dir()
    root.chmod(0o700)
    assert user_cache.cache_problem() is None


def test_new_cache_directories_are_private_whatever_the_umask(tmp_path, own_config, monkeypatch):
    monkeypatch.setenv("TVMPERF_CACHE_DIR", str(tmp_path / "cache"))
    old = os.umask(0o002)
    try:
        folder = user_cache.builds_dir()
    finally:
        os.umask(old)
    assert [p.stat().st_mode & 0o777 for p in (folder.parent, folder)] == [0o700, 0o700]


def test_simulated_counts_get_the_builds_protection_under_umask_000(tmp_path, monkeypatch):
    """Under umask 000 the counts' directories were made 0777 and a count replaced by
    another user (a 12x regression read as 1.85k/1.85k) was reused: now every directory
    from the cache directory down is 0700 and a count whose seal does not match is not
    reused."""
    import json

    from pytest_tvmperf.measure import sim_cache

    monkeypatch.setenv("TVMPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TVMPERF_CACHE_KEY", "k" * 64)
    digest = "ab" + "0" * 62
    old = os.umask(0)
    try:
        sim_cache.save(digest, {"main": {"cpu_instructions": 22_200}})
    finally:
        os.umask(old)
    path = sim_cache._path(digest)
    for directory in (tmp_path / "cache", tmp_path / "cache" / "simulated", path.parent):
        assert oct(os.stat(directory).st_mode & 0o777) == oct(0o700), directory
    assert sim_cache.load(digest) == {"main": {"cpu_instructions": 22_200}}
    path.write_text(json.dumps({"main": {"cpu_instructions": 1_850}}))  # replaced by someone else
    assert sim_cache.load(digest) is None  # measured again


def test_a_cache_bound_that_is_no_number_is_a_clear_error_and_never_crashes_a_build():
    """``TVMPERF_CACHE_MAX_MB=inf`` made the bound's int() fail inside the rebuild, and that
    was reported as TVM failing to rebuild the baseline (a/b timing turned off)."""
    assert user_cache.max_bytes({"TVMPERF_CACHE_MAX_MB": "inf"}) == 2048 * 2**20
    assert user_cache.max_bytes({"TVMPERF_CACHE_MAX_MB": "nan"}) == 2048 * 2**20
    from pytest_tvmperf.config.parsing import parse_size_mb

    for raw in ("inf", "nan", "0", "lots"):  # what a run checks at its start (store/inflate.check_size_variables)
        with pytest.raises(ValueError) as problem:
            parse_size_mb("TVMPERF_CACHE_MAX_MB", raw, user_cache.DEFAULT_MAX_MB)
        assert f"TVMPERF_CACHE_MAX_MB={raw!r}" in str(problem.value) and "TVM " not in str(problem.value)
    assert parse_size_mb("TVMPERF_CACHE_MAX_MB", "512", user_cache.DEFAULT_MAX_MB) == 512 * 2**20
    assert parse_size_mb("TVMPERF_CACHE_MAX_MB", None, user_cache.DEFAULT_MAX_MB) == 2048 * 2**20


def test_a_cache_directory_that_cannot_be_made_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    problem = user_cache.root_problem({"TVMPERF_CACHE_DIR": str(blocker / "cache")})
    assert problem is not None and str(blocker / "cache") in problem
    assert user_cache.root_problem({"TVMPERF_CACHE_DIR": str(tmp_path / "fine")}) is None
