"""Issue 33, round 2 of the baselines' data safety, as a user meets it: a pull request
edits baselines/ (links, duplicate keys, a gzip bomb, strings that are workflow
commands), plants a library in the cache, or a kernel or baseline hangs, fills the
disk, runs out of memory. Each test failed before its fix."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from scale_workload import SCALE_WORKLOAD

PRIM_TEST = (
    SCALE_WORKLOAD
    + """@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(scale(2.0))
"""
)

ID = "test_a[llvm-prim]"


def _recorded(project, module: str = "test_perf") -> Path:
    project.pytester.makepyfile(**{module: PRIM_TEST})
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    return project.baseline_file(module)


def _no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback (most recent call last)" not in text and "INTERNALERROR" not in text, text[-3000:]


# ---------------------------------------------------------------- 19. a key written twice


def test_a_key_written_twice_in_a_baseline_entry_is_refused_naming_file_test_and_key(project):
    path = _recorded(project)
    text = path.read_text()
    assert '"kernels": 1,' in text
    path.write_text(text.replace('"kernels": 1,', '"kernels": 1, "kernels": 7,', 1))  # the gate would use 7
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(
        [
            rf".*baseline file .*test_perf\.json: entry '{re.escape(ID)}' is malformed: "
            r"key 'kernels' is written twice in field exact.*"
        ]
    )
    _no_traceback(result)


# ---------------------------------------------------------------- 17. a marker's 10**5000


def test_a_marker_threshold_of_5000_digits_gets_the_threshold_hint(project):
    project.pytester.makepyfile(
        test_perf=PRIM_TEST.replace('executors=["prim"]', 'executors=["prim"], instructions=10**5000')
    )
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "bad threshold instructions=<a whole number of about 5001 digits>: write an allowed increase" in text
    assert "integer string conversion" not in text


# ---------------------------------------------------------------- 15. strings from data printed


def test_strings_from_a_baseline_file_cannot_print_a_workflow_command_or_a_control_sequence(project):
    path = _recorded(project)
    data = json.loads(path.read_text())
    entry = data["tests"][ID]
    data["tests"]["gone\n::error file=x.py::owned by a pull request"] = json.loads(json.dumps(entry))
    entry["workload"] = "scale2\n::stop-commands::token\x1b[2J"
    path.write_text(json.dumps(data))
    project.set_env("TVMPERF_FAKE_SCALE", "3")  # a regression: its message shows the stored workload name
    result = project.run()
    result.assert_outcomes(failed=1)
    lines = (result.stdout.str() + result.stderr.str()).splitlines()
    assert not [line for line in lines if line.lstrip().startswith("::")], "a line a workflow command"
    assert not [line for line in lines if "\x1b[2J" in line]
    assert any("workload was scale2\\n::stop-commands::token\\x1b[2J, now scale2" in line for line in lines)
    assert any("gone\\n::error file=x.py::owned" in line for line in lines)  # the unused-entry listing


def test_tvmperf_show_prints_no_line_of_a_files_own(project):
    path = _recorded(project)
    data = json.loads(path.read_text())
    data["tests"]["::error::owned\nby a pull request"] = data["tests"][ID]  # the first column of a line
    path.write_text(json.dumps(data))
    result = project.pytester.run(os.sys.executable, "-m", "pytest_tvmperf", "show", str(path))
    assert result.ret == 0, result.stdout.str()
    assert not [line for line in result.outlines if line.lstrip().startswith("::")]
    assert any(line.startswith("\\x3a:error::owned\\nby a pull request") for line in result.outlines)


# ---------------------------------------------------------------- 12. a gzip bomb as the stored IR


def test_a_gzip_bomb_as_the_stored_ir_fails_the_test_clearly_without_inflating_it_whole(project):
    path = _recorded(project)
    data = json.loads(path.read_text())
    ir = project.pytester.path / "baselines" / data["tests"][ID]["ir"]["path"]
    ir.write_bytes(gzip.compress(b"{" + b" " * (3 * 2**20) + b"}", mtime=0))  # inflates to 3 MiB (the cap: 1 MiB)
    data["tests"][ID]["ir"]["sha256"] = hashlib.sha256(ir.read_bytes()).hexdigest()
    path.write_text(json.dumps(data))
    project.set_env("TVMPERF_MAX_IR_MB", "1")
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*is refused: it inflates to more than 1 MiB ($TVMPERF_MAX_IR_MB)*"])
    _no_traceback(result)


# ---------------------------------------------------------------- 7, 16. links under baselines/


def _linked(project, outside: Path) -> None:
    project.pytester.mkdir("sub")
    (project.pytester.path / "sub" / "test_perf.py").write_text(PRIM_TEST)
    (project.pytester.path / "baselines").mkdir(exist_ok=True)
    outside.mkdir()
    (project.pytester.path / "baselines" / "sub").symlink_to(outside)


def test_a_committed_link_under_baselines_is_never_written_through_by_an_update(project, tmp_path):
    outside = tmp_path / "outside"
    _linked(project, outside)
    result = project.run("--tvmperf-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert f"baselines/sub is a symbolic link (to {outside}) under the baseline directory" in text
    assert list(outside.iterdir()) == []


def test_a_committed_link_under_baselines_is_never_read_through_by_the_gate(project, tmp_path):
    _recorded(project)
    artifacts = project.pytester.path / "baselines" / "artifacts"
    ir = artifacts / "ir"
    moved = tmp_path / "ir"
    ir.rename(moved)
    ir.symlink_to(moved)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert f"baselines/artifacts/ir is a symbolic link (to {moved})" in text
    assert "replace the link with the directory or file itself" in text


def test_a_linked_artifact_directory_is_named_as_a_link_not_as_an_option_nobody_passed(project, tmp_path):
    _recorded(project)
    artifacts = project.pytester.path / "baselines" / "artifacts"
    moved = tmp_path / "artifacts"
    artifacts.rename(moved)
    artifacts.symlink_to(moved)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert f"baselines/artifacts is a symbolic link (to {moved})" in text
    assert "--tvmperf-artifacts=" not in text


# ---------------------------------------------------------------- 10. the timing lock held by a stopped run

HOLD_LOCK = """
import sys
from pytest_tvmperf.session import timing_lock_path
from pytest_tvmperf.store.locks import file_lock
with file_lock(timing_lock_path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # held until the test closes stdin (a run stopped with Ctrl-Z holds it so)
"""


def test_a_test_waiting_for_a_held_timing_lock_fails_naming_the_holders_pid(project):
    import subprocess
    import sys

    project.pytester.makepyfile(test_perf=PRIM_TEST)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(project.pytester.path.resolve())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        result = project.run("--tvmperf-update", "--tvmperf-lock-timeout=1")
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*waited 1 s (--tvmperf-lock-timeout) for the timing lock of *: process {holder.pid} (*) "
            f"holds the lock *end it (kill {holder.pid}) if it is stopped or hung*"
        ]
    )
    _no_traceback(result)


# ---------------------------------------------------------------- 6. the cache: a planted library, a shared directory

PLANTED_LIBRARY = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "a");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
"""


def _own_config(project) -> None:
    project.set_env("XDG_CONFIG_HOME", str(project.pytester.path / ".config"))
    project.monkeypatch.delenv("TVMPERF_CACHE_KEY", raising=False)


@pytest.mark.skipif(__import__("shutil").which("cc") is None, reason="needs a C compiler to build the planted library")
def test_a_library_planted_in_the_cache_with_its_sha256_beside_it_is_never_loaded(project):
    import subprocess

    _own_config(project)
    _recorded(project)
    project.run().assert_outcomes(passed=1)  # the baseline's IR rebuilt, and cached
    cached = list((project.pytester.path / ".tvmperf-cache" / "builds").rglob("*.so"))
    assert len(cached) == 1
    marker = project.pytester.path / "owned"
    source = project.pytester.path / "planted.c"
    source.write_text(PLANTED_LIBRARY.replace("MARKER", json.dumps(str(marker))))
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(cached[0]), str(source)], check=True)
    sidecar = cached[0].with_name(cached[0].name + ".sha256")
    sidecar.write_text(hashlib.sha256(cached[0].read_bytes()).hexdigest() + "\n")
    result = project.run()
    result.assert_outcomes(passed=1)
    assert not marker.exists()
    assert sidecar.read_text().startswith("hmac-sha256:")  # rebuilt and sealed again


def test_a_cache_directory_others_can_write_is_refused_with_the_fix(project):
    _own_config(project)
    _recorded(project)
    cache = project.pytester.path / ".tvmperf-cache"
    cache.mkdir(exist_ok=True)
    cache.chmod(0o777)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert f"the cache directory {cache} is writable by others (mode 777)" in text
    assert f"chmod go-w {cache}" in text and "$TVMPERF_CACHE_DIR" in text


# ---------------------------------------------------------------- 14. a kernel that runs out of memory

HUGE_TEST = """
import numpy as np
import pytest
from tvm.script import ir as I, relax as R
from pytest_tvmperf import Workload

@I.ir_module
class Huge:
    @R.function
    def main(x: R.Tensor((16,), "float32")):
        big = R.zeros(R.shape([2**38]), "float32")  # 1 TiB
        return R.add(x, R.sum(big))

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_huge(tvmperf):
    tvmperf.check(Workload(name="huge", program=Huge, make_inputs=lambda rng, dims: [np.ones(16, "float32")],
                           reference=lambda x: x))
"""


def test_a_kernel_that_runs_out_of_memory_fails_saying_so_naming_the_test(project):
    project.pytester.makepyfile(test_perf=HUGE_TEST)
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_huge[[]llvm-vm-bytecode[]] _*",
            "tvmperf: huge on llvm/vm-bytecode: the kernel ran out of memory (*bad_alloc*)*",
        ]
    )
    text = result.stdout.str()
    assert "TvmperfSession(" not in text and "python/tvm_ffi" not in text


# ---------------------------------------------------------------- 13. no room to export the library

FILE_SIZE_LIMIT = '''
import resource

def pytest_configure(config):
    """``ulimit -f 4``: as a full disk, a write of more than 4 KiB fails (LLVM then ends the process)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
'''


def test_no_room_to_export_the_library_fails_the_test_with_a_message_not_the_interpreter(project):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.pytester.makeconftest((project.pytester.path / "conftest.py").read_text() + FILE_SIZE_LIMIT)
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_a[[]llvm-prim[]] _*",
            "tvmperf: scale2 on llvm/prim: the compiled library cannot be exported to run it in a "
            "child process: this process may write files of at most 4 KiB (ulimit -f)*",
        ]
    )


# ---------------------------------------------------------------- 9. a stored IR that takes minutes to build

UNROLLED = """
import sys
import tvm
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for j in T.unroll(200000):  # LLVM takes minutes over it
        for i in range(64):
            B[i] = B[i] + A[i] * T.float32(j)

sys.stdout.buffer.write(tvm.ir.save_json(tvm.IRModule({"main": main})).encode())
"""


def test_a_stored_ir_that_takes_minutes_to_build_is_stopped_and_the_gate_goes_on(project):
    import subprocess
    import sys

    path = _recorded(project)
    data = json.loads(path.read_text())
    ir = project.pytester.path / "baselines" / data["tests"][ID]["ir"]["path"]
    script = project.pytester.path / "make_ir.py"  # TVMScript reads its source from a file
    script.write_text(UNROLLED)
    text = subprocess.run([sys.executable, str(script)], capture_output=True, check=True).stdout
    script.unlink()
    ir.write_bytes(gzip.compress(text, mtime=0))
    data["tests"][ID]["ir"]["sha256"] = hashlib.sha256(ir.read_bytes()).hexdigest()
    path.write_text(json.dumps(data))
    result = project.run("--tvmperf-child-timeout=3", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*cannot be rebuilt by TVM * (RebuildError: the build took longer than 3 s (--tvmperf-child-timeout))*"]
    )


# ---------------------------------------------------------------- 8. a stored IR that loops forever on its second call

#: a PrimFunc that returns on its first call and loops from its second (also today's program in
#: tests/test_host_target.py)
LOOPS_FROM_SECOND_CALL = """
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    while A[0] > T.float32(5):  # true from the second call on: the first one wrote A[0]
        B[1] = B[1] + T.float32(1)
    for i in range(64):
        B[i] = A[i] * T.float32(2)
    A[0] = T.float32(7)
"""

SECOND_CALL_LOOPS = (
    "import sys\nimport tvm\n"
    + LOOPS_FROM_SECOND_CALL
    + '\nsys.stdout.buffer.write(tvm.ir.save_json(tvm.IRModule({"main": main})).encode())\n'
)


def _stored_ir(project, script_text: str) -> None:
    """The entry's IR replaced by the module ``script_text`` prints, its sha256 updated."""
    import subprocess
    import sys

    path = project.baseline_file()
    data = json.loads(path.read_text())
    ir = project.pytester.path / "baselines" / data["tests"][ID]["ir"]["path"]
    script = project.pytester.path / "make_ir.py"  # TVMScript reads its source from a file
    script.write_text(script_text)
    ir.write_bytes(
        gzip.compress(subprocess.run([sys.executable, str(script)], capture_output=True, check=True).stdout, mtime=0)
    )
    script.unlink()
    data["tests"][ID]["ir"]["sha256"] = hashlib.sha256(ir.read_bytes()).hexdigest()
    path.write_text(json.dumps(data))


def test_a_stored_ir_that_loops_on_its_second_call_stops_the_run_with_a_message_naming_the_test(project):
    _recorded(project)
    _stored_ir(project, SECOND_CALL_LOOPS)
    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tvmperf-child-timeout=5", timeout=300
    )  # before the fix: hung until this timeout
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "tvmperf: test_perf.py::test_a[[]llvm-prim[]]: the baseline rebuilt from IR * did not return within "
            "5 s (--tvmperf-child-timeout) when called in the session*"
        ]
    )
