"""The baseline's program as IR: the module TVM's high-level pipeline hands to code
generation (what ``relax.build(..., relax_pipeline=None)`` or ``tvm.compile`` takes),
saved by ``--tvmperf-update`` and rebuilt for whatever machine runs the gate.

One file per distinct module, ``<artifact dir>/ir/<first 24 hex digits of its
sha256>.json.gz``: ``tvm.ir.save_json`` text, gzip-compressed with a fixed header (the same
module is the same file); its large tensors stored apart by content (store/weights.py) and
put back before it is built (:func:`load`). Committed like a compiled artifact
(store/artifacts.py).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tvmperf.store import bounded_json, ir_check
from pytest_tvmperf.store.artifacts import PendingArtifact, discard, file_sha256
from pytest_tvmperf.store.files import file_mode, temp_prefix
from pytest_tvmperf.store.inflate import TooLarge, inflate, max_ir_bytes
from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.values.ir_function import FunctionRef
from pytest_tvmperf.values.record import IRRef, WeightRef
from pytest_tvmperf.values.seeded_weight import SeededWeight

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


#: why an IR holding a weight stored without its values (store/seeded.py) is not given to TVM
_UNFILLED = (
    "it holds weights stored without their values, and no description of them to seed them "
    f"from (field {IR_FIELD}.seeded)"
)


def _gzip(text: str) -> bytes:
    """Deterministic gzip bytes (a fixed header: the same text gives the same file)."""
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def encode(module: Any) -> bytes:
    """``module`` as gzip-compressed ``tvm.ir.save_json`` text (deterministic bytes)."""
    import tvm

    return _gzip(tvm.ir.save_json(module))


def _load_json(text: str) -> Any:
    """``tvm.ir.load_json(text)``; IRLoadError with TVM's last line when it cannot."""
    import tvm

    try:
        return tvm.ir.load_json(text)
    except Exception as exc:  # TVM raises its own error types
        first = str(exc).strip().splitlines()
        raise IRLoadError(
            f"TVM {tvm.__version__} cannot load it ({type(exc).__name__}: {first[-1][:300] if first else ''})"
        ) from None


def decode(data: bytes) -> Any:
    """The module of :func:`encode`'s bytes; raises IRLoadError saying why not. Nothing
    reaches TVM that store/ir_check.py refuses: an IR saved by another TVM version that
    holds what this one's builds never store is not loaded (the gate falls back)."""
    import tvm

    try:
        text = inflate(data).decode("utf-8")
    except TooLarge as exc:
        raise IRLoadError(str(exc)) from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise IRLoadError(f"not gzip-compressed UTF-8 text ({exc})") from None
    if (problem := _refusal(text)) is not None:
        graph, exc = problem
        saved = ir_check.saved_by(graph) or "an unknown version"
        raise IRLoadError(
            f"TVM {tvm.__version__} cannot load it (it was saved by TVM {saved}, and {exc}; "
            f"nothing of it was built or run)"
        )
    if _unfilled(text):
        raise IRLoadError(_UNFILLED)
    return _load_json(text)


def _unfilled(text: str) -> bool:
    """Does the IR text hold a tensor stored without its data (store/seeded.py)?"""
    from pytest_tvmperf.store import seeded

    try:
        return bool(seeded.unfilled(json.loads(text)))
    except (ValueError, RecursionError):
        return False


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


def encode_split(module: Any) -> tuple[bytes, list]:
    """``module`` as :func:`encode` writes it, with its large tensors taken out (zeros in
    their place), and those tensors (store/weights.py ``Weight``)."""
    import tvm

    from pytest_tvmperf.store import weights

    graph = json.loads(tvm.ir.save_json(module))
    taken = [weights.take(*t) for t in weights.tensors(graph, weights.MIN_BYTES) if t[3].nbytes >= weights.MIN_BYTES]
    return _gzip(json.dumps(graph, separators=(",", ":"))), taken


#: the name of the one function in a kernel's own file
_PIECE = "f"


def split_functions(module: Any) -> tuple[Any, list[tuple[str, bytes]]]:
    """The module with each PrimFunc (kernel) replaced by an empty stub of its name, and each
    kernel's own file (:func:`encode` of it alone, without its ``global_symbol``: the same
    kernel is the same file whatever it is named). Unsplit, ``(module, [])``, for kernels
    only (a PrimFunc program), or a kernel calling another function or named otherwise."""
    import tvm
    from tvm import tirx

    functions = list(module.functions.items())
    kernels = [(gv, f) for gv, f in functions if isinstance(f, tirx.PrimFunc)]
    if not kernels or len(kernels) == len(functions):
        return module, []
    pieces = []
    for gv, func in kernels:
        if func.attrs is None or str(func.attrs.get("global_symbol", "")) != gv.name_hint:
            return module, []
        data = encode(tvm.IRModule({_PIECE: func.without_attr("global_symbol")}))
        if gzip.decompress(data).count(b'"type":"ir.GlobalVar"') != 1:  # it calls another function: kept whole
            return module, []
        pieces.append((gv.name_hint, data))
    stubbed = tvm.IRModule(dict(functions), attrs=module.attrs, global_infos=module.global_infos)
    for gv, _ in kernels:
        stubbed[gv] = tirx.PrimFunc([], tirx.Evaluate(0))
    return stubbed, sorted(pieces)


def encode_stored(module: Any) -> tuple[bytes, list, list[SeededWeight], list[tuple[str, bytes]]]:
    """``module`` as the default (seeded) form stores it: its kernels in files of their own
    (:func:`split_functions`), the rest without its weights' values: its floating-point
    weights described only (store/seeded.py), its other large tensors taken out as weight
    files (store/weights.py ``Weight``): (IR bytes, weight files, seeded weights, kernel files)."""
    import tvm

    from pytest_tvmperf.store import seeded

    rest, pieces = split_functions(module)
    graph = json.loads(tvm.ir.save_json(rest))
    files, described = seeded.split_seeded(graph)
    return _gzip(json.dumps(graph, separators=(",", ":"))), files, described, pieces


@dataclass(frozen=True)
class PendingIR(PendingArtifact):
    """The pending IR file, and the pending files stored apart from it (committed with it)."""

    weights: tuple[tuple[int, PendingArtifact], ...] = ()
    #: the weights stored as their description only (``ir.seeded``)
    seeded: tuple[SeededWeight, ...] = ()
    #: the kernels stored in files of their own (``ir.functions``), by name
    functions: tuple[tuple[str, PendingArtifact], ...] = ()

    def ref(self, baseline_dir: Path) -> IRRef:
        return IRRef(
            str(self.final.relative_to(baseline_dir)),
            self.sha256,
            tuple(WeightRef(node, str(w.final.relative_to(baseline_dir)), w.sha256) for node, w in self.weights),
            self.seeded,
            tuple(FunctionRef(name, f.sha256) for name, f in self.functions),
        )

    @property
    def parts(self) -> tuple[PendingArtifact, ...]:
        return tuple(w for _, w in self.weights) + tuple(f for _, f in self.functions)


def _write_pending(data: bytes, final: Path) -> PendingArtifact:
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=temp_prefix(final.name), suffix=".tmp", dir=final.parent)
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
    return PendingArtifact(Path(temp), final, hashlib.sha256(data).hexdigest())


class UnstorableIR(Exception):
    """A program whose IR the gate would refuse to rebuild (store/ir_check.py's lists)."""


def save_pending(module: Any, artifact_dir: Path, seeded: bool = False) -> PendingIR:
    """Write ``module`` under a temporary name in ``artifact_dir/ir``, and each of its large
    tensors in ``artifact_dir/weights``; each final name carries its content hash (commit
    them with ``artifacts.commit``). ``seeded``: floating-point weights only described
    (store/seeded.py). :class:`UnstorableIR`, writing nothing, for an IR the stored-IR
    check would refuse when the gate reads it back."""
    from pytest_tvmperf.store.weights import WEIGHT_SUFFIX, WEIGHTS_DIR

    if seeded:
        data, taken, described, pieces = encode_stored(module)
    else:
        (data, taken), described, pieces = encode_split(module), [], []
    for text in [data] + [piece for _, piece in pieces]:
        if (problem := _refusal(gzip.decompress(text).decode("utf-8"))) is not None:
            raise UnstorableIR(str(problem[1]))

    def ir_file(data: bytes) -> PendingArtifact:
        return _write_pending(data, artifact_dir / IR_DIR / f"{hashlib.sha256(data).hexdigest()[:24]}{IR_SUFFIX}")

    pending_weights: list = []
    pending_functions: list = []
    try:
        for weight in taken:
            final = artifact_dir / WEIGHTS_DIR / f"{weight.sha256[:32]}{WEIGHT_SUFFIX}"
            pending_weights.append((weight.node, _write_pending(weight.data, final)))
        for name, piece in pieces:
            pending_functions.append((name, ir_file(piece)))
        ir = ir_file(data)
    except BaseException:
        for _, pending in pending_weights + pending_functions:
            discard(pending)
        raise
    return PendingIR(ir.temp, ir.final, ir.sha256, tuple(pending_weights), tuple(described), tuple(pending_functions))


def _fix(test_id: str) -> str:
    return f"restore it from version control, or re-record the test with `pytest --tvmperf-update` (test id {test_id})"


def check_file(path: Path, ref: IRRef, shown: str, test_id: str, baseline_file: str) -> None:
    """Raise IRFileError when the file at ``path`` is not the one ``ref`` records,
    naming the file, the test, the baseline's field and the fix."""
    # safe(): the entry's path is data
    what = f"baseline IR {safe(shown)} (named by field {IR_FIELD}.path of entry {test_id!r} in {baseline_file})"
    if not path.exists():
        raise IRFileError(f"{what} is missing; {_fix(test_id)}")
    if not stat.S_ISREG(path.stat().st_mode):
        raise IRFileError(f"{what} is not a regular file; {_fix(test_id)}")
    actual = file_sha256(path)
    if actual != ref.sha256:
        raise IRFileError(
            f"{what} does not match field {IR_FIELD}.sha256 of that entry (file {actual[:16]}..., recorded "
            f"{ref.sha256[:16]}...): the file was changed or damaged; {_fix(test_id)}"
        )
    check_safe(path.read_bytes(), what, test_id)
    base = _baseline_dir(path, ref)
    for i, weight in enumerate(ref.weights):
        file = base / weight.path
        part = (
            f"baseline weights {safe(weight.path)} (named by field {IR_FIELD}.weights[{i}].path of entry {test_id!r} "
            f"in {baseline_file})"
        )
        if base.resolve() not in file.resolve().parents:
            raise IRFileError(f"{part} lie outside the baseline directory; {_fix(test_id)}")
        _check_part(file, weight.sha256, part, ("are", "do"), f"field {IR_FIELD}.weights[{i}].sha256", test_id)
    for i, function in enumerate(ref.functions):
        rel = function.path(ref.path)
        part = (
            f"baseline kernel {safe(rel)} (named by field {IR_FIELD}.functions[{i}] of entry {test_id!r} "
            f"in {baseline_file})"
        )
        _check_part(base / rel, function.sha256, part, ("is", "does"), "that field's sha256", test_id)
        check_safe((base / rel).read_bytes(), part, test_id)
    _check_seeded(path, ref, what, test_id, baseline_file)


def _check_part(file: Path, recorded: str, what: str, verbs: tuple[str, str], field: str, test_id: str) -> None:
    """Raise IRFileError when a file stored beside the IR (weights, a kernel) is missing,
    not a regular file, or not the one whose sha256 its entry's ``field`` records; ``verbs``:
    weights "are missing" and "do not match", a kernel "is missing" and "does not match"."""
    be, do = verbs
    if not file.exists():
        raise IRFileError(f"{what} {be} missing; {_fix(test_id)}")
    if file.is_symlink() or not stat.S_ISREG(file.stat().st_mode):
        raise IRFileError(f"{what} {be} not a regular file; {_fix(test_id)}")
    actual = file_sha256(file)
    if actual != recorded:
        raise IRFileError(
            f"{what} {do} not match {field} (file {actual[:16]}..., recorded {recorded[:16]}...): "
            f"the file was changed or damaged; {_fix(test_id)}"
        )


def _check_seeded(path: Path, ref: IRRef, what: str, test_id: str, baseline_file: str) -> None:
    """Raise IRFileError when the IR's weights stored without values (store/seeded.py) do
    not match the entry's ``ir.seeded`` (none described, or another number, dtype or
    shape). Only the headers are read, and the total is bounded."""
    from pytest_tvmperf.store import seeded

    try:
        graph = json.loads(inflate(path.read_bytes()))
    except (OSError, EOFError, ValueError, UnicodeDecodeError, TooLarge, RecursionError):
        return  # not JSON: decode() says why it cannot be loaded
    if not ref.seeded:
        if tensors := seeded.unfilled(graph):
            raise IRFileError(
                f"{what} holds {len(tensors)} weight(s) stored without their values ({seeded.listed(tensors)}), and the entry "
                f"has neither their files (field {IR_FIELD}.weights) nor their digests (field {IR_FIELD}.seeded), so "
                f"the program cannot be rebuilt: the entry's field {IR_FIELD}.seeded was removed or lost. Restore "
                f"{safe(baseline_file)} from version control, or re-record the test with `pytest --tvmperf-update` "
                f"(test id {test_id})"
            )
        return
    if (problem := seeded.mismatch(graph, ref.seeded, max_ir_bytes())) is not None:
        raise IRFileError(f"{what} does not match its entry: {problem}; {_fix(test_id)}")


def _baseline_dir(path: Path, ref: IRRef) -> Path:
    """The baseline directory: the IR file's path less the entry's relative path."""
    base = path
    for _ in Path(ref.path).parts:
        base = base.parent
    return base


def check_safe(data: bytes, what: str, test_id: str) -> None:
    """Raise IRFileError when the IR in ``data`` holds anything the plugin's own builds do
    not store (store/ir_check.py), or nests too deep: a change to a baseline file alone
    must not make the gate build and run code nobody reviewed as code. Data that is no
    gzip'ed JSON passes here (:func:`decode` says why), and so does an IR saved by another
    TVM version (its decode refuses it; the gate falls back to the stored numbers)."""
    import tvm

    try:
        text = inflate(data).decode("utf-8")
    except TooLarge as exc:
        raise IRFileError(f"{what} is refused: {exc}; {_fix(test_id)}") from None
    except (OSError, EOFError, UnicodeDecodeError):
        return
    if (problem := _refusal(text)) is None:
        return
    graph, exc = problem
    if isinstance(exc, bounded_json.TooDeep):
        raise IRFileError(
            f"{what} is refused: its JSON is {exc}; nothing of it was read by TVM, built or run; {_fix(test_id)}"
        ) from None
    if graph is None or (ir_check.saved_by(graph) or tvm.__version__) != tvm.__version__:
        return
    raise IRFileError(
        f"{what} is refused: {exc}. Nothing of it was built or run. A stored IR may only hold what "
        f"the plugin's own builds store (the lists of pytest_tvmperf/store/ir_allowlist.py). If it is "
        f"your own program's, it uses something the bundled workloads never do: extending those lists "
        f"is a change to review as code; otherwise {_fix(test_id)}"
    ) from None


def load(path: Path, ref: IRRef | None = None) -> Any:
    """The module in the IR file at ``path`` (checked with :func:`check_file` first), with
    the weights ``ref`` names put back in place (the program that was recorded)."""
    module = _load_rest(path, ref)
    return _put_functions(module, path, ref) if ref is not None and ref.functions else module


def _put_functions(module: Any, path: Path, ref: IRRef) -> Any:
    """Each kernel of ``ref.functions`` (its own file) in place of its stub in ``module``.
    Every stub must get its kernel and every kernel a stub: a program that would run an
    empty stub, or a kernel it never calls, is not built."""
    from tvm import tirx

    base = _baseline_dir(path, ref)
    stubs = {
        gv.name_hint
        for gv, f in module.functions.items()
        if isinstance(f, tirx.PrimFunc)
        and len(f.params) == 0
        and isinstance(f.body, tirx.Evaluate)
        and (f.attrs is None or "global_symbol" not in f.attrs)
    }
    names = [f.name for f in ref.functions]
    if sorted(names) != sorted(stubs):
        raise IRLoadError(
            f"its kernels stored apart (field {IR_FIELD}.functions: {len(names)}) do not match the "
            f"stubs it holds ({len(stubs)})"
        )
    for i, function in enumerate(ref.functions):
        piece = decode((base / function.path(ref.path)).read_bytes())
        funcs = list(piece.functions.items())
        if len(funcs) != 1 or not isinstance(funcs[0][1], tirx.PrimFunc):
            raise IRLoadError(f"its kernel {function.name} ({IR_FIELD}.functions[{i}]) is not one kernel")
        module[module.get_global_var(function.name)] = funcs[0][1].with_attr("global_symbol", function.name)
    return module


def _load_rest(path: Path, ref: IRRef | None) -> Any:
    if ref is None or (not ref.weights and not ref.seeded):
        return decode(path.read_bytes())
    from pytest_tvmperf.store import seeded
    from pytest_tvmperf.store.weights import WeightError, join

    try:
        graph = json.loads(inflate(path.read_bytes()))
    except (OSError, EOFError, ValueError, TooLarge) as exc:
        raise IRLoadError(f"not gzip-compressed JSON ({exc})") from None
    base = _baseline_dir(path, ref)
    for i, weight in enumerate(ref.weights):
        what = f"weights {weight.path} ({IR_FIELD}.weights[{i}])"
        try:
            join(graph, weight.node, (base / weight.path).read_bytes(), what)
        except (WeightError, OSError) as exc:
            raise IRLoadError(str(exc)) from None
    if ref.seeded:  # the weights stored as descriptions: seeded values of their dtypes and shapes
        try:
            seeded.fill(graph, ref.seeded, max_ir_bytes())
        except WeightError as exc:
            raise IRLoadError(f"its seeded weights ({IR_FIELD}.seeded): {exc}") from None
    if seeded.unfilled(graph):
        raise IRLoadError(_UNFILLED)
    return _load_json(json.dumps(graph))
