"""The simulated cost's measuring process (simulate.py): whether this machine can run it, the
valgrind command that starts it, its environment (pure but for :func:`valgrind_version`)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from pytest_tvmperf.measure import callgrind

PINNED_DESCRIPTION = "llvm -mcpu=haswell, 1 thread"
X86 = ("x86_64", "amd64", "i686", "i386")
HARNESS = Path(__file__).with_name("sim_harness.py")


def host_problem(which=shutil.which, machine: str | None = None) -> str | None:
    """Why this machine cannot simulate (no valgrind, not x86), or None."""
    arch = (machine or platform.machine()).lower()
    if arch not in X86:
        return f"simulated cost needs an x86-64 host (valgrind's x86 simulation); this one is {arch}"
    return "valgrind is not installed (apt-get install valgrind)" if which("valgrind") is None else None


def valgrind_version(run=subprocess.run) -> str:
    """'valgrind-3.19.0' (what ``valgrind --version`` prints), or 'valgrind (version unknown)'."""
    try:
        out = run(["valgrind", "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or "valgrind (version unknown)"


def describe_setup(llvm_major: str, valgrind: str) -> str:
    """What the counts depend on besides the code (``exact.measured_with``: compared only alike)."""
    caches = " ".join(option.lstrip("-") for option in callgrind.CACHE_MODEL)
    return f"{PINNED_DESCRIPTION}, LLVM {llvm_major}; {valgrind}; caches {caches}"


def valgrind_command(out_file: Path, python: str = sys.executable) -> list[str]:
    return [
        shutil.which("valgrind") or "valgrind",
        *"--tool=callgrind --instr-atstart=no --cache-sim=yes".split(),
        *callgrind.CACHE_MODEL,
        *"--compress-strings=no --compress-pos=no --dump-instr=no --dump-line=no".split(),
        f"--callgrind-out-file={out_file}",
        python,
        str(HARNESS),
    ]


#: what the measuring process keeps of the session's environment: what finds Python's
#: packages, TVM and valgrind (both started by absolute path). Nothing else: the environment
#: is copied onto the stack and heap at start-up, and a variable changing between sessions
#: (PYTEST_CURRENT_TEST, xdist's worker, a venv's PATH) moved the heap, and the cache misses
KEPT_ENV = tuple(
    "HOME LD_LIBRARY_PATH PYTHONPATH PYTHONHOME TVMPERF_TVM_RUNTIME TVMPERF_PRELOAD_RUNTIME TVMPERF_ALLOW_TORCH".split()
)
KEPT_ENV_PREFIXES = ("TVM_FFI_", "VALGRIND_")


def harness_env(base: Mapping[str, str], out_file: Path) -> dict[str, str]:
    """The measuring process's environment: the variables it needs from ``base`` (sorted,
    so the same set of values is the same environment), one TVM thread (a spinning worker
    would count its waits), a fixed hash seed and malloc threshold (the same heap layout, so
    the same simulated cache conflicts), no torch import by tvm_ffi."""
    kept = {k: v for k, v in sorted(base.items()) if k in KEPT_ENV or k.startswith(KEPT_ENV_PREFIXES)}
    return {
        **kept,
        "TVMPERF_CG_OUT": str(out_file),
        "PYTHONHASHSEED": "0",
        "TVM_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536",
    }
