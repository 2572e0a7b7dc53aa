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

from pytest_tvmperf.store import bounded_json, ir_check
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
    """The module of :func:`encode`'s bytes; raises IRLoadError saying why not. Nothing
    reaches TVM that store/ir_check.py refuses: an IR saved by another TVM version that
    holds what this one's builds never store is not loaded (the gate falls back)."""
    import tvm

    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise IRLoadError(f"not gzip-compressed UTF-8 text ({exc})") from None
    problem = _refusal(text)
    if problem is not None:
        graph, exc = problem
        saved = ir_check.saved_by(graph) or "an unknown version"
        raise IRLoadError(f"TVM {tvm.__version__} cannot load it (it was saved by TVM {saved}, and {exc}; "
                          f"nothing of it was built or run)")
    try:
        return tvm.ir.load_json(text)
    except Exception as exc:  # TVM raises its own error types
        first = str(exc).strip().splitlines()
        raise IRLoadError(f"TVM {tvm.__version__} cannot load it ({type(exc).__name__}: "
                          f"{first[-1][:300] if first else ''})") from None


def _refusal(text: str) -> tuple[Any, Exception] | None:
    """None when ``text`` is a graph store/ir_check.py allows, else (graph, why not)."""
    try:
        graph = bounded_json.loads(text, ir_check.MAX_JSON_DEPTH)
    except ValueError as exc:  # too deep, or no JSON at all: TVM is not asked to read it
        return None, exc
    try:
        ir_check.check_graph(graph)
    except ir_check.UnsafeIR as exc:
        return graph, exc
    return None


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
    """Raise IRFileError when the IR in ``data`` holds anything the plugin's own builds do
    not store (store/ir_check.py: an allowlist), or nests too deep to read: a baseline
    file is data, and a change to it alone must not make the gate build and run code
    nobody reviewed as code. Data that is no gzip'ed JSON passes here (:func:`decode`
    says why it cannot be loaded), and so does an IR saved by another TVM version (its
    decode refuses it, and the gate falls back to the stored numbers)."""
    import tvm

    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError):
        return
    problem = _refusal(text)
    if problem is None:
        return
    graph, exc = problem
    if isinstance(exc, bounded_json.TooDeep):
        raise IRFileError(f"{what} is refused: its JSON is {exc}; nothing of it was read by TVM, built or run; "
                          f"{_fix(test_id)}") from None
    if graph is None or (ir_check.saved_by(graph) or tvm.__version__) != tvm.__version__:
        return
    raise IRFileError(f"{what} is refused: {exc}. Nothing of it was built or run. A stored IR may only hold what "
                      f"the plugin's own builds store (the lists of pytest_tvmperf/store/ir_check.py). If it is "
                      f"your own program's, it uses something the bundled workloads never do: extending those lists "
                      f"is a change to review as code; otherwise {_fix(test_id)}") from None


def load(path: Path) -> Any:
    """The module in the IR file at ``path`` (checked with :func:`check_file` first)."""
    return decode(path.read_bytes())
