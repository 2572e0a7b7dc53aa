"""A test's names as the plugin shows and stores them (pure: strings and paths in and out)."""

from __future__ import annotations

from pathlib import Path


def test_id(nodeid: str) -> str:
    """The test id a baseline entry is stored under: the node id without its module
    (``tests/test_mlp.py::test_mlp[llvm-vm-bytecode]`` -> ``test_mlp[llvm-vm-bytecode]``)."""
    return "::".join(nodeid.split("::")[1:])


def display_path(path: Path, rootpath: Path) -> str:
    """``path`` relative to the rootdir where it is inside it, else as it is."""
    return str(path.relative_to(rootpath)) if path.is_relative_to(rootpath) else str(path)
