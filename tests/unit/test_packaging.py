"""What ``pip install`` of the package's extras brings."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _extra(name: str) -> list[str]:
    return tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"][name]


def test_the_peers_extra_runs_the_suite_with_xdist():
    """issue 26: ``pip install -e ".[peers]"`` users could not use ``-n 2`` as the README shows."""
    assert any(req.replace(" ", "").startswith("pytest-xdist") for req in _extra("peers"))
