"""Where ``nvcc`` (CUDA C -> PTX) and ``ptxas`` (PTX -> SASS; ``-v``: each kernel's
registers, shared memory and spills) are: on PATH, under ``$CUDA_HOME`` (or
``$CUDA_PATH``, else ``/usr/local/cuda``), or in NVIDIA's PyPI wheels (``pip install
'pytest-tvmperf[cuda]'``: one ``nvidia/cu13`` tree). Nothing here touches a GPU."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "install the CUDA toolkit (nvcc, ptxas) or pip install 'pytest-tvmperf[cuda]'"


@dataclass(frozen=True)
class CudaToolchain:
    nvcc: str | None
    ptxas: str | None

    @property
    def missing(self) -> str | None:
        """'nvcc and ptxas are not installed (...)', or None when both are there."""
        absent = [name for name, path in (("nvcc", self.nvcc), ("ptxas", self.ptxas)) if path is None]
        if not absent:
            return None
        return f"{' and '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed ({INSTALL_HINT})"

    def env(self) -> dict[str, str]:
        """The environment for nvcc: its folder first on PATH (it runs ptxas and cicc from there)."""
        env = dict(os.environ)
        if self.nvcc:
            env["PATH"] = os.pathsep.join([str(Path(self.nvcc).parent), env.get("PATH", "")])
        return env


def _wheel_bins() -> list[Path]:
    """The ``bin`` folders of NVIDIA's CUDA wheels (``nvidia/cu13/bin``, ``nvidia/cuda_nvcc/bin``)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(
        p / "bin" for root in spec.submodule_search_locations for p in Path(root).iterdir() if (p / "bin").is_dir()
    )


def _find(tool: str, path: str | None) -> str | None:
    found = shutil.which(tool, path=path)
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    dirs = [Path(home) / "bin", *_wheel_bins()]
    return next((str(d / tool) for d in dirs if os.access(d / tool, os.X_OK)), None)


def find_toolchain(path: str | None = None) -> CudaToolchain:
    """nvcc and ptxas on ``path`` (default PATH) or in the usual places."""
    return CudaToolchain(_find("nvcc", path), _find("ptxas", path))


@functools.lru_cache(maxsize=None)
def tool_version(tool: str) -> str:
    """'V13.0.88' from ``ptxas --version`` (its last 'V...' word), or 'version unknown'."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    words = [w for w in out.replace(",", " ").split() if w[:1] == "V" and w[1:2].isdigit()]
    return words[-1] if words else "version unknown"
