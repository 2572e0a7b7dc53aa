"""No import circle between the package's modules, counting every import: module-level,
function-level and ``TYPE_CHECKING`` ones (the import-linter contracts hold the layers; this
holds the modules within them). The import graph is grimp's, the one import-linter reads."""

from __future__ import annotations

import grimp


def circles(package: str) -> set[tuple[str, str]]:
    """Each direct import ``a -> b`` of ``package`` through which ``b`` leads back to ``a``."""
    graph = grimp.build_graph(package, cache_dir=None)
    return {
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.chain_exists(importer=imported, imported=importer)
    }


def test_the_finder_sees_a_circle_through_a_function_level_import(tmp_path, monkeypatch):
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclepkg.b import x\n")
    (pkg / "b.py").write_text("def x():\n    from cyclepkg import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("cyclepkg") == {("cyclepkg.a", "cyclepkg.b"), ("cyclepkg.b", "cyclepkg.a")}


def test_the_package_has_no_import_circle():
    assert circles("pytest_tvmperf") == set()
