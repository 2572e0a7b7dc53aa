"""The build cache (store/user_cache.py, builder/rebuild.py): a library a project holds
can never stand in for a build, and a build of the cache is used once it is whole."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

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


def test_a_cache_directory_that_cannot_be_made_falls_back_to_a_private_one(project, tmp_path):
    """A home that cannot hold the cache (as in many CI containers): the baseline's IR is
    rebuilt all the same in a private temporary cache (removed at the end), never blamed
    on TVM, and a/b timing stays on."""
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    import pytest

    if not Path("/proc/self").is_dir():
        pytest.skip("needs /proc: a directory nobody, not even root, can make a directory in")
    blocker = Path("/proc/tvmperf-no-such-home")  # mkdir there: FileNotFoundError, as for a missing home
    project.monkeypatch.delenv("TVMPERF_CACHE_DIR")
    project.set_env("XDG_CACHE_HOME", str(blocker / ".cache"))
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "cannot be rebuilt by TVM" not in out
    result.stdout.fnmatch_lines(
        [
            "*test_a[[]llvm-prim[]]*a/b, baseline rebuilt here*pass*",
            f"*the cache directory {blocker / '.cache'}/pytest-tvmperf cannot be made*private "
            f"temporary directory (mode 700), removed at its end*",
        ]
    )
    import os

    assert os.environ.get("TVMPERF_CACHE_DIR") is None  # the run's own, given back


def test_a_cache_bound_of_inf_is_a_usage_error_naming_the_variable(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.set_env("TVMPERF_CACHE_MAX_MB", "inf")
    result = project.run()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*environment variable TVMPERF_CACHE_MAX_MB='inf': expected a positive number of MB*"])
    assert "TVM 0" not in result.stderr.str() + result.stdout.str()
