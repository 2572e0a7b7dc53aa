"""``code_bytes``: the compiled library's code size, in total and by kernel.

For an LLVM target, the sizes of the function symbols in the object LLVM emits for the
module, read from its ELF symbol table: exact for a TVM version, an LLVM and a target,
free of the system linker's start-up code. Each function goes under its kernel
(``__tvm_ffi_fused_add`` and ``fused_add_compute_`` under ``fused_add``), the rest under
:data:`RUNTIME_PART`. For ``cuda``, the device code is the size of the CUDA module
serialized into the exported library (it cannot be written by itself)."""

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
    """{symbol: size} of an ELF object's defined functions (``symbol_type`` 1: data objects), else NotElf."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise NotElf("not an ELF object")
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    try:
        (shoff,) = struct.unpack_from(end + ("Q" if is64 else "I"), data, 0x28 if is64 else 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A if is64 else 0x2E)
        section = end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
        sections = [struct.unpack_from(section, data, shoff + i * shentsize) for i in range(shnum)]
        sizes: dict[str, int] = {}
        for _, kind, _, _, off, size, link, _, _, entsize in sections:
            if kind != _SHT_SYMTAB or not entsize:
                continue
            _, _, _, _, str_off, str_size, *_ = sections[link]
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


def measure_code_size(module: Any, kernels: Iterable[str], library: Path | None = None) -> CodeSize | str:
    """The code size of ``module`` (and its imports) by kernel, or why it cannot be read;
    ``library``: the module already exported, read instead of generating the code again to
    write each LLVM module as an object (a second or so for a network)."""
    import tvm

    modules, todo = [], [module]
    while todo:  # the module and its imports, breadth first
        modules.append(todo.pop(0))
        todo.extend(modules[-1].imports)
    kinds = [(str(getattr(m, "kind", None) or getattr(m, "type_key", "")), m) for m in modules]
    llvm, cuda = [m for k, m in kinds if k == "llvm"], [m for k, m in kinds if k == "cuda"]
    if not llvm:
        return "the compiled module has no LLVM code to measure"
    with tempfile.TemporaryDirectory(prefix="tvmperf-code-") as tmp:
        if cuda and not _library_symbols(library):  # its device code is read from an exported library only
            library = Path(tmp) / "exported.so"
            try:
                module.export_library(str(library))
            except Exception as exc:  # no host toolchain to link with
                return f"the CUDA module's size is read from the exported library, which could not be made ({exc})"
        from_library = _library_symbols(library)
        parts = by_kernel(from_library, kernels)
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
            device = _library_symbols(library, _STT_OBJECT).get(LIBRARY_BIN)
            if device is None:
                return "the exported library holds no serialized CUDA module to measure"
            parts[CUDA_PART] = device
    try:
        llvm_version = str(tvm.target.codegen.llvm_version_major())
    except Exception:
        llvm_version = "?"
    return CodeSize(sum(parts.values()), parts, f"tvm {tvm.__version__}, llvm {llvm_version}")


def _library_symbols(library: Path | None, symbol_type: int = 2) -> dict[str, int]:
    """The function (or data object) sizes of an exported library; {} where there are none."""
    try:
        return elf_function_sizes(Path(library).read_bytes(), symbol_type) if library is not None else {}
    except (OSError, NotElf):
        return {}
