"""--tvmperf-baselines-ref: the baselines are read from a git revision (issue 23 §1), so
that a pull request cannot change what it is judged against."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from test_gate import MLP_TEST, TWO_TESTS

def _git(root, *args):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
    return subprocess.run([*git, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_a_pull_request_is_judged_against_the_baselines_of_a_git_ref(project):
    """A pull request that regresses the code and re-records baselines/ passed its own
    gate. With --tvmperf-baselines-ref=main the baselines are read from main, whatever
    the work tree (or the pull request's commits) hold."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=MLP_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "baselines")
    _git(root, "checkout", "-qb", "pr")
    project.set_env("MLP_BIND", "0")  # the pull request's slower variant ...
    project.run("--tvmperf-update").assert_outcomes(passed=1)  # ... with its baselines re-recorded
    _git(root, "commit", "-qam", "re-record")
    recorded = project.baseline_file().read_text()

    project.run().assert_outcomes(passed=1)  # judged against its own baselines: nothing to fail

    copies = set(Path(tempfile.gettempdir()).glob("tvmperf-run-ref-*"))  # other runs' (on a shared /tmp)
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*instructions*regressed against the baseline*",
                                 "*baselines read from baselines/ at main (commit *), not from the work tree*"])
    assert project.baseline_file().read_text() == recorded  # the work tree is not touched
    assert set(Path(tempfile.gettempdir()).glob("tvmperf-run-ref-*")) <= copies  # the copy is removed

    project.set_env("TVMPERF_BASELINES_REF", "main")  # also from the environment (and the ini)
    project.run().assert_outcomes(failed=1)


def test_a_baselines_ref_that_does_not_exist_or_with_update_is_a_usage_error(project):
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    result = project.run("--tvmperf-baselines-ref=origin/nosuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tvmperf-baselines-ref=origin/nosuch: no such git revision in *git fetch*"])
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tvmperf-baselines-ref=main reads the baselines from git and --tvmperf-update "
                                 "writes them in the work tree: use one or the other*"])
    result = project.run("--tvmperf-baselines-ref=--output=x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (root / "baselines").exists()


def test_failures_under_a_baselines_ref_name_the_file_at_the_ref_not_a_temporary_copy(project):
    """The ref's baselines are read from a temporary copy deleted at exit: a message names
    the file as it is in the repository, at the ref (``baselines/test_perf.json at main``)."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "no baselines yet")
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*no baseline for test_a[[]llvm-prim[]] in baselines/test_perf.json at main*"])
    assert "tvmperf-run-ref" not in result.stdout.str()

    project.baseline_file().parent.mkdir()
    project.baseline_file().write_text("{not json")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "a damaged baseline file")
    result = project.run("--tvmperf-baselines-ref=main")
    result.stdout.fnmatch_lines(["*baseline file baselines/test_perf.json at main is not valid JSON*"])
    assert "tvmperf-run-ref" not in result.stdout.str()
