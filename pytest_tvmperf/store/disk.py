"""Room to write a compiled library. LLVM ends the whole process when a write of an export
fails (``LLVM ERROR: IO failure on output stream``, exit 1, native stderr silenced: pytest
stops mid-line). So before an export the disk's room and ``ulimit -f`` are checked, and
the one test fails with a message when they fall short."""

from __future__ import annotations

import shutil
from pathlib import Path

#: the room an export needs: a library of the plugin's own workloads is well under it
EXPORT_ROOM = 64 * 2**20


def room_problem(directory: Path, need: int = EXPORT_ROOM) -> str | None:
    """Why a library of up to ``need`` bytes cannot be written into ``directory``, or None."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft != resource.RLIM_INFINITY and soft < need:
            return (
                f"this process may write files of at most {_size(soft)} (ulimit -f), and a compiled "
                f"library may need {need / 2**20:g} MiB: raise the limit (ulimit -f unlimited)"
            )
    except (ImportError, OSError, ValueError):
        pass
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return None
    if free < need:
        return (
            f"the disk of {directory} has {_size(free)} free, and a compiled library may need "
            f"{need / 2**20:g} MiB: free some space (or point TMPDIR at a larger disk)"
        )
    return None


def _size(n: int) -> str:
    return f"{n / 2**20:.3g} MiB" if n >= 2**20 else f"{n / 2**10:.3g} KiB"
