"""Baseline files: one JSON file per test module, keyed by test id.

Sorted keys and a fixed indent so a re-record reads as a small diff in review.
Writes take a lock, re-read the file, merge, and replace it atomically (temp file +
fsync + ``os.replace``), so an interrupted update or several xdist workers lose nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

from .record import Record

SCHEMA_VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be used, with the way to fix it."""


def baseline_path(baseline_dir: Path, rootpath: Path, module_path: Path) -> Path:
    """``baselines/<module path relative to the rootdir>.json``."""
    try:
        rel = module_path.resolve().relative_to(rootpath.resolve())
    except ValueError:
        rel = Path(module_path.name)
    return baseline_dir / rel.with_suffix(".json")


def _fix_hint(path: Path) -> str:
    return f"delete {path} and run `pytest --tvmperf-update` to record it again (or restore it from version control)"


def parse_baselines(text: str, path: Path) -> dict[str, Record]:
    """Parse a baseline file's text; raise BaselineError naming the file and the fix."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline file {path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); {_fix_hint(path)}") from None
    if not isinstance(data, dict) or "schema_version" not in data or not isinstance(data.get("tests"), dict):
        raise BaselineError(f"baseline file {path} is not a pytest-tvmperf baseline (needs 'schema_version' and 'tests'); {_fix_hint(path)}")
    if data["schema_version"] != SCHEMA_VERSION:
        raise BaselineError(
            f"baseline file {path} has schema version {data['schema_version']!r}, this pytest-tvmperf reads version "
            f"{SCHEMA_VERSION}; re-record it with `pytest --tvmperf-update` (after deleting it)"
        )
    records: dict[str, Record] = {}
    for test_id, entry in data["tests"].items():
        try:
            records[test_id] = Record.from_json(entry)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BaselineError(f"baseline file {path}: entry {test_id!r} is malformed ({type(exc).__name__}: {exc}); {_fix_hint(path)}") from None
    return records


def load_baselines(path: Path) -> dict[str, Record]:
    """Records of ``path``; an empty dict when the file does not exist yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc}); {_fix_hint(path)}") from None
    return parse_baselines(text, path)


def dump_baselines(records: Mapping[str, Record]) -> str:
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tests": {test_id: rec.as_json() for test_id, rec in sorted(records.items())},
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def file_lock(lock: Path) -> Iterator[None]:
    """Hold an exclusive POSIX lock on the file ``lock`` (created if missing); without
    ``fcntl`` (Windows) there is no lock, and writes stay atomic."""
    with open(lock, "a+") as handle:
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover
            pass
        yield


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The baseline directory's ``.tvmperf.lock``, so concurrent writers (xdist
    workers) merge one after another."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path.parent / ".tvmperf.lock"):
        yield


def save_updates(path: Path, updates: Mapping[str, Record]) -> None:
    """Merge ``updates`` into the file at ``path``: the updated test ids are replaced
    (keeping other machines' timings while exact metrics are unchanged), every other
    entry is kept as it was."""
    with _locked(path):
        records = load_baselines(path)
        for test_id, rec in updates.items():
            records[test_id] = rec.merged_over(records.get(test_id))
        atomic_write(path, dump_baselines(records))


def remove_entries(path: Path, test_ids: set[str]) -> list[Record]:
    """Remove ``test_ids`` from the file at ``path`` (the file itself when nothing is
    left); returns the removed records (their artifacts can then be deleted)."""
    with _locked(path):
        records = load_baselines(path)
        removed = [records.pop(t) for t in sorted(test_ids) if t in records]
        if records:
            atomic_write(path, dump_baselines(records))
        elif path.exists():
            path.unlink()
        return removed


def module_of(baseline_file: Path, baseline_dir: Path, rootpath: Path) -> Path:
    """The test module a baseline file belongs to (the inverse of baseline_path)."""
    return rootpath / baseline_file.relative_to(baseline_dir).with_suffix(".py")
