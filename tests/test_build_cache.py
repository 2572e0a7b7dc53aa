"""The build cache (store/user_cache.py, builder/rebuild.py): a library a project holds
can never stand in for a build, and a build of the cache is used once it is whole."""

from __future__ import annotations

import json
import shutil
import subprocess

from tests.test_rebuilt_baseline import PLANTED_LIBRARY, TESTS


def test_a_library_planted_where_the_cache_used_to_be_is_never_loaded(project, tmp_path):
    """Issue 23 §1: ``.tvmperf-cache/ab/<fingerprint>/prim-<IR sha>.so`` in the project
    (both names readable in the committed baseline file) was loaded with no check. The
    cache now lives outside the project; a pull request can only plant files inside it."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler (TVM exports libraries with it)"
    project.set_env("TVMPERF_CACHE_DIR", str(tmp_path / "user-cache"))  # the user's own cache
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    project.run().assert_outcomes(passed=2)
    (built,) = (tmp_path / "user-cache").rglob("prim-*.so")  # one symbolic-shape program: one library
    entry = project.baselines()["tests"]["test_a[llvm-prim]"]
    assert built.name == f"prim-{entry['ir']['sha256'][:32]}.so"

    owned = project.pytester.path / "owned"
    source = project.pytester.path / "planted.c"
    source.write_text(PLANTED_LIBRARY.replace("OWNED", json.dumps(str(owned))))
    old_place = project.pytester.path / ".tvmperf-cache" / "ab" / built.parent.name / built.name
    old_place.parent.mkdir(parents=True)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(old_place), str(source)], check=True)
    shutil.rmtree(tmp_path / "user-cache")  # a fresh CI machine: nothing cached yet
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*a/b, baseline rebuilt here*pass*"])
    assert not owned.exists()
    (rebuilt,) = (tmp_path / "user-cache").rglob("prim-*.so")
    assert rebuilt.read_bytes() != old_place.read_bytes()
