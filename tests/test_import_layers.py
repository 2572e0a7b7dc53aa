"""The package's import layers (issue 34): the contracts of ``[tool.importlinter]`` in
pyproject.toml hold, every import counted (those inside functions too), and a broken one
fails this test with import-linter's report of the chain that breaks it."""

from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(config: Path, cache_dir: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, "--no-logo", "--cache-dir", str(cache_dir), str(config)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_import_contracts_are_kept(tmp_path: Path):
    run = _lint_imports(ROOT / "pyproject.toml", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 broken" in run.stdout and "BROKEN" not in run.stdout, run.stdout


def test_the_layers_contract_names_every_top_level_module():
    """The full layer order lists every top-level module and package of pytest_tvmperf
    (``exhaustive``, with nothing left out by ``exhaustive_ignores``), each once, so a new
    one cannot slip in unlisted; and it counts every import (no ignored or type-checking
    imports left out, no indirect chain allowed)."""
    import pytest_tvmperf

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = [c for c in config["contracts"] if c.get("id") == "layers"]
    assert len(layers) == 1, layers
    contract = layers[0]
    assert contract["type"] == "layers" and contract["containers"] == ["pytest_tvmperf"], contract
    assert contract.get("exhaustive") is True and not contract.get("exhaustive_ignores"), contract
    for loosening in (
        "ignore_imports",
        "exclude_type_checking_imports",
        "allow_indirect_imports",
        "unmatched_ignore_imports_alerting",
    ):
        assert loosening not in contract, loosening
    assert not config.get("exclude_type_checking_imports"), config
    listed = [name for layer in contract["layers"] for name in re.split(r"[|:]", layer)]
    listed = [name.strip() for name in listed]
    assert len(listed) == len(set(listed)), listed
    modules = {m.name for m in pkgutil.iter_modules(pytest_tvmperf.__path__)}
    assert modules, pytest_tvmperf.__path__
    assert set(listed) == modules, (sorted(modules - set(listed)), sorted(set(listed) - modules))


def test_a_broken_contract_fails(tmp_path: Path):
    """The check is live: a contract the package breaks (config sits above values, so
    values may not be imported by it) is reported as broken, with a failing status."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "pytest_tvmperf"\n\n'
        '[[tool.importlinter.contracts]]\nname = "config imports no value"\ntype = "forbidden"\n'
        'source_modules = ["pytest_tvmperf.config"]\nforbidden_modules = ["pytest_tvmperf.values"]\n'
    )
    run = _lint_imports(config, tmp_path / "cache")
    assert run.returncode != 0
    assert "config imports no value BROKEN" in run.stdout, run.stdout
    assert "pytest_tvmperf.config." in run.stdout and "-> pytest_tvmperf.values." in run.stdout, run.stdout
