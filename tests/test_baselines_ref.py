"""--tvmperf-baselines-ref: the baselines are read from a git revision (issue 23 §1), so
that a pull request cannot change what it is judged against."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from test_gate import MLP_TEST, TWO_TESTS

def _git(root, *args):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
    return subprocess.run([*git, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def _first_commit(root, message: str) -> None:
    """A new repository on ``main`` holding everything under ``root``."""
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)


def test_a_pull_request_is_judged_against_the_baselines_of_a_git_ref(project):
    """A pull request that regresses the code and re-records baselines/ passed its own
    gate. With --tvmperf-baselines-ref=main the baselines are read from main, whatever
    the work tree (or the pull request's commits) hold."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=MLP_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _first_commit(root, "baselines")
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
    _first_commit(root, "first")
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
    _first_commit(root, "no baselines yet")
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


def test_settings_of_a_change_that_loosen_the_gate_are_named_against_the_ref(project, tmp_path):
    """A pull request that adds ``tvmperf_artifacts = off`` (and a 500% threshold) to
    pytest.ini switches off a/b timing, the only time gate on hosted CI: with the trusted
    ref, the run names every tvmperf setting that differs from the ref's, in the summary
    and the step summary."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    (root / "pytest.ini").write_text("[pytest]\ntvmperf_layers = off\ntvmperf_threshold = time=5%\n")
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    _first_commit(root, "baselines")
    (root / "pytest.ini").write_text("[pytest]\ntvmperf_layers = on\ntvmperf_threshold = time = 5%\n"
                                     "tvmperf_artifacts = off\ntvmperf_inconclusive = pass\n")
    summary = tmp_path / "summary.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random([
        "*pytest.ini sets tvmperf_artifacts = 'off', pytest.ini at main leaves tvmperf_artifacts unset (its default): "
        "a setting of this change that can loosen the gate*",
        "*pytest.ini sets tvmperf_inconclusive = 'pass', pytest.ini at main leaves tvmperf_inconclusive unset*"])
    out = result.stdout.str()
    assert "tvmperf_threshold" not in out  # the same threshold, written otherwise
    assert "tvmperf_layers" not in out  # shows more, loosens nothing
    text = summary.read_text()
    assert "tvmperf_artifacts = 'off'" in text and "tvmperf_inconclusive = 'pass'" in text


def test_a_configuration_that_switches_ab_timing_off_says_it_weakens_the_time_gate(project):
    """Without a ref: the time of a test with no time baseline for this machine is shown,
    not gated, and a/b timing is off by the configuration: the run says so."""
    from test_gate import _move_timings_to_another_machine

    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    _move_timings_to_another_machine(project, tvm_threads=7)  # recorded on another machine, as on hosted CI
    (root / "pytest.ini").write_text("[pytest]\ntvmperf_artifacts = off\n")
    project.set_env("TVMPERF_FAKE_SCALE", "20")
    result = project.run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*a/b timing is off (tvmperf_artifacts = off in pytest.ini): 2 test(s) with no time "
                                 "baseline for this machine were shown, not gated; the configuration weakens the time "
                                 "gate*"])
