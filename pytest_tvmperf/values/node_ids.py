"""A test's names as the plugin shows and stores them (pure: strings and paths in and out)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def test_id(nodeid: str) -> str:
    """The test id a baseline entry is stored under: the node id without its module
    (``tests/test_mlp.py::test_mlp[llvm-vm-bytecode]`` -> ``test_mlp[llvm-vm-bytecode]``)."""
    return "::".join(nodeid.split("::")[1:])


@dataclass(frozen=True)
class RefView:
    """``--tvmperf-baselines-ref``: the temporary copies of a git revision's directories,
    each with its path in the repository, so a file of a copy is shown as the file it is
    (``baselines/tests/test_k.json at origin/main``), not as a path deleted at exit."""

    ref: str
    #: (the copy's directory, the directory's path inside the repository)
    copies: tuple[tuple[Path, str], ...] = ()
    #: the work tree's baseline directory (the change's own baselines, read only to show
    #: and verify what it changed: check/approval.py)
    worktree: Path | None = None

    def show(self, path: Path) -> str | None:
        for directory, inside in self.copies:
            if Path(path).is_relative_to(directory):
                rel = Path(path).relative_to(directory).as_posix()
                name = "/".join(p for p in (inside.strip("/") if inside != "." else "", rel if rel != "." else "") if p)
                return f"{name or '.'} at {self.ref}"
        return None


def display_path(path: Path, rootpath: Path, ref_view: RefView | None = None) -> str:
    """``path`` relative to the rootdir where it is inside it, else as it is; a file of a
    git revision's copy as that revision's file (:class:`RefView`)."""
    if ref_view is not None and (shown := ref_view.show(path)) is not None:
        return shown
    return str(path.relative_to(rootpath)) if path.is_relative_to(rootpath) else str(path)
