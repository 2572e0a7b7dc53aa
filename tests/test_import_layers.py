"""The package's import layers (issue 34): the contracts of ``[tool.importlinter]`` in
pyproject.toml hold, every import counted (those inside functions too), and a broken one
fails this test with import-linter's report of the chain that breaks it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(config: Path, cache_dir: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code, "--no-logo", "--cache-dir", str(cache_dir), str(config)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_import_contracts_are_kept(tmp_path: Path):
    run = _lint_imports(ROOT / "pyproject.toml", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 broken" in run.stdout and "BROKEN" not in run.stdout, run.stdout


def test_a_broken_contract_fails(tmp_path: Path):
    """The check is live: a contract the package breaks (config sits above values, so
    values may not be imported by it) is reported as broken, with a failing status."""
    config = tmp_path / "contracts.toml"
    config.write_text('[tool.importlinter]\nroot_package = "pytest_tvmperf"\n\n'
                      '[[tool.importlinter.contracts]]\nname = "config imports no value"\ntype = "forbidden"\n'
                      'source_modules = ["pytest_tvmperf.config"]\nforbidden_modules = ["pytest_tvmperf.values"]\n')
    run = _lint_imports(config, tmp_path / "cache")
    assert run.returncode != 0
    assert "config imports no value BROKEN" in run.stdout, run.stdout
    assert "pytest_tvmperf.config." in run.stdout and "-> pytest_tvmperf.values." in run.stdout, run.stdout
