"""The baseline's program as IR: the module TVM's high-level pipeline hands to code
generation (what ``relax.build(..., relax_pipeline=None)`` or ``tvm.compile`` takes),
saved by ``--tvmperf-update`` and rebuilt for whatever machine runs the gate.

One file per distinct module, ``<artifact dir>/ir/<first 24 hex digits of its
sha256>.json.gz``: ``tvm.ir.save_json`` text, gzip-compressed with a fixed header (the
same module gives the same bytes, so the same file). Bound weights are most of it
(base64 in the JSON); gzip brings the JSON back to about the weights' binary size, so
a side file for them would not be smaller. Written and committed like a compiled
artifact (:mod:`pytest_tvmperf.store.artifacts`): a temporary file, renamed into place
under the baseline lock right before the baseline file that names it is replaced.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from pytest_tvmperf.store.artifacts import PendingArtifact, file_sha256
from pytest_tvmperf.store.files import file_mode, temp_prefix
from pytest_tvmperf.store.record import IRRef

IR_DIR = "ir"
IR_SUFFIX = ".json.gz"
#: the record's field that names the IR file (``ir.path``, ``ir.sha256``)
IR_FIELD = "ir"


class IRFileError(Exception):
    """The IR file a baseline entry names is missing or not the file recorded: the
    baseline is damaged, the test fails with this message."""


class IRLoadError(Exception):
    """The IR file is the one recorded but this TVM cannot read or rebuild it (another
    TVM version): the gate falls back to the comparison with stored numbers."""


def encode(module: Any) -> bytes:
    """``module`` as gzip-compressed ``tvm.ir.save_json`` text (deterministic bytes)."""
    import tvm

    return gzip.compress(tvm.ir.save_json(module).encode("utf-8"), compresslevel=6, mtime=0)


def decode(data: bytes) -> Any:
    """The module of :func:`encode`'s bytes; raises IRLoadError saying why not."""
    import tvm

    from pytest_tvmperf.store.inflate import TooLarge, inflate

    try:
        text = inflate(data).decode("utf-8")
    except TooLarge as exc:
        raise IRLoadError(str(exc)) from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise IRLoadError(f"not gzip-compressed UTF-8 text ({exc})") from None
    try:
        return tvm.ir.load_json(text)
    except Exception as exc:  # TVM raises its own error types
        first = str(exc).strip().splitlines()
        raise IRLoadError(f"TVM {tvm.__version__} cannot load it ({type(exc).__name__}: "
                          f"{first[-1][:300] if first else ''})") from None


def save_pending(module: Any, artifact_dir: Path) -> PendingArtifact:
    """Write ``module`` under a temporary name in ``artifact_dir/ir``; the pending
    file's final name carries its content hash (commit it with ``artifacts.commit``)."""
    data = encode(module)
    sha = hashlib.sha256(data).hexdigest()
    directory = artifact_dir / IR_DIR
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{sha[:24]}{IR_SUFFIX}"
    fd, temp = tempfile.mkstemp(prefix=temp_prefix(final.name), suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return PendingArtifact(Path(temp), final, sha)


def _fix(test_id: str) -> str:
    return (f"restore it from version control, or re-record the test with "
            f"`pytest --tvmperf-update` (test id {test_id})")


def check_file(path: Path, ref: IRRef, shown: str, test_id: str, baseline_file: str) -> None:
    """Raise IRFileError when the file at ``path`` is not the one ``ref`` records,
    naming the file, the test, the baseline's field and the fix."""
    where = f"named by field {IR_FIELD}.path of entry {test_id!r} in {baseline_file}"
    if not path.exists():
        raise IRFileError(f"baseline IR {shown} ({where}) is missing; {_fix(test_id)}")
    if not stat.S_ISREG(path.stat().st_mode):
        raise IRFileError(f"baseline IR {shown} ({where}) is not a regular file; {_fix(test_id)}")
    actual = file_sha256(path)
    if actual != ref.sha256:
        raise IRFileError(f"baseline IR {shown} ({where}) does not match field {IR_FIELD}.sha256 of that entry "
                          f"(file {actual[:16]}..., recorded {ref.sha256[:16]}...): the file was changed or "
                          f"damaged; {_fix(test_id)}")
    check_safe(path.read_bytes(), f"baseline IR {shown} ({where})", test_id)


def check_safe(data: bytes, what: str, test_id: str) -> None:
    """Raise IRFileError when the IR in ``data`` calls anything a compiled workload does
    not (store/ir_check.py): a baseline file is data, and a change to it alone must not
    make the gate build and run code nobody reviewed as code. Unreadable data passes
    here: :func:`decode` says why it cannot be loaded."""
    import json

    from pytest_tvmperf.store.inflate import TooLarge, inflate
    from pytest_tvmperf.store.ir_check import UnsafeIR, check_graph

    try:
        graph = json.loads(inflate(data))
    except TooLarge as exc:
        raise IRFileError(f"{what} is refused: {exc}; {_fix(test_id)}") from None
    except (OSError, EOFError, ValueError):
        return
    try:
        check_graph(graph)
    except UnsafeIR as exc:
        raise IRFileError(f"{what} is refused: {exc}. Nothing of it was built or run. If that call is yours, run the "
                          f"test with --tvmperf-update and review the new IR as code; otherwise {_fix(test_id)}") from None


def load(path: Path) -> Any:
    """The module in the IR file at ``path`` (checked with :func:`check_file` first)."""
    return decode(path.read_bytes())
