"""Issue 33's pure parts: printing strings from data, duplicate keys, huge marker values,
the gzip cap, links under the baseline directory, room to export, the lock's holder."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pytest_tvmperf.config.limits import parse_limit, parse_peer_limit
from pytest_tvmperf.result.text import safe, text_table
from pytest_tvmperf.store import disk, files, inflate, links, locks
from pytest_tvmperf.values.json_fields import find_duplicate_key, loads


@pytest.mark.parametrize(
    "text, shown",
    [
        ("::error file=a.py::owned", "\\x3a:error file=a.py::owned"),
        ("   ::stop-commands::t", "   \\x3a:stop-commands::t"),
        ("a\n::error::x", "a\\n::error::x"),
        ("esc\x1b[2Jx\u2028y\r", "esc\\x1b[2Jx\\u2028y\\r"),
        ("test_a[llvm-prim] ünï :: fine", "test_a[llvm-prim] ünï :: fine"),
    ],
    ids=["leading", "after-blanks", "newline", "control", "plain"],
)
def test_safe_escapes_control_characters_and_a_leading_double_colon(text, shown):
    assert safe(text) == shown


def test_a_table_never_prints_a_cell_as_a_line_of_its_own():
    lines = text_table(["test"], [["::error::x\nby a file"]])
    assert lines[1] == "\\x3a:error::x\\nby a file"


def test_a_key_written_twice_is_found_with_its_path():
    data = loads('{"tests": {"t": {"exact": {"kernels": 1, "kernels": 2}}}}')
    assert find_duplicate_key(data) == (("tests", "t", "exact"), "kernels")
    assert data["tests"]["t"]["exact"]["kernels"] == 2  # still a dict for every other reader
    assert find_duplicate_key(loads('{"a": {"b": 1}, "c": [{"d": 1}]}')) is None
    with pytest.raises(files.BaselineError, match=r"entry 't' is written twice under 'tests'"):
        files.parse_baselines('{"schema_version": 1, "tests": {"t": {}, "t": {}}}', Path("b.json"))


def test_a_marker_value_too_long_for_text_gets_the_hint():
    with pytest.raises(ValueError, match=r"bad threshold instructions=<a whole number of about 5001 digits>: write"):
        parse_limit("instructions", 10**5000)
    with pytest.raises(ValueError, match=r"bad vs_torch=<a whole number of about 5001 digits>"):
        parse_peer_limit("vs_torch", 10**5000)
    assert parse_limit("instructions", 10**20).absolute == 1e20


def test_inflate_stops_at_the_cap():
    bomb = gzip.compress(b"x" * (2 * 2**20))
    assert inflate.inflate(bomb, 2 * 2**20) == b"x" * (2 * 2**20)
    with pytest.raises(inflate.TooLarge, match="inflates to more than 1 MiB"):
        inflate.inflate(bomb, 2**20)


def test_the_first_link_under_the_baseline_directory_is_named_never_followed(tmp_path):
    base = tmp_path / "baselines"
    (base / "tests").mkdir(parents=True)
    assert links.symlink_problem(base) is None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "deep").mkdir()
    (base / "tests" / "sub").symlink_to(outside)
    problem = links.symlink_problem(base)
    assert problem is not None and problem.startswith(f"{base / 'tests' / 'sub'} is a symbolic link (to {outside})")
    assert links.symlink_problem(tmp_path / "missing") is None
    (tmp_path / "linked").symlink_to(base)
    assert "is a symbolic link" in links.symlink_problem(tmp_path / "linked")


def test_room_to_export_needs_free_disk_and_a_file_size_limit_above_it(tmp_path, monkeypatch):
    import resource

    assert disk.room_problem(tmp_path, need=1) is None
    monkeypatch.setattr(resource, "getrlimit", lambda which: (4096, resource.RLIM_INFINITY))
    assert "at most 4 KiB (ulimit -f)" in disk.room_problem(tmp_path, need=2**20)


def test_a_lock_timeout_names_the_holder(tmp_path):
    lock = tmp_path / "x.lock"
    with locks.file_lock(lock):
        assert locks.lock_holder(lock) is not None
        error = locks.LockTimeout(lock, 1.0, locks.lock_holder(lock))
    holder = locks.lock_holder(lock)
    assert str(error) == f"process {holder.pid} ({holder.command}) holds the lock {lock}"
