"""Baseline files: one JSON file per test module, keyed by test id, with sorted keys and a
fixed indent so a re-record reads as a small diff. Writes take a lock, re-read, merge and
replace the file atomically (temp file + fsync + ``os.replace``): an interrupted update or
several xdist workers lose nothing. Reads take regular files only (a FIFO at a baseline
path is an error, not a hang); every entry is checked (``schema.py``) before it is used.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from pytest_tvmperf.values.record import Record
from pytest_tvmperf.values.kernel_keys import keyed_by_identity
from pytest_tvmperf.store.rerecord import dump_text, unchanged
from pytest_tvmperf.store.schema import check_entry
from pytest_tvmperf.store.locks import file_lock, lock_dir
from pytest_tvmperf.values.json_fields import SchemaProblem, check_schema_version, dotted, find_duplicate_key
from pytest_tvmperf.values.json_fields import find_long_int, loads, long_int_problem

SCHEMA_VERSION = 1
#: where the baselines of test modules outside pytest's rootdir go, under their absolute path
OUTSIDE_ROOTDIR = "_outside_rootdir"
#: the longest a writer outside a pytest run waits for the baselines lock (the run gives its --tvmperf-lock-timeout)
DEFAULT_BASELINES_LOCK_S = 900.0


class BaselineError(Exception):
    """A baseline file that cannot be used, with the way to fix it."""


def baseline_path(baseline_dir: Path, rootpath: Path, module_path: Path) -> Path:
    """``baselines/<module path relative to the rootdir>.json``; a module outside the
    rootdir gets ``baselines/_outside_rootdir/<its absolute path>.json``, so two modules
    of the same name never share a file."""
    module = module_path.resolve()
    try:
        rel = module.relative_to(rootpath.resolve())
    except ValueError:
        rel = Path(OUTSIDE_ROOTDIR, *module.parts[1:])
    return baseline_dir / rel.with_suffix(".json")


def module_of(baseline_file: Path, baseline_dir: Path, rootpath: Path) -> Path:
    """The test module a baseline file belongs to (the inverse of baseline_path)."""
    rel = baseline_file.relative_to(baseline_dir).with_suffix(".py")
    if rel.parts and rel.parts[0] == OUTSIDE_ROOTDIR:
        return Path(rootpath.resolve().anchor, *rel.parts[1:])
    return rootpath / rel


def _fix_hint(path: Path) -> str:
    return f"delete {path} and run `pytest --tvmperf-update` to record it again (or restore it from version control)"


#: the fix of one entry's malformed field
_ENTRY_FIX = (
    "fix that field, or delete the entry and re-record it with `pytest --tvmperf-update` (or restore the file "
    "from version control)"
)


def read_regular_text(path: Path) -> str:
    """The UTF-8 text of the regular file at ``path``; FileNotFoundError, or OSError for
    anything else (a FIFO would block a plain read: it is opened non-blocking, checked first)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kinds = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket"}
            kinds |= {stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}
            raise OSError(f"it is {kinds.get(stat.S_IFMT(mode), 'not a regular file')}, not a regular file")
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read()
    finally:
        if fd >= 0:
            os.close(fd)
    return data.decode("utf-8")


def parse_baselines(text: str, path: Path) -> dict[str, Record]:
    """A baseline file's records; BaselineError naming the file, the test id, the field and the fix."""
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"baseline file {path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); {_fix_hint(path)}"
        ) from None
    except RecursionError:
        raise BaselineError(
            f"baseline file {path} is nested too deeply to be a baseline file; {_fix_hint(path)}"
        ) from None
    if (found := find_long_int(data)) is not None:
        where, long_int = found
        if len(where) > 2 and where[0] == "tests":
            raise BaselineError(
                f"baseline file {path}: entry {where[1]!r} is malformed: field {dotted(where[2:])}: "
                f"{long_int_problem(long_int)}; {_ENTRY_FIX}"
            )
        raise BaselineError(
            f"baseline file {path}: field {dotted(where)}: {long_int_problem(long_int)}; {_fix_hint(path)}"
        )
    _no_duplicate_key(data, path)
    if not isinstance(data, dict) or "schema_version" not in data or not isinstance(data.get("tests"), dict):
        raise BaselineError(
            f"baseline file {path} is not a pytest-tvmperf baseline (needs 'schema_version' and 'tests'); {_fix_hint(path)}"
        )
    if not check_schema_version(data["schema_version"], SCHEMA_VERSION):
        raise BaselineError(
            f"baseline file {path} has schema version {json.dumps(data['schema_version'])}, this pytest-tvmperf reads version "
            f"{SCHEMA_VERSION}; re-record it with `pytest --tvmperf-update` (after deleting it)"
        )
    records: dict[str, Record] = {}
    for test_id, entry in data["tests"].items():
        try:
            check_entry(test_id, entry)
            records[test_id] = Record.from_json(entry)
        except SchemaProblem as exc:
            raise BaselineError(f"baseline file {path}: entry {test_id!r} is malformed: {exc}; {_ENTRY_FIX}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BaselineError(
                f"baseline file {path}: entry {test_id!r} is malformed ({type(exc).__name__}: {exc}); {_fix_hint(path)}"
            ) from None
    return records


def _no_duplicate_key(data: Any, path: Path) -> None:
    """BaselineError for a key written twice in one object (JSON keeps the last silently:
    a reviewer would read one value and the gate use another)."""
    if (found := find_duplicate_key(data)) is None:
        return
    where, key = found
    fix = (
        "keep one of them (the one you mean), or delete the entry and re-record it with "
        "`pytest --tvmperf-update` (or restore the file from version control)"
    )
    if where == ("tests",):
        raise BaselineError(f"baseline file {path}: entry {key!r} is written twice under 'tests'; {fix}")
    if len(where) >= 2 and where[0] == "tests":
        raise BaselineError(
            f"baseline file {path}: entry {where[1]!r} is malformed: key {key!r} is written twice in "
            f"{'field ' + dotted(where[2:]) if where[2:] else 'the entry itself'}; {fix}"
        )
    raise BaselineError(
        f"baseline file {path}: key {key!r} is written twice in {dotted(where) or 'the top level'}; {fix}"
    )


#: a write that failed for want of room: a full disk, a quota, a file size limit (``ulimit -f``)
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: a write that failed for want of permission: the mode, the owner, a read-only file system
NO_PERMISSION = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def write_advice(exc: OSError, where: str) -> str:
    """What to do about a write into ``where`` that failed with ``exc``, by its cause (issue 66: a
    full disk once got the advice for a permission error)."""
    if exc.errno in DISK_FULL:
        return (
            f"the disk holding {where} is full (or past its quota or file size limit): free space there, then run again"
        )
    if exc.errno in NO_PERMISSION:
        return f"make {where} writable by this user"
    return f"check {where} and the disk it is on"


def load_baselines(path: Path) -> dict[str, Record]:
    """Records of ``path``; an empty dict when the file does not exist yet."""
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:  # the bytes are damaged: the file is no baseline any more
        raise BaselineError(f"baseline file {path} cannot be read ({exc}); {_fix_hint(path)}") from None
    except OSError as exc:  # the file may be fine: it is left alone, and so is the advice
        # "Permission denied" rather than "[Errno 13] Permission denied: '/the/same/path'"
        reason = exc.strerror if exc.strerror and exc.filename is not None else str(exc)
        raise BaselineError(f"baseline file {path} cannot be read ({reason}); {_read_hint(path, exc)}") from None
    return parse_baselines(text, path)


def _read_hint(path: Path, exc: OSError) -> str:
    """How to fix a baseline file that exists but cannot be read, without losing it."""
    if isinstance(exc, PermissionError):
        return f"make it readable by this user (e.g. chmod u+r {path}, or run as its owner); it was left as it is"
    if isinstance(exc, IsADirectoryError) or "not a regular file" in str(exc):
        return (
            "a baseline file must be a regular file: move it out of the way, then "
            "`pytest --tvmperf-update` records the baseline again"
        )
    return "check the file and the disk it is on; it was left as it is"


def dump_baselines(records: Mapping[str, Record]) -> str:
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tests": {test_id: rec.as_json() for test_id, rec in sorted(records.items())},
    }
    return dump_text(data)


def file_mode(executable: bool = False) -> int:
    """The mode ``open()`` gives a new file under the process umask (0755 for ``executable``)."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if executable else 0o666) & ~mask


def temp_prefix(name: str) -> str:
    """``.<name>.<pid>.``: temporary files carry the writer's process id, so a later
    run can tell a dead writer's leftovers from a live writer's work in progress."""
    return f".{name}.{os.getpid()}."


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the platform allows it)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def append_line(path: Path, line: str) -> None:
    """Append ``line`` and its line end to ``path``, whole or not at all, under an exclusive lock of
    the file, so two runs appending at once both land (never read, add, replace: issue 66). A last
    line without its end (a write cut short) is kept, as its own line; a write that fails (a full
    disk, Ctrl-C) is cut back to the file as it was. A link at ``path`` is refused."""
    import fcntl

    data = line.rstrip("\n").encode("utf-8") + b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, file_mode())
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file is closed
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader sees the old file or the new one, never half;
    it keeps its permission bits, as with ``open(path, "w")`` (a new file: the umask's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = file_mode()
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def baselines_lock(
    directory: Path, timeout_s: float | None = DEFAULT_BASELINES_LOCK_S, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Held while baseline files and artifacts under ``directory`` change, so concurrent
    writers (xdist workers, two runs) merge one after another (locks.py ``file_lock``). The
    lock is in this user's lock directory, named after the directory's absolute path."""
    key = hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:16]
    with file_lock(lock_dir() / f"tvmperf-baselines-{key}.lock", timeout_s, f"baselines lock of {directory}", on_wait):
        yield


@dataclass(frozen=True)
class Merged:
    """What :func:`merge_updates` found and did: the file's records before, and the test ids whose
    entry was kept as it was (nothing the gate judges changed: store/rerecord.py)."""

    before: dict[str, Record]
    kept: frozenset[str] = frozenset()
    #: the file was replaced (False: every entry kept, the file untouched byte for byte)
    written: bool = True


def stored_form(record: Record, old: Record | None) -> Record:
    """``record`` as an update stores it over ``old``: keyed by kernel identity (values/kernel_keys.py),
    with the timings of other machines kept."""
    return keyed_by_identity(record).merged_over(None if old is None else keyed_by_identity(old))


def keeps(old: Record | None, new: Record, intact: Callable[[Record], bool] | None = None) -> bool:
    """Does an update of ``old`` to ``new`` (its :func:`stored_form`) keep ``old`` as it is: nothing
    the gate judges changed (store/rerecord.py), and every file it names is ``intact``."""
    if old is None or not unchanged(old.as_json(), new.as_json()):
        return False
    return intact is None or intact(old)


def merge_updates(
    path: Path,
    updates: Mapping[str, Record],
    place: Callable[[], None] | None = None,
    keep_unchanged: bool = True,
    intact: Callable[[Record], bool] | None = None,
) -> Merged:
    """Merge ``updates`` into the file at ``path`` (hold :func:`baselines_lock`): read and
    check it, keep each entry whose program and gated metrics are unchanged (store/rerecord.py;
    not with ``keep_unchanged=False``: ``--tvmperf-retime``), ``place()`` the new entries'
    artifacts, replace it (not when every entry was kept: then nothing is placed). An entry
    ``intact`` says has a missing or damaged artifact is rewritten, never kept: re-recording
    repairs it."""
    records = load_baselines(path)
    before = dict(records)
    kept: set[str] = set()
    for test_id, rec in updates.items():
        old = records.get(test_id)
        new = stored_form(rec, old)
        if keep_unchanged and keeps(old, new, intact):
            kept.add(test_id)
            continue
        records[test_id] = new
    if updates and len(kept) == len(updates) and path.exists():
        return Merged(before, frozenset(kept), written=False)
    if place is not None:
        place()
    atomic_write(path, dump_baselines(records))
    return Merged(before, frozenset(kept))


def save_updates(
    path: Path, updates: Mapping[str, Record], lock_dir: Path | None = None, place: Callable[[], None] | None = None
) -> dict[str, Record]:
    """:func:`merge_updates` under the lock of ``lock_dir`` (the baseline directory;
    default the file's directory)."""
    with baselines_lock(lock_dir or path.parent):
        return merge_updates(path, updates, place).before


def remove_entries(path: Path, test_ids: set[str]) -> list[Record]:
    """Remove ``test_ids`` from the file at ``path`` (hold :func:`baselines_lock`; the file
    itself when nothing is left); returns the removed records (their artifacts can then be deleted)."""
    records = load_baselines(path)
    removed = [records.pop(t) for t in sorted(test_ids) if t in records]
    if records:
        atomic_write(path, dump_baselines(records))
    elif path.exists():
        path.unlink()
    return removed
