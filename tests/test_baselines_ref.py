"""--tvmperf-baselines-ref: the baselines are read from a git revision (issue 23 §1), so
that a pull request cannot change what it is judged against."""

from __future__ import annotations

import json
import tempfile

import pytest

from gitrepo import first_commit as _first_commit
from gitrepo import git as _git
from test_gate import MLP_TEST, SCALE_WORKLOAD, TWO_TESTS


def test_a_pull_request_is_judged_against_the_baselines_of_a_git_ref(project, tmp_path, monkeypatch):
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

    private = tmp_path / "tmp"  # this test's own temporary directory: other runs on a shared /tmp make copies too
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*instructions*regressed against the baseline*",
            "*baselines read from baselines/ at main (commit *), not from the work tree*",
        ]
    )
    assert project.baseline_file().read_text() == recorded  # the work tree is not touched
    assert list(private.glob("tvmperf-run-ref-*")) == []  # the copy is removed

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
    result.stderr.fnmatch_lines(
        [
            "*--tvmperf-baselines-ref=main reads the baselines from git and --tvmperf-update "
            "writes them in the work tree: use one or the other*"
        ]
    )
    result = project.run("--tvmperf-baselines-ref=--output=x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (root / "baselines").exists()


def test_failures_under_a_baselines_ref_name_the_file_at_the_ref_not_a_temporary_copy(project):
    """The ref's baselines are read from a temporary copy deleted at exit: a message names
    the file as it is in the repository, at the ref (``baselines/test_perf.json at main``)."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    _first_commit(root, "no baselines yet")
    result = project.run("--tvmperf-baselines-ref=main")  # issue 45: no baselines/ at all there: one line
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--tvmperf-baselines-ref=main: baselines/ does not exist at main (commit *), so "
            "there is nothing to judge this change against: check that the ref is the base "
            "branch*; if this change adds the first baselines, a maintainer approves them with "
            "--tvmperf-approved-change=on*"
        ]
    )
    (root / "baselines").mkdir()
    (root / "baselines" / ".gitkeep").write_text("")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "a baseline directory without this module's file")
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*no baseline for test_a[[]llvm-prim[]] in baselines/test_perf.json at main*",
            "*create it with: pytest --tvmperf-update*",
            "*on a pull request that changes this on purpose: run that command, commit "
            "baselines/, and a maintainer who has reviewed the change approves it with "
            "--tvmperf-approved-change=on*",
        ]
    )
    assert "tvmperf-run-ref" not in result.stdout.str()

    project.baseline_file().parent.mkdir(exist_ok=True)
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
    (root / "pytest.ini").write_text(
        "[pytest]\ntvmperf_layers = on\ntvmperf_threshold = time = 5%\n"
        "tvmperf_artifacts = off\ntvmperf_inconclusive = pass\n"
    )
    summary = tmp_path / "summary.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*pytest.ini sets tvmperf_artifacts = 'off', pytest.ini at main leaves tvmperf_artifacts unset (its default): "
            "a setting of this change that can loosen the gate*",
            "*pytest.ini sets tvmperf_inconclusive = 'pass', pytest.ini at main leaves tvmperf_inconclusive unset*",
        ]
    )
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
    result.stdout.fnmatch_lines(
        [
            "*a/b timing is off (tvmperf_artifacts = off in pytest.ini): 2 test(s) with no time "
            "baseline for this machine were shown, not gated; the configuration weakens the time "
            "gate*"
        ]
    )


def _entry_of_pr(project):
    return project.baselines()["tests"]["test_mlp[llvm-vm-bytecode]"]


def test_an_intended_change_fails_until_approved_then_its_baselines_are_verified(project, tmp_path):
    """issue 45: a pull request that changes the program on purpose and commits its
    re-recorded baselines fails against the base branch, saying what it re-recorded and
    how a maintainer approves it; with the approval the same gate judges it against its own
    entry, which is what this code measures: it passes, naming the approved change. A
    baseline edited by hand fails even with the approval, naming the entry and why."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=MLP_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _first_commit(root, "baselines")
    before = _entry_of_pr(project)["exact"]["instructions"]["forward"]
    _git(root, "checkout", "-qb", "pr")
    project.set_env("MLP_BIND", "0")  # the change: weights passed at run time, more instructions
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _git(root, "commit", "-qam", "re-record")
    after = _entry_of_pr(project)["exact"]["instructions"]["forward"]
    assert after != before

    summary, md = tmp_path / "summary.md", tmp_path / "changes.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run("--tvmperf-baselines-ref=main", f"--tvmperf-changes-md={md}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*instructions*regressed against the baseline in baselines/test_perf.json at main*",
            "*this change re-recorded the baseline of test_mlp[[]llvm-vm-bytecode[]] in baselines/test_perf.json "
            "(against baselines/test_perf.json at main)*",
            f"*instructions {before} -> {after} (+{after - before})*",
            "*to approve: a maintainer who has reviewed the change approves it with --tvmperf-approved-change=on*",
        ]
    )
    for text in (md.read_text(), summary.read_text()):
        assert "this change re-recorded 1 baseline(s) against `main` (1 not approved)" in text
        assert f"instructions {before} -> {after}" in text and "**To approve:**" in text
    assert "unapproved change" in summary.read_text()

    summary.write_text("")
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on", f"--tvmperf-changes-md={md}")
    result.assert_outcomes(passed=1)
    assert "(1 approved, verified)" in md.read_text() and "(1 approved, verified)" in summary.read_text()

    entry = project.baselines()  # by hand: a looser number than the code measures
    entry["tests"]["test_mlp[llvm-vm-bytecode]"]["exact"]["instructions"]["forward"] = after + 40
    project.baseline_file().write_text(json.dumps(entry))
    _git(root, "commit", "-qam", "edited by hand")
    project.set_env("TVMPERF_APPROVED_CHANGE", "on")  # also from the environment
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the approved baseline of test_mlp[[]llvm-vm-bytecode[]] in baselines/test_perf.json does not match what "
            "this code measures here*",
            f"*instructions: the entry says {after + 40}, this code measures {after} (lower; limit no increase, both ways for a re-recorded entry)*",
        ]
    )


def test_approval_belongs_to_a_pull_requests_gate_and_never_to_its_configuration(project):
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    result = project.run("--tvmperf-approved-change=on")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--tvmperf-approved-change is for a pull request's gate against its base branch: "
            "give --tvmperf-baselines-ref=origin/<base> too*"
        ]
    )
    (root / "pytest.ini").write_text("[pytest]\naddopts = --tvmperf-approved-change=on\n")
    _first_commit(root, "first")
    result = project.run("--tvmperf-baselines-ref=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*addopts in pytest.ini passes --tvmperf-approved-change: the approval of a pull "
            "request's baselines comes from the CI job*"
        ]
    )
    # issue 66: through an argument file, in addopts or on the job's command line (the file is the
    # pull request's): decided from where pytest read it, not from the text of addopts
    (root / "ci.args").write_text("--tvmperf-approved-change=on\n")
    for ini, args in (("[pytest]\naddopts = @ci.args\n", ()), ("[pytest]\n", ("@ci.args",))):
        (root / "pytest.ini").write_text(ini)
        result = project.run("--tvmperf-baselines-ref=main", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
        result.stderr.fnmatch_lines(
            [
                "*--tvmperf-approved-change=on reached this run through pytest's configuration (addopts, or "
                "an argument file @FILE*a pull request cannot approve itself*"
            ]
        )

    # from the job itself: its command line, $PYTEST_ADDOPTS, $TVMPERF_APPROVED_CHANGE (the tests then run)
    def runs(*args: str) -> None:
        result = project.run("--tvmperf-baselines-ref=main", *args)
        assert result.ret != pytest.ExitCode.USAGE_ERROR and "approve itself" not in result.stderr.str()
        assert sum(result.parseoutcomes().get(k, 0) for k in ("passed", "failed")) == 2

    runs("--tvmperf-approved-change=on")
    project.set_env("PYTEST_ADDOPTS", "--tvmperf-approved-change=on")
    runs()
    project.monkeypatch.delenv("PYTEST_ADDOPTS")
    project.set_env("TVMPERF_APPROVED_CHANGE", "on")
    runs()


def test_a_changes_unreadable_baselines_fail_as_they_would_without_a_ref(project):
    """issue 45, bad input: the pull request's own baseline file, broken, fails its tests with
    the error a run without a ref gives (naming the file), never silently ignored."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    _first_commit(root, "baselines")
    project.baseline_file().write_text("{not json")
    without_ref = project.run()
    without_ref.assert_outcomes(failed=2)
    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"*baseline file {project.baseline_file()} is not valid JSON*"])
    wanted = [line for line in without_ref.stdout.lines if "is not valid JSON" in line]
    assert wanted and all(line in result.stdout.lines for line in wanted)


TWO_MLPS = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"])
@pytest.mark.parametrize("batch", [1, 2])
def test_mlp(tvmperf, batch):
    tvmperf.check(workloads.mlp(batch=batch, bind_params=os.environ.get("MLP_BIND", "1") == "1"))
"""


def test_the_change_report_under_xdist_lists_every_workers_changed_entry(project, tmp_path):
    """The change report is made in the controller from the workers' results: under -n 2,
    the two re-recorded entries (one per worker) are both listed, each with its state,
    in the Markdown file and the step summary, unapproved and then approved."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_MLPS)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    _first_commit(root, "baselines")
    _git(root, "checkout", "-qb", "pr")
    project.set_env("MLP_BIND", "0")
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    _git(root, "commit", "-qam", "re-record")

    summary, md = tmp_path / "summary.md", tmp_path / "changes.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run("-n", "2", "--tvmperf-baselines-ref=main", f"--tvmperf-changes-md={md}")
    result.assert_outcomes(failed=2)
    for text in (md.read_text(), summary.read_text()):
        assert "this change re-recorded 2 baseline(s) against `main` (2 not approved)" in text
        assert "test_mlp[llvm-vm-bytecode-1]" in text and "test_mlp[llvm-vm-bytecode-2]" in text
    assert md.read_text().count(": not approved") == 2
    plain = md.read_text().replace("\\_", "_")  # Markdown escapes the underscores
    assert "alloc_bytes 3,584 B -> " in plain and "code_bytes " in plain  # the resources too

    summary.write_text("")
    result = project.run(
        "-n", "2", "--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on", f"--tvmperf-changes-md={md}"
    )
    result.assert_outcomes(passed=2)
    for text in (md.read_text(), summary.read_text()):
        assert "(2 approved, verified)" in text
        assert "test_mlp[llvm-vm-bytecode-1]" in text and "test_mlp[llvm-vm-bytecode-2]" in text


UNSCALED = """

@pytest.fixture(autouse=True)
def _unscaled(monkeypatch):  # the fake clock's slowdown is test_mlp's alone
    monkeypatch.setenv("TVMPERF_FAKE_SCALE", "1")
"""


def test_the_intended_change_flow_with_timing_on_rerecords_only_the_change_and_goes_green(project, tmp_path):
    """issue 59: a pull request makes one of two test files slower on purpose (time 3x, more
    instructions) and re-records the whole suite. The untouched file stays byte for byte (its
    samples moved, nothing the gate judges did); against the base only the changed test fails;
    approved, its entry is verified against its own stored time (not the base's program, which
    takes a third of the time) and passes; a hand-edited time in the entry fails."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=MLP_TEST, test_other=TWO_TESTS + UNSCALED)
    project.run("--tvmperf-update").assert_outcomes(passed=3)
    _first_commit(root, "baselines")
    untouched = project.baseline_file("test_other").read_bytes()
    _git(root, "checkout", "-qb", "pr")
    project.set_env("MLP_BIND", "0")  # the change: more instructions ...
    project.set_env("TVMPERF_FAKE_SCALE", "3")  # ... and its time 3x (the fake clock scales today's code only)
    project.set_env("TVMPERF_FAKE_SPREAD", "0.02")  # every test's samples move by noise
    result = project.run("--tvmperf-update")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*baselines written for 3 test(s)*(1 rewritten, 2 kept as they were*"])
    assert project.baseline_file("test_other").read_bytes() == untouched
    _git(root, "commit", "-qam", "re-record")

    result = project.run("--tvmperf-baselines-ref=main")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["test_mlp[[]llvm-vm-bytecode[]]*unapproved change*"])

    summary = tmp_path / "summary.md"
    project.set_env("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on")
    result.assert_outcomes(passed=3)
    assert "(1 approved, verified)" in summary.read_text()

    # too noisy to tell the time within its limit: verified where nothing is refuted, and saying how far
    project.set_env("TVMPERF_FAKE_SPREAD", "0.6")
    summary.write_text("")
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on", "-v")
    result.assert_outcomes(passed=3)  # no warning: nothing is left open
    result.stdout.fnmatch_lines(
        [
            "*1 test(s): approved baseline change, verified here; its time within its noise (*x (*% CI *-*x, *)), "
            "not to its limit +5%*"
        ]
    )
    assert "to accept these values as the new baseline" not in result.stdout.str()
    assert "(1 approved, verified)" in summary.read_text()
    project.set_env("TVMPERF_FAKE_SPREAD", "0.02")

    data = project.baselines()  # by hand: the entry's time put back to the base's
    timing = next(iter(data["tests"]["test_mlp[llvm-vm-bytecode]"]["timings"].values()))
    timing["samples_s"] = [s / 3 for s in timing["samples_s"]]
    timing["median_s"] /= 3
    project.baseline_file().write_text(json.dumps(data))
    _git(root, "commit", "-qam", "edited by hand")
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*time: the entry says 1.0* ms, this code measures 3.0* ms (higher*"])


SCALED = (
    SCALE_WORKLOAD
    + """

@pytest.mark.tvmperf(executors=["prim"])
def test_scale(tvmperf):
    tvmperf.check(scale(float(os.environ.get("SCALE_K", "2"))))
"""
)


def test_an_approved_entry_recorded_from_other_code_is_unverified_naming_its_program(project):
    """issue 59, bad input: the pull request's entry was recorded from code other than the code
    the approved run builds (here a constant differs: the same counts, the same time), so its
    numbers are not this code's: `unverified change`, naming the entry's IR, never a pass."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=SCALED)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _first_commit(root, "baselines")
    _git(root, "checkout", "-qb", "pr")
    project.set_env("SCALE_K", "3")  # the change the entry was recorded from ...
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _git(root, "commit", "-qam", "re-record")
    project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on").assert_outcomes(passed=1)
    project.set_env("SCALE_K", "4")  # ... not the code this run builds
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the approved baseline of test_scale[[]llvm-prim[]] in baselines/test_perf.json does not match what "
            "this code measures here*",
            "*program: the entry's IR (artifacts/ir/*, field ir.sha256 *...) is not the program this code builds "
            "here: its numbers were recorded from other code*",
        ]
    )
    result.stdout.fnmatch_lines(["test_scale[[]llvm-prim[]]*unverified change*"])


def test_a_deselect_in_the_changes_addopts_is_named_against_the_ref(project):
    """issue 66 case 5: ``addopts = --deselect test_perf.py::test_b`` in the pull request's own
    pytest.ini hid a regressed test (1 passed, 1 deselected, exit 0) and no line named it: only an
    addopts holding "tvmperf" was compared with the ref's. Every key that decides what runs is."""
    root = project.pytester.path
    project.pytester.makepyfile(test_perf=TWO_TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    _first_commit(root, "baselines")
    (root / "pytest.ini").write_text(
        "[pytest]\naddopts = --deselect test_perf.py::test_b[llvm-prim]\npython_functions = test_a\n"
    )
    result = project.run("--tvmperf-baselines-ref=main")
    result.stdout.fnmatch_lines_random(
        [
            "*pytest.ini sets addopts = '--deselect test_perf.py::test_b[[]llvm-prim[]]', pytest.ini at main leaves "
            "addopts unset (its default): a setting of this change that can loosen the gate*",
            "*pytest.ini sets python_functions = 'test_a', pytest.ini at main leaves python_functions unset*",
            # and the base's entry the deselection hid is listed as not gated, by name
            "tvmperf: 1 baseline entry of the base not gated: their tests did not run in this job*",
            "  baselines/test_perf.json at main: test_b[[]llvm-prim[]]",
        ]
    )
    # the same under -n 2: the controller reads what the workers judged
    distributed = project.run("--tvmperf-baselines-ref=main", "-n", "2")
    distributed.stdout.fnmatch_lines(["  baselines/test_perf.json at main: test_b[[]llvm-prim[]]"])
    listing = distributed.stdout.str().split("not gated: their tests")[-1].split("tvmperf summary")[0]
    assert "test_b[llvm-prim]" in listing and "test_a[llvm-prim]" not in listing
    # the listing of unused entries (and its prune command) is the work tree's, never the ref's copy
    assert "no test used" not in result.stdout.str() and "/tmp" not in result.stdout.str().split("not gated")[1]


def test_an_approved_entry_whose_time_this_machine_cannot_check_is_never_called_verified(project, tmp_path):
    """issue 66 case 4: an approved entry whose timings were put back by hand (so the change list
    showed no time change) read `approved baseline change, verified here` on a runner with another
    timing key, although the unapproved run measured a/b 1.96x: its time was never compared. Its
    exact metrics are verified, its time is said not to be, with the a/b ratio against the base."""
    from test_gate import _move_timings_to_another_machine

    root = project.pytester.path
    project.pytester.makepyfile(test_perf=MLP_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _first_commit(root, "baselines")
    _git(root, "checkout", "-qb", "pr")
    project.set_env("MLP_BIND", "0")
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    _move_timings_to_another_machine(project, tvm_threads=7)  # the entry's time: another runner's key only
    _git(root, "commit", "-qam", "re-record, on another runner")
    md = tmp_path / "changes.md"
    result = project.run("--tvmperf-baselines-ref=main", "--tvmperf-approved-change=on", f"--tvmperf-changes-md={md}")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "verified here: its exact metrics" not in out and "approved baseline change, verified here" not in out
    result.stdout.fnmatch_lines(
        [
            "*approved baseline change, its exact metrics verified here, its time not verified here; against the base, a/b*"
        ]
    )
    assert "(1 approved, time not verified here)" in md.read_text() and "⚠️" in md.read_text()
