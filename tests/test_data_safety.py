"""Lose nothing: baselines and artifacts survive partial runs, interrupts, crashes and
bad files (every test here failed before its fix)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from scale_workload import SCALE_WORKLOAD

SMALL_RELAX = """
import numpy as np
import pytest
from tvm import relax
from tvm.script import ir as I, relax as R
from pytest_tvmperf import Workload

@I.ir_module
class AddOne:
    @R.function
    def main(x: R.Tensor((16,), "float32")):
        return R.add(x, R.const(1.0, "float32"))

def add_one():
    return Workload(name="add_one", program=AddOne, make_inputs=lambda rng, dims: [np.ones(16, "float32")],
                    reference=lambda x: x + 1)

@pytest.mark.tvmperf(executors=["vm-bytecode", "vm-compiled"])
def test_add(tvmperf):
    tvmperf.check(add_one())
"""

PRIM_TEST = (
    SCALE_WORKLOAD
    + """@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(scale(float(os.environ.get("SCALE_A", "2"))))

@pytest.mark.tvmperf(executors=["prim"])
def test_b(tvmperf):
    tvmperf.check(scale(3.0))
"""
)


def artifact_problems(root: Path) -> list[str]:
    """Every artifact a baseline file under ``root/baselines`` names must exist and
    match its sha256."""
    problems = []
    base = root / "baselines"
    for path in base.rglob("*.json"):
        if "artifacts" in path.parts:
            continue
        for test_id, entry in json.loads(path.read_text())["tests"].items():
            for art in [t.get("artifact") for t in entry["timings"].values()] + [entry.get("ir")]:
                if not art:
                    continue
                file = base / art["path"]
                if not file.exists():
                    problems.append(f"{path.name}::{test_id}: {art['path']} missing")
                elif hashlib.sha256(file.read_bytes()).hexdigest() != art["sha256"]:
                    problems.append(f"{path.name}::{test_id}: {art['path']} does not match its sha256")
    return problems


def _named_artifacts(project, module="test_perf") -> set[str]:
    """The compiled artifacts (the old ``so`` form) and IR files (``ir``) the entries name."""
    return {
        t["artifact"]["path"]
        for e in project.baselines(module)["tests"].values()
        for t in e["timings"].values()
        if t.get("artifact")
    } | {e["ir"]["path"] for e in project.baselines(module)["tests"].values() if e.get("ir")}


# ---------------------------------------------------------------- 1. prune


def test_prune_with_fewer_executors_keeps_the_other_executors_baselines(project):
    project.pytester.makepyfile(test_perf=SMALL_RELAX)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    before = project.baselines()["tests"]
    assert sorted(before) == ["test_add[llvm-vm-bytecode]", "test_add[llvm-vm-compiled]"]
    files_before = sorted(p.name for p in (project.pytester.path / "baselines/artifacts").rglob("*.so"))

    result = project.run("--tvmperf-update", "--tvmperf-prune", "--tvmperf-executors=vm-bytecode,prim")
    result.assert_outcomes(passed=1)
    assert "pruned" not in result.stdout.str()
    assert "no test used" not in result.stdout.str()
    assert sorted(project.baselines()["tests"]) == sorted(before)
    assert project.baselines()["tests"]["test_add[llvm-vm-compiled]"] == before["test_add[llvm-vm-compiled]"]
    assert files_before == sorted(p.name for p in (project.pytester.path / "baselines/artifacts").rglob("*.so"))
    assert artifact_problems(project.pytester.path) == []


def test_a_local_prune_keeps_the_baselines_of_remote_devices(project):
    """Issue 23 §2: after recording on llvm@rpc:k1, a local --tvmperf-update --tvmperf-prune
    printed 'pruned 4 unused baseline(s): ...test_mlp[rpc:k1-llvm-vm-bytecode]...'."""
    project.pytester.makepyfile(test_perf=SMALL_RELAX)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    data = project.baselines()
    for name in list(data["tests"]):  # as a run on the device with key k1 records them
        data["tests"][name.replace("[llvm-", "[rpc:k1-llvm-")] = data["tests"][name]
    data["tests"]["test_gone[rpc:k1-llvm-vm-bytecode]"] = data["tests"]["test_add[llvm-vm-bytecode]"]
    project.baseline_file().write_text(json.dumps(data))

    result = project.run("--tvmperf-update", "--tvmperf-prune")
    result.assert_outcomes(passed=2)
    kept = sorted(project.baselines()["tests"])
    assert kept == [
        "test_add[llvm-vm-bytecode]",
        "test_add[llvm-vm-compiled]",
        "test_add[rpc:k1-llvm-vm-bytecode]",
        "test_add[rpc:k1-llvm-vm-compiled]",
    ]  # only the test that no longer exists is pruned
    result.stdout.fnmatch_lines(["*pruned 1 unused baseline(s)*test_gone[[]rpc:k1-llvm-vm-bytecode[]]*"])


def test_prune_keeps_an_artifact_that_another_baseline_file_names(project):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    # a copy of the file kept by hand, beside a module that exists (so it is not pruned)
    shutil.copy(project.baseline_file(), project.baseline_file("test_before_upgrade"))
    project.pytester.makepyfile(test_before_upgrade="def test_nothing():\n    pass\n")
    # test_b is removed from test_perf.py
    project.pytester.makepyfile(test_perf=PRIM_TEST.split('@pytest.mark.tvmperf(executors=["prim"])\ndef test_b')[0])

    result = project.run("--tvmperf-update", "--tvmperf-prune")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*pruned 1 unused baseline(s): baselines/test_perf.json::test_b[[]llvm-prim[]]*"])
    assert sorted(project.baselines()["tests"]) == ["test_a[llvm-prim]"]
    assert sorted(project.baselines("test_before_upgrade")["tests"]) == ["test_a[llvm-prim]", "test_b[llvm-prim]"]
    assert artifact_problems(project.pytester.path) == []


def test_prune_removes_artifact_files_no_entry_names_and_only_prune_does(project):
    """issue 23: a kill inside the write window leaves committed IR files no entry names;
    neither the next run nor --tvmperf-prune removed them."""
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    named = _named_artifacts(project)
    ir_dir = project.pytester.path / "baselines" / "artifacts" / "ir"
    orphan = ir_dir / ("0" * 24 + ".json.gz")  # as a killed update leaves it: in place, named by no entry
    shutil.copyfile(project.pytester.path / "baselines" / sorted(named)[0], orphan)

    project.run().assert_outcomes(passed=2)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    assert orphan.exists()  # only prune removes files
    pruned = project.run("--tvmperf-update", "--tvmperf-prune")
    pruned.assert_outcomes(passed=2)
    pruned.stdout.fnmatch_lines([f"tvmperf: pruned 1 artifact file(s) no baseline named: artifacts/ir/{orphan.name}"])
    assert not orphan.exists()
    assert _named_artifacts(project) == named and artifact_problems(project.pytester.path) == []
    project.run().assert_outcomes(passed=2)


@pytest.mark.parametrize(
    "code, advice",
    [
        ("EACCES", "make that directory writable by this user"),
        # issue 66: a full disk got the advice for a permission error
        ("ENOSPC", "the disk holding that directory is full (or past its quota or file size limit): free space there"),
    ],
)
def test_a_read_only_ir_directory_fails_the_update_clearly_and_changes_nothing(project, code, advice):
    """issue 23: a read-only artifacts/ir was a PermissionError traceback. (Emulated where
    the directory is: a root user writes into a read-only directory; a full disk alike.)"""
    import errno
    import os
    import tempfile

    from pytest_tvmperf.store import lowered_ir

    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    before = project.baseline_file().read_bytes()
    ir_dir = project.pytester.path / "baselines" / "artifacts" / "ir"
    real = tempfile.mkstemp
    number = getattr(errno, code)

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and os.path.samefile(dir, ir_dir):
            raise OSError(number, os.strerror(number), str(dir))
        return real(*args, dir=dir, **kwargs)

    project.monkeypatch.setattr(lowered_ir.tempfile, "mkstemp", mkstemp)
    project.set_env("SCALE_A", "5")
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: test_perf.py::test_a[[]llvm-prim[]]: cannot write the program's IR into "
            f"baselines/artifacts/ir ({os.strerror(number)}): {advice}*; "
            "this test writes no baseline*"
        ]
    )
    assert not any(word in result.stdout.str() for word in ("Traceback", "PermissionError", "OSError"))
    assert project.baseline_file().read_bytes() == before
    assert [p.name for p in ir_dir.iterdir() if p.name.startswith(".")] == []


# ---------------------------------------------------------------- 2. interrupted update

INTERRUPT_AT_BASELINE_LOCK = '''
import fcntl
import os

_flock = fcntl.flock


def flock(fd, op):
    """Ctrl-C while waiting for the lock of the baseline files (not the timing lock)."""
    name = os.readlink(f"/proc/self/fd/{fd}")
    if os.environ.get("INTERRUPT_AT_LOCK") and "timing" not in name and "tvmperf" in name:
        raise KeyboardInterrupt
    return _flock(fd, op)


fcntl.flock = flock
'''


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_interrupt_while_waiting_for_the_lock_keeps_each_file_with_its_own_artifact(project):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    old = project.baseline_file().read_text()
    assert artifact_problems(project.pytester.path) == []

    (project.pytester.path / "conftest.py").write_text(
        (project.pytester.path / "conftest.py").read_text() + INTERRUPT_AT_BASELINE_LOCK
    )
    project.set_env("INTERRUPT_AT_LOCK", "1")
    project.set_env("SCALE_A", "5")  # another program: another artifact for test_a
    project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tvmperf-update")
    assert project.baseline_file().read_text() == old
    assert artifact_problems(project.pytester.path) == []
    leftovers = [p.name for p in (project.pytester.path / "baselines").rglob(".*tmp*")]
    project.monkeypatch.delenv("INTERRUPT_AT_LOCK")
    project.monkeypatch.delenv("SCALE_A")
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    assert "does not match the baseline's sha256" not in result.stdout.str()
    if leftovers:  # a killed run's temporary files are removed by the next run
        assert [p.name for p in (project.pytester.path / "baselines").rglob(".*tmp*")] == []


@pytest.mark.parametrize("form, pattern", [("so", "*.so"), ("ir", "*.json.gz")])
def test_a_re_record_replaces_the_artifact_and_deletes_the_superseded_one(project, form, pattern):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update", f"--tvmperf-baseline-program={form}").assert_outcomes(passed=2)
    first = _named_artifacts(project)
    project.set_env("SCALE_A", "5")
    project.run("--tvmperf-update", f"--tvmperf-baseline-program={form}").assert_outcomes(passed=2)
    second = _named_artifacts(project)
    assert len(first & second) == 1  # test_b's program is unchanged: the same file
    on_disk = {
        str(p.relative_to(project.pytester.path / "baselines"))
        for p in (project.pytester.path / "baselines/artifacts").rglob(pattern)
    }
    assert on_disk == second  # test_a's old artifact is gone, no file is left unnamed
    assert artifact_problems(project.pytester.path) == []


#: Ctrl-C (a real SIGINT to the process) as the second baseline file is written
SIGINT_IN_THE_SECOND_WRITE = """
import os, signal
from pytest_tvmperf.store import files

# Ctrl-C raises KeyboardInterrupt even where the suite was started in the background of a
# non-interactive shell, which starts it (and so this process) with SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
_write = files.atomic_write
_calls = []


def atomic_write(path, text):
    _calls.append(path)
    if len(_calls) == 2:
        os.kill(os.getpid(), signal.SIGINT)
    return _write(path, text)


files.atomic_write = atomic_write
"""


def test_ctrl_c_inside_the_final_write_says_what_was_written_and_leaves_no_temporary_file(project):
    """issue 23: SIGINT inside pytest_sessionfinish's write was a KeyboardInterrupt traceback,
    no status line, temporary files left behind."""
    project.pytester.makepyfile(test_one=PRIM_TEST, test_two=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=4)
    before = {m: project.baseline_file(m).read_text() for m in ("test_one", "test_two")}
    project.pytester.makepyfile(sigint_plugin=SIGINT_IN_THE_SECOND_WRITE)
    project.set_env("SCALE_A", "5")  # a new program for test_a in both modules
    # in a subprocess: the signal goes to that process alone
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "sigint_plugin", "--tvmperf-update")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: interrupted (Ctrl-C) while writing the baselines: written: baselines/test_one.json; not written: "
            "baselines/test_two.json. Each file is whole*run the update again to record the rest*",
            "*run interrupted while writing the baselines: written for 2 test(s), NOT written for 2 test(s)*",
        ]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    assert project.baseline_file("test_two").read_text() == before["test_two"]  # the old state, whole
    assert project.baseline_file("test_one").read_text() != before["test_one"]
    assert project.baselines("test_one")["tests"].keys() == project.baselines("test_two")["tests"].keys()
    assert [p.name for p in (project.pytester.path / "baselines").rglob(".*tmp*")] == []
    assert artifact_problems(project.pytester.path) == []


# ---------------------------------------------------------------- 5. modules outside the rootdir


def test_modules_of_the_same_name_outside_the_rootdir_get_their_own_baseline_file(project):
    root = project.pytester.path
    (root / "proj").mkdir()
    (root / "proj" / "pytest.ini").write_text("[pytest]\n")
    for sub, size in (("a", 8), ("b", 16)):
        (root / sub).mkdir()
        (root / sub / "test_x.py").write_text(PRIM_TEST.replace('os.environ.get("SCALE_A", "2")', f'"{size}"'))
    args = (
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "--rootdir=proj",
        "-c",
        "proj/pytest.ini",
        f"--confcutdir={root}",
    )  # the fake timer of root/conftest.py
    result = project.pytester.runpytest(*args, "--tvmperf-update", "a/test_x.py", "b/test_x.py")
    result.assert_outcomes(passed=4)
    files = sorted((root / "proj" / "baselines").rglob("test_x.json"))
    assert len(files) == 2, files
    assert all("_outside_rootdir" in f.parts for f in files)
    shapes = {json.loads(f.read_text())["tests"]["test_a[llvm-prim]"]["workload"] for f in files}
    assert len(shapes) == 2  # each module's own entry, none overwritten
    again = project.pytester.runpytest(*args, "a/test_x.py", "b/test_x.py")
    again.assert_outcomes(passed=4)
    assert "no test used" not in again.stdout.str()


# ---------------------------------------------------------------- 3. a crashing kernel

CRASHING_TEST = (
    PRIM_TEST
    + """

def unresolved_extern():
    from tvm import tirx
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: tirx.call_extern("float32", "tvmperf_no_such_symbol", a[i]), name="B")
    return Workload(name="unresolved", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(16, "float32")], reference=lambda x: x)

@pytest.mark.tvmperf(executors=["prim"])
def test_crash(tvmperf):
    tvmperf.check(unresolved_extern())
"""
)


def test_a_crashing_kernel_fails_its_test_and_the_other_updates_are_written(project):
    project.pytester.makepyfile(test_perf=CRASHING_TEST.replace("def test_crash", "def test_m_crash"))
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tvmperf-update")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: unresolved on llvm/prim: the compiled kernel crashed (exit status 127) when run in a child process; "
            "nothing was run in the session*",
            "*undefined symbol: tvmperf_no_such_symbol*",
            "*baselines written for 2 test(s)*",
        ]
    )
    assert sorted(project.baselines()["tests"]) == ["test_a[llvm-prim]", "test_b[llvm-prim]"]
    assert artifact_problems(project.pytester.path) == []
    assert list((project.pytester.path / "baselines").rglob("*.tmp*")) == []


# ---------------------------------------------------------------- 4. a damaged artifact


def test_a_truncated_artifact_with_a_matching_sha256_cannot_crash_the_session(project):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update", "--tvmperf-baseline-program=so").assert_outcomes(passed=2)
    path = project.baseline_file()
    data = json.loads(path.read_text())
    artifact = data["tests"]["test_a[llvm-prim]"]["timings"]
    (timing,) = artifact.values()
    so = project.pytester.path / "baselines" / timing["artifact"]["path"]
    so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])
    timing["artifact"]["sha256"] = hashlib.sha256(so.read_bytes()).hexdigest()
    path.write_text(json.dumps(data))
    project.set_env("TVMPERF_TRUST_ARTIFACTS", "on")  # the old form's libraries are loaded only when trusted
    project.set_env("TVMPERF_FAKE_SCALE", "3")  # fail, so that the message shows the artifact's note
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            f"*note: baseline artifact baselines/{timing['artifact']['path']} *crashed the child process that loaded it "
            f"(SIG*); ignored, nothing of it was loaded in the session*",
        ]
    )


def test_an_update_keeps_the_mode_the_user_gave_the_baseline_file(project):
    """issue 23: a read-only (or group-writable) baseline file came back 0644 after an update."""
    import os
    import stat

    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=2)
    path = project.baseline_file()
    path.chmod(0o444)
    project.set_env("SCALE_A", "5")  # a new baseline for test_a
    result = project.run("--tvmperf-update", "-k", "test_a")
    if os.access(path.parent, os.W_OK):  # the directory decides whether the file can be replaced
        result.assert_outcomes(passed=1)
        assert "scale5" in project.baselines()["tests"]["test_a[llvm-prim]"]["workload"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
