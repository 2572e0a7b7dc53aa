"""``code_bytes``: the compiled library's code size, in total and by kernel.

For an LLVM target the size is that of the function symbols in the object file LLVM
emits for the module (``write_to_file(".o")``), read from its ELF symbol table: exact for
a TVM version, an LLVM and a target, and free of the system linker's start-up code (an
exported ``.so`` adds the toolchain's own). Each function is put under the kernel it
belongs to (``__tvm_ffi_fused_add`` and ``fused_add_compute_`` under ``fused_add``); the
rest (the VM functions of ``vm-compiled``, TVM's helpers) under :data:`RUNTIME_PART`.
For ``cuda`` the device code is the CUDA module serialized into the exported library
(the size of its ``__tvm_ffi__library_bin``: the module cannot be written by itself).

:func:`elf_function_sizes` is pure (bytes in); :func:`measure_code_size` writes the
module's objects to a temporary directory."""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

#: the part of the code that belongs to no kernel
RUNTIME_PART = "(runtime and VM functions)"
#: the part that is the CUDA module's device code
CUDA_PART = "(cuda module)"
#: the data object of an exported library that holds its imported modules (the CUDA module, serialized)
LIBRARY_BIN = "__tvm_ffi__library_bin"
_SHT_SYMTAB = 2
_STT_OBJECT = 1
_SHN_UNDEF = 0
_FFI_PREFIX = "__tvm_ffi_"


@dataclass(frozen=True)
class CodeSize:
    total: int
    parts: Mapping[str, int]
    #: what the sizes depend on besides the code (``ExactMetrics.measured_with``)
    measured_with: str = ""


class NotElf(ValueError):
    """The bytes are not an ELF object this reader takes."""


def elf_function_sizes(data: bytes, symbol_type: int = 2) -> dict[str, int]:
    """{symbol: size} of the defined function symbols (``symbol_type`` 1: data objects) of an ELF
    object (32 or 64 bit, either byte order); raises :class:`NotElf` for anything else."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise NotElf("not an ELF object")
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    try:
        if is64:
            (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        else:
            (shoff,) = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sections = []
        for i in range(shnum):
            base = shoff + i * shentsize
            if is64:
                _, kind, _, _, off, size, link, _, _, entsize = struct.unpack_from(end + "IIQQQQIIQQ", data, base)
            else:
                _, kind, _, _, off, size, link, _, _, entsize = struct.unpack_from(end + "IIIIIIIIII", data, base)
            sections.append((kind, off, size, link, entsize))
        sizes: dict[str, int] = {}
        for kind, off, size, link, entsize in sections:
            if kind != _SHT_SYMTAB or not entsize:
                continue
            _, str_off, str_size, _, _ = sections[link]
            strings = data[str_off : str_off + str_size]
            for j in range(size // entsize):
                base = off + j * entsize
                if is64:
                    name, info, _, shndx, _, sym_size = struct.unpack_from(end + "IBBHQQ", data, base)
                else:
                    name, _, sym_size, info, _, shndx = struct.unpack_from(end + "IIIBBH", data, base)
                if info & 0xF != symbol_type or shndx == _SHN_UNDEF or not sym_size:
                    continue
                label = strings[name : strings.index(b"\0", name)].decode("utf-8", "replace")
                sizes[label] = sizes.get(label, 0) + sym_size
        return sizes
    except (struct.error, IndexError, ValueError) as exc:
        raise NotElf(f"a damaged ELF object ({exc})") from None


def by_kernel(functions: Mapping[str, int], kernels: Iterable[str]) -> dict[str, int]:
    """Function sizes summed by the kernel each belongs to: the longest kernel name the
    function's name (less TVM's ``__tvm_ffi_`` prefix) starts with; else :data:`RUNTIME_PART`."""
    names = sorted(set(kernels), key=len, reverse=True)
    parts: dict[str, int] = {}
    for symbol, size in functions.items():
        bare = symbol.removeprefix(_FFI_PREFIX)
        owner = next((k for k in names if bare == k or bare.startswith(k + "_")), RUNTIME_PART)
        parts[owner] = parts.get(owner, 0) + size
    return parts


def kernel_names(module: Any) -> tuple[str, ...]:
    """The names of the TIR kernels of a lowered IRModule."""
    from tvm import tirx

    return tuple(str(gv.name_hint) for gv, f in module.functions.items() if isinstance(f, tirx.PrimFunc))


def _modules(module: Any) -> list[Any]:
    seen, todo = [], [module]
    while todo:
        m = todo.pop(0)
        seen.append(m)
        todo.extend(m.imports)
    return seen


def _kind(module: Any) -> str:
    return str(getattr(module, "kind", None) or getattr(module, "type_key", ""))


def measure_code_size(module: Any, kernels: Iterable[str], library: Path | None = None) -> CodeSize | str:
    """The code size of ``module`` (a compiled runtime module and its imports) by kernel,
    or why it cannot be read (the n/a reason). ``library``: the module already exported as
    a shared library (to run it in the isolation child): its function symbols are those of
    the objects LLVM emitted (the linker's start-up code has no sizes), read without
    generating the code again; without one, or where it has no symbol table, each LLVM
    module is written as an object (the code generated once more: a second or so for a
    network)."""
    import tvm

    llvm = [m for m in _modules(module) if _kind(m) == "llvm"]
    cuda = [m for m in _modules(module) if _kind(m) == "cuda"]
    if not llvm:
        return "the compiled module has no LLVM code to measure"
    parts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="tvmperf-code-") as tmp:
        if cuda and _library_functions(library) is None:  # its device code is read from an exported library only
            library = Path(tmp) / "exported.so"
            try:
                module.export_library(str(library))
            except Exception as exc:  # no host toolchain to link with
                return f"the CUDA module's size is read from the exported library, which could not be made ({exc})"
        from_library = _library_functions(library)
        for name, size in by_kernel(from_library or {}, kernels).items():
            parts[name] = parts.get(name, 0) + size
        for i, m in enumerate(llvm if not from_library else ()):
            path = Path(tmp) / f"code{i}.o"
            try:
                m.write_to_file(str(path))
                functions = elf_function_sizes(path.read_bytes())
            except NotElf as exc:
                return f"the object LLVM wrote is {exc} (code_bytes reads ELF symbol tables)"
            except Exception as exc:  # TVM cannot write this module's object
                return f"the LLVM module cannot be written as an object ({type(exc).__name__}: {exc})"
            for name, size in by_kernel(functions, kernels).items():
                parts[name] = parts.get(name, 0) + size
        if cuda:
            device = _library_objects(library).get(LIBRARY_BIN)
            if device is None:
                return "the exported library holds no serialized CUDA module to measure"
            parts[CUDA_PART] = device
    return CodeSize(sum(parts.values()), parts, f"tvm {tvm.__version__}, llvm {_llvm_version()}")


def _library_objects(library: Path | None) -> dict[str, int]:
    try:
        return elf_function_sizes(Path(library).read_bytes(), _STT_OBJECT) if library is not None else {}
    except (OSError, NotElf):
        return {}


def _library_functions(library: Path | None) -> dict[str, int] | None:
    """The function sizes of an exported library, or None (none given, gone, no symbols)."""
    if library is None:
        return None
    try:
        return elf_function_sizes(Path(library).read_bytes()) or None
    except (OSError, NotElf):
        return None


def _llvm_version() -> str:
    try:
        import tvm

        return str(tvm.target.codegen.llvm_version_major())
    except Exception:
        return "?"
