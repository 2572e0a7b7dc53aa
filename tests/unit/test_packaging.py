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


def _project() -> dict:
    return tomllib.loads(PYPROJECT.read_text())["project"]


def test_the_version_is_one_and_the_changelog_names_it():
    import pytest_tvmperf

    version = _project()["version"]
    assert pytest_tvmperf.__version__ == version
    changelog = (PYPROJECT.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {version}" in changelog


def test_the_peers_extra_exports_torch_models_to_onnx():
    """``torch.onnx.export`` needs onnxscript since torch 2.9; the extra with torch and onnx brings it."""
    assert any(req.startswith("onnxscript") for req in _extra("peers"))


def test_the_sdist_and_wheel_build_and_pass_twine_check(tmp_path: Path):
    """``python -m build`` then ``twine check --strict``: what PyPI would accept, with the metadata
    a user reads there (the README as Markdown, the license, the keywords, the extras)."""
    import subprocess
    import sys
    import zipfile
    from email.parser import Parser

    import pytest

    pytest.importorskip("build", reason="build is in the test extra: pip install -e '.[test]'")
    pytest.importorskip("twine", reason="twine is in the test extra: pip install -e '.[test]'")
    root = PYPROJECT.parent
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    dists = sorted(tmp_path.iterdir(), key=lambda p: p.suffix)
    assert [p.suffix for p in dists] == [".gz", ".whl"], dists
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(dists[1]) as wheel:
        names = wheel.namelist()
        meta = Parser().parsestr(wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
        entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert meta["Name"] == "pytest-tvmperf" and meta["Version"] == _project()["version"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["License-Expression"] == "Apache-2.0"
    assert "tvm" in meta["Keywords"]
    assert "Framework :: Pytest" in meta.get_all("Classifier")
    assert {"onnx", "torch", "peers"} <= set(meta.get_all("Provides-Extra"))
    assert "tvmperf = pytest_tvmperf.plugin" in entry_points  # pytest finds the plugin once installed
    assert "pytest_tvmperf/workloads/__init__.py" in names
    # the license's text travels with both (its SPDX id alone names it, the text grants it)
    license_text = (root / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert meta.get_all("License-File") == ["LICENSE"]
    with zipfile.ZipFile(dists[1]) as wheel:
        assert wheel.read(next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))).decode() == license_text
    import tarfile

    with tarfile.open(dists[0]) as sdist:
        assert any(m.name.endswith("/LICENSE") and m.name.count("/") == 1 for m in sdist.getmembers())


def test_every_test_module_has_its_own_basename():
    """The suite runs in pytest's default import mode (no ``__init__.py`` in tests/): two test
    modules of one basename stop the whole run at collection ("import file mismatch"), as
    ``tests/test_locks.py`` and ``tests/unit/test_locks.py`` did at one stop's CI."""
    tests = PYPROJECT.parent / "tests"
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted(tests.rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name]} and {path}")
        seen.setdefault(path.name, path)
    assert not clashes, "rename one of each: " + "; ".join(clashes)
