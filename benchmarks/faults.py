"""Fault and bad-input cases against a user project, each classified by what happened.

Each case sets up a scratch project (recorded once, copied per case), does one harmful
thing (kills an update at some point, plants code in baselines/, removes valgrind, stops
an RPC server, feeds a bad file or option...) and runs pytest or ``tvmperf`` as a user
would, in a fresh process with a deadline. Its outcome is the first that applies:

- ``code-exec``: something planted in baselines/ ran (its marker file appeared);
- ``hang``: the command ran past its deadline;
- ``crash``: a traceback or INTERNALERROR where a message was due;
- ``lossy``: a baseline file, entry, artifact or stored count was lost or damaged;
- ``silent``: the fault went unreported (exit 0, or no message naming it);
- ``clear``: a clear message, and nothing lost.

The goal is 0 of every outcome but ``clear``. Cases that need a tool this machine lacks
(valgrind, git) are listed as ``skipped``.

    python benchmarks/faults.py              # every case (about 10 minutes on 2 cores)
    python benchmarks/faults.py --points 20  # more kill points
    python benchmarks/faults.py --only sigint,planted
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import FAKE_TIMER_CONFTEST  # noqa: E402

from pytest_tvmperf.store.files import BaselineError, load_baselines  # noqa: E402

OUTCOMES = ("clear", "lossy", "silent", "hang", "crash", "code-exec")

PROJECT_TEST = """
import os
import numpy as np
import pytest
from tvm import te, tirx
from pytest_tvmperf import Workload

def scale(k, n=64):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * k, name="B")
    return Workload(name=f"scale{k:g}", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(n, "float32")], reference=lambda x: x * np.float32(k))

def crashing():
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: tirx.call_extern("float32", "tvmperf_no_such_symbol", a[i]), name="B")
    return Workload(name="crashing", program=te.create_prim_func([a, b]),
                    make_inputs=lambda rng, dims: [np.ones(16, "float32")], reference=lambda x: x)

K = float(os.environ.get("FAULT_K", "2"))

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(scale(K))

@pytest.mark.tvmperf(executors=["prim"])
def test_m_crash(tvmperf):
    if os.environ.get("FAULT_CRASH") != "1":
        pytest.skip("the crashing kernel runs in the kill points only")
    tvmperf.check(crashing())

@pytest.mark.tvmperf(executors=["prim"])
def test_z(tvmperf):
    tvmperf.check(scale(K + 1))
"""

MLP_TEST = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, bind_params=os.environ.get("MLP_BIND", "1") == "1"))
"""

SIM_TEST = """
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload

@pytest.mark.tvmperf(executors=["prim"])
def test_sim(tvmperf):
    n = 256
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    tvmperf.check(Workload(name="sim", program=te.create_prim_func([a, b]),
                           make_inputs=lambda rng, dims: [np.ones(n, "float32")], reference=lambda x: x * 2))
"""

NEVER_RETURNS = """
import numpy as np
import pytest
from tvm import te, tirx
from pytest_tvmperf import Workload

@pytest.mark.tvmperf(executors=["prim"])
def test_sleeps(tvmperf):
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + tirx.Cast("float32", tirx.call_extern("int32", "sleep", 100000)), name="B")
    tvmperf.check(Workload(name="sleeps", program=te.create_prim_func([a, b]),
                           make_inputs=lambda rng, dims: [np.ones(4, "float32")], reference=lambda x: x))
"""

#: Ctrl-C (a real SIGINT) as the second baseline file is written
SIGINT_PLUGIN = """
import os, signal
from pytest_tvmperf.store import files
_write, _calls = files.atomic_write, []
def atomic_write(path, text):
    _calls.append(path)
    if len(_calls) == 2:
        os.kill(os.getpid(), signal.SIGINT)
    return _write(path, text)
files.atomic_write = atomic_write
"""

#: a read-only artifacts/ir as a root user meets it too (root writes into read-only directories)
READ_ONLY_IR_PLUGIN = """
import errno, os, tempfile
from pytest_tvmperf.store import lowered_ir
_real = tempfile.mkstemp
def mkstemp(*args, dir=None, **kwargs):
    if dir is not None and os.path.basename(os.fspath(dir)) == "ir":
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
    return _real(*args, dir=dir, **kwargs)
lowered_ir.tempfile.mkstemp = mkstemp
"""

#: valgrind SIGKILLed while a test's kernel is simulated
KILL_VALGRIND_PLUGIN = """
from pytest_tvmperf.measure import simulate
_measure = simulate.SimProcess.measure
def measure(self, *args, **kwargs):
    if self._proc is None:
        self.start()
    self._proc.kill()
    self._proc.wait()
    return _measure(self, *args, **kwargs)
simulate.SimProcess.measure = measure
"""

#: stops the RPC server (SIGSTOP) just before each timing: the device never answers again
STOP_SERVER = """
import os, signal
import pytest
from pytest_tvmperf.builder.timer import TvmTimer

@pytest.fixture
def tvmperf_timer():
    real = TvmTimer()
    def timer(task, rounds):
        try:
            os.killpg(int(os.environ["FAULT_STOP_PGID"]), signal.SIGSTOP)
        except ProcessLookupError:
            pass
        return real(task, rounds)
    return timer
"""

PLANTED_LIBRARY = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "a");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
"""

IDS = {"test_a[llvm-prim]", "test_z[llvm-prim]"}
#: the longest one command may run before it counts as a hang
DEADLINE_S = 300.0


@dataclass
class Ran:
    rc: int | None  #: None: past the deadline (killed)
    out: str
    seconds: float


@dataclass
class Result:
    case: str
    outcome: str
    detail: str = ""


def env_for(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TVMPERF_", "PYTEST_"))}
    env.update(FAULT_K="2", TVMPERF_SIMULATE_CACHE="off")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def run(cmd: list[str], cwd: Path, env: dict | None = None, deadline: float = DEADLINE_S) -> Ran:
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env or env_for(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=deadline)
        return Ran(proc.returncode, out, time.monotonic() - started)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return Ran(None, out, time.monotonic() - started)


def pytest_run(project: Path, *args: str, env: dict | None = None, deadline: float = DEADLINE_S) -> Ran:
    return run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], project, env, deadline)


def tvmperf_run(project: Path, *args: str) -> Ran:
    return run([sys.executable, "-m", "pytest_tvmperf", *args], project)


def crashed(ran: Ran) -> bool:
    return "Traceback (most recent call last)" in ran.out or "INTERNALERROR" in ran.out


def baseline_problems(project: Path, ids: set[str] = IDS, module: str = "test_perf") -> list[str]:
    """Every baseline file parses; no recorded test id is missing; every file an entry
    names exists and matches its sha256."""
    base = project / "baselines"
    try:
        records = load_baselines(base / f"{module}.json")
    except BaselineError as exc:
        return [f"unreadable: {exc}"]
    problems = [f"lost: {t}" for t in sorted(ids - set(records))]
    for test_id, record in records.items():
        named = [(t.artifact, t.artifact_sha256) for t in record.timings.values() if t.artifact]
        if record.ir is not None:
            named.append((record.ir.path, record.ir.sha256))
        for rel, sha in named:
            file = base / rel
            if not file.exists():
                problems.append(f"{test_id}: {rel} missing")
            elif sha and hashlib.sha256(file.read_bytes()).hexdigest() != sha:
                problems.append(f"{test_id}: {rel} does not match its sha256")
    return problems


def line_with(out: str, phrase: str) -> str:
    """The first line of ``out`` holding ``phrase``, shortened around it."""
    for line in out.splitlines():
        if phrase in line:
            line = line.strip()
            at = line.index(phrase)
            start = max(0, at - 60)
            return (
                ("..." if start else "")
                + line[start : at + len(phrase) + 60]
                + ("..." if at + len(phrase) + 60 < len(line) else "")
            )
    return ""


def judge(
    ran: Ran,
    clear_when: bool,
    what: str,
    lost: list[str] = (),
    marker: Path | None = None,
    traceback_ok: bool = False,
    says: str = "",
) -> tuple[str, str]:
    """The outcome of one case, by the order of the module's docstring; ``says``: the
    phrase of the message shown for a clear case."""
    if marker is not None and marker.exists():
        return "code-exec", f"{marker.name} was created"
    if ran.rc is None:
        return "hang", f"still running after {DEADLINE_S:g} s"
    if crashed(ran) and not traceback_ok:
        line = next((ln for ln in ran.out.splitlines() if "Error" in ln), "")
        return "crash", line.strip()[:160]
    if lost:
        return "lossy", "; ".join(lost)[:200]
    if not clear_when:
        return "silent", f"exit {ran.rc}; {what} not said"
    shown = line_with(ran.out, says) if says else ""
    return "clear", f"exit {ran.rc}" + (f": {shown}" if shown else "")


# ----------------------------------------------------------------------------- the project


class Projects:
    """A recorded scratch project, copied for each case."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.template = tmp / "template"
        self.template.mkdir()
        (self.template / "conftest.py").write_text(FAKE_TIMER_CONFTEST)
        (self.template / "test_perf.py").write_text(PROJECT_TEST)
        first = pytest_run(self.template, "--tvmperf-update")
        assert "baselines written for 2 test(s)" in first.out, first.out[-3000:]
        self.count = 0

    def fresh(self, name: str) -> Path:
        self.count += 1
        path = self.tmp / f"{self.count:03d}-{re.sub(r'[^a-z0-9]+', '-', name.lower())[:40]}"
        shutil.copytree(self.template, path, ignore=shutil.ignore_patterns(".tvmperf-cache"))
        return path


def entries(project: Path, module: str = "test_perf") -> dict:
    return json.loads((project / "baselines" / f"{module}.json").read_text())["tests"]


def write_entries(project: Path, tests: dict, module: str = "test_perf") -> None:
    path = project / "baselines" / f"{module}.json"
    data = json.loads(path.read_text())
    data["tests"] = tests
    path.write_text(json.dumps(data))


# ----------------------------------------------------------------------------- the cases


def kill_points(projects: Projects, points: int) -> list[Result]:
    """An update killed (SIGKILL, SIGINT) at k/points of its duration, k = 1..points."""
    project = projects.fresh("kill points")
    whole = pytest_run(project, "--tvmperf-update", env=env_for(FAULT_K="3", FAULT_CRASH="1")).seconds
    results = []
    k = 3
    for point in range(1, points + 1):
        for sig in (signal.SIGKILL, signal.SIGINT):
            k += 1  # another program each run: every artifact changes
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tvmperf-update"],
                cwd=project,
                env=env_for(FAULT_K=str(k), FAULT_CRASH="1"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                proc.wait(timeout=whole * point / points)
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=DEADLINE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    results.append(Result(f"update {sig.name} at {point}/{points}", "hang"))
                    continue
            lost = baseline_problems(project)
            results.append(
                Result(f"update {sig.name} at {point}/{points}", "lossy" if lost else "clear", "; ".join(lost))
            )
    final = pytest_run(project, "--tvmperf-update", env=env_for(FAULT_K="100", FAULT_CRASH="1"))
    gate = pytest_run(project, env=env_for(FAULT_K="100", FAULT_CRASH="1"))
    leftovers = [p.name for p in (project / "baselines").rglob(".*tmp*")]
    ok = all("1 failed, 2 passed" in r.out or "2 passed, 1 failed" in r.out for r in (final, gate)) and not leftovers
    results.append(
        Result(
            "after the kills: an update and a gate (the crashing test fails alone), no temporary file",
            *judge(
                gate,
                ok,
                "a passing update and gate",
                baseline_problems(project) + [f"left: {n}" for n in leftovers],
                traceback_ok=True,
            ),
        )
    )
    return results


def case_planted_ir(projects: Projects) -> tuple[str, str]:
    """An IR calling system() saved as an entry's IR, its sha256 updated."""
    import tvm
    from tvm import te, tirx

    project = projects.fresh("planted ir")
    marker = project / "owned"
    tests = entries(project)
    path = project / "baselines" / tests["test_a[llvm-prim]"]["ir"]["path"]
    a = te.placeholder((64,), name="A")
    b = te.compute(
        (64,), lambda i: a[i] + tirx.Cast("float32", tirx.call_extern("int32", "system", f"id > {marker}")), name="B"
    )
    path.write_bytes(
        gzip.compress(tvm.ir.save_json(tvm.IRModule({"main": te.create_prim_func([a, b])})).encode(), mtime=0)
    )
    for entry in tests.values():
        if entry.get("ir", {}).get("path") == tests["test_a[llvm-prim]"]["ir"]["path"]:
            entry["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    write_entries(project, tests)
    ran = pytest_run(project)
    return judge(ran, "is refused" in ran.out and ran.rc != 0, "the refusal", marker=marker, says="is refused")


def case_planted_library(projects: Projects) -> tuple[str, str]:
    """Old form: a shared library with a constructor named by timings.<fp>.artifact with its sha256."""
    project = projects.fresh("planted so")
    pytest_run(project, "--tvmperf-update", "--tvmperf-baseline-program=so")
    marker = project / "owned"
    source = project / "planted.c"
    source.write_text(PLANTED_LIBRARY.replace("MARKER", json.dumps(str(marker))))
    tests = entries(project)
    for entry in tests.values():
        for timing in entry["timings"].values():
            if timing.get("artifact"):
                so = project / "baselines" / timing["artifact"]["path"]
                subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(source)], check=True)
                timing["artifact"]["sha256"] = hashlib.sha256(so.read_bytes()).hexdigest()
    write_entries(project, tests)
    ran = pytest_run(project, env=env_for(TVMPERF_FAKE_SCALE="3"))
    return judge(ran, "is not loaded" in ran.out, "why the library is not loaded", marker=marker, says="is not loaded")


def _git(project: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=f",
            "-c",
            "user.email=f@f",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=project,
        check=True,
        capture_output=True,
    )


def case_baselines_ref(projects: Projects) -> tuple[str, str]:
    """A pull request regresses the code and re-records baselines/: gated with --tvmperf-baselines-ref=main."""
    project = projects.fresh("baselines ref")
    (project / "test_perf.py").write_text(MLP_TEST)
    shutil.rmtree(project / "baselines")
    pytest_run(project, "--tvmperf-update")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "main")
    _git(project, "checkout", "-qb", "pr")
    pytest_run(project, "--tvmperf-update", env=env_for(MLP_BIND="0"))
    _git(project, "commit", "-qam", "pr")
    ran = pytest_run(project, "--tvmperf-baselines-ref=main", env=env_for(MLP_BIND="0"))
    return judge(
        ran,
        ran.rc == 1 and "regressed" in ran.out and "baselines read from baselines/ at main" in ran.out,
        "the regression against main's baselines",
        says="regressed",
    )


def case_baselines_ref_missing(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("baselines ref missing")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "main")
    ran = pytest_run(project, "--tvmperf-baselines-ref=origin/nosuch")
    return judge(
        ran,
        ran.rc == 4 and "no such git revision" in ran.out,
        "that the revision does not exist",
        says="no such git revision",
    )


def case_baselines_ref_update(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("baselines ref update")
    ran = pytest_run(project, "--tvmperf-baselines-ref=main", "--tvmperf-update")
    return judge(ran, ran.rc == 4 and "use one or the other" in ran.out, "the conflict", says="use one or the other")


def _no_valgrind_path(project: Path) -> str:
    bin_dir = project / "bin-without-valgrind"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                link = bin_dir / name
                if not name.startswith("valgrind") and not link.exists():
                    link.symlink_to(Path(folder, name))
    return str(bin_dir)


def _sim_project(projects: Projects, name: str) -> Path:
    project = projects.fresh(name)
    (project / "test_perf.py").write_text(SIM_TEST)
    shutil.rmtree(project / "baselines")
    pytest_run(project, "--tvmperf-update", "--tvmperf-simulate=on", env=env_for(TVMPERF_TEST_SIMULATE="1"))
    return project


def case_update_without_valgrind(projects: Projects) -> tuple[str, str]:
    """An update on a machine without valgrind: the stored simulated counts are kept."""
    project = _sim_project(projects, "update without valgrind")
    before = entries(project)["test_sim[llvm-prim]"]["exact"].get("per_kernel")
    ran = pytest_run(
        project, "--tvmperf-update", env=env_for(TVMPERF_TEST_SIMULATE="1", PATH=_no_valgrind_path(project))
    )
    after = entries(project)["test_sim[llvm-prim]"]["exact"].get("per_kernel")
    lost = [] if before and after == before else ["exact.per_kernel lost"]
    return judge(
        ran,
        "kept the stored cpu_instructions, est_cycles counts" in ran.out,
        "the kept counts",
        lost,
        says="kept the stored",
    )


def case_simulate_on_without_valgrind(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("simulate on without valgrind")
    ran = pytest_run(project, "--tvmperf-simulate=on", env=env_for(PATH=_no_valgrind_path(project)))
    return judge(
        ran, ran.rc == 4 and "valgrind is not installed" in ran.out, "the usage error", says="valgrind is not installed"
    )


def case_valgrind_killed(projects: Projects) -> tuple[str, str]:
    project = _sim_project(projects, "valgrind killed")
    (project / "kill_valgrind.py").write_text(KILL_VALGRIND_PLUGIN)
    ran = pytest_run(project, "-p", "kill_valgrind", env=env_for(TVMPERF_TEST_SIMULATE="1"))
    found = re.search(r"see its log (\S+/valgrind\.log)", ran.out)
    log_kept = bool(found) and Path(found.group(1)).is_file()
    if found:
        shutil.rmtree(Path(found.group(1)).parent, ignore_errors=True)
    return judge(
        ran,
        ran.rc == 1 and "killed by SIGKILL" in ran.out and log_kept,
        "the kill, with its log",
        says="killed by SIGKILL",
    )


def case_orphaned_ir(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("orphaned ir")
    orphan = project / "baselines" / "artifacts" / "ir" / ("0" * 24 + ".json.gz")
    shutil.copyfile(project / "baselines" / entries(project)["test_a[llvm-prim]"]["ir"]["path"], orphan)
    kept_by_gate = pytest_run(project).rc == 0 and orphan.exists()
    ran = pytest_run(project, "--tvmperf-update", "--tvmperf-prune")
    return judge(
        ran,
        kept_by_gate and not orphan.exists() and "artifact file(s) no baseline named" in ran.out,
        "the removal",
        baseline_problems(project),
        says="no baseline named",
    )


def case_hung_rpc_key(projects: Projects) -> tuple[str, str]:
    """An RPC server SIGSTOPped mid-run: the later tests of its key must not wait 600 s each."""
    from rpc_fixtures import RpcFarm

    project = projects.fresh("hung rpc key")
    shutil.rmtree(project / "baselines")
    (project / "conftest.py").write_text(STOP_SERVER)
    farm = RpcFarm(python=sys.executable, lifetime_s=DEADLINE_S + 120)
    try:
        farm.start()
        server = farm.add_server("wedged")
        ran = pytest_run(
            project,
            f"--tvmperf-rpc={farm.address}",
            "--tvmperf-targets=llvm@rpc:wedged",
            "--tvmperf-rpc-timeout=5",
            "--tvmperf-update",
            "--tvmperf-repeat=3",
            env=env_for(FAULT_STOP_PGID=str(server.pid)),
        )
    finally:
        farm.stop()
    return judge(
        ran,
        ran.rc == 1 and "every later test of this key fails at once" in ran.out,
        "the hung device",
        says="every later test of this key",
    )


def case_sigint_in_final_write(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("sigint final write")
    shutil.copyfile(project / "test_perf.py", project / "test_two.py")
    pytest_run(project, "--tvmperf-update")
    (project / "sigint_plugin.py").write_text(SIGINT_PLUGIN)
    ran = pytest_run(project, "-p", "sigint_plugin", "--tvmperf-update", env=env_for(FAULT_K="7"))
    leftovers = [f"left: {p.name}" for p in (project / "baselines").rglob(".*tmp*")]
    lost = baseline_problems(project) + baseline_problems(project, module="test_two") + leftovers
    if "KeyboardInterrupt" in ran.out:
        return "crash", "KeyboardInterrupt traceback"
    return judge(
        ran,
        ran.rc == 2 and "run interrupted while writing the baselines" in ran.out,
        "the status line",
        lost,
        says="run interrupted while writing",
    )


def case_read_only_ir(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("read-only ir")
    (project / "read_only_ir.py").write_text(READ_ONLY_IR_PLUGIN)
    before = (project / "baselines" / "test_perf.json").read_bytes()
    ran = pytest_run(project, "-p", "read_only_ir", "--tvmperf-update", env=env_for(FAULT_K="9"))
    lost = [] if (project / "baselines" / "test_perf.json").read_bytes() == before else ["baseline file changed"]
    return judge(
        ran,
        "cannot write the program's IR into" in ran.out,
        "the unwritable directory",
        lost + baseline_problems(project),
        says="cannot write the program",
    )


def case_tracker_advice(projects: Projects) -> tuple[str, str]:
    """The advised 'start a tracker' command, run as printed, on a port above 9199."""
    import shlex
    import socket

    from pytest_tvmperf.farm import tracker

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        tracker.summary(("127.0.0.1", port))
        return "silent", "a tracker answered where none runs"
    except tracker.TrackerError as exc:
        found = re.search(r"start one with (python -m tvm\.exec\.rpc_tracker [^,]+),", str(exc))
    if not found:
        return "silent", "no command advised"
    args = shlex.split(found.group(1))
    proc = subprocess.Popen(
        [sys.executable, *args[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                tracker.summary(("127.0.0.1", port), timeout=2)
                return "clear", f"the advised tracker listens on port {port}"
            except tracker.TrackerError:
                time.sleep(0.2)
        return (
            "crash",
            f"the advised command ended: {proc.stderr.read().decode(errors='replace').strip().splitlines()[-1:]}",
        )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def case_history_huge_int(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("history huge int")
    history = project / "history.jsonl"
    history.write_text(
        '{"schema_version": 1, "kind": "pytest-tvmperf-history", "created": "x", "tests": '
        '{"t": {"median_s": ' + "9" * 5000 + ', "verdict": "pass"}}}\n'
    )
    ran = pytest_run(project, f"--tvmperf-history={history}")
    return judge(
        ran,
        ran.rc == 4 and "field tests.t.median_s: a whole number of 5000 digits" in ran.out,
        "the file, line and field",
        says="5000 digits",
    )


def case_baseline_huge_int(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("baseline huge int")
    path = project / "baselines" / "test_perf.json"
    path.write_text(path.read_text().replace('"kernels": 1,', '"kernels": ' + "9" * 5000 + ",", 1))
    ran = pytest_run(project)
    return judge(ran, ran.rc == 1 and "a whole number of 5000 digits" in ran.out, "the field", says="5000 digits")


def case_cli_huge_int(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("cli huge int")
    path = project / "baselines" / "test_perf.json"
    path.write_text(path.read_text().replace('"kernels": 1,', '"kernels": ' + "9" * 5000 + ",", 1))
    ran = tvmperf_run(project, "show", str(path))
    return judge(ran, ran.rc == 2 and "5000 digits" in ran.out, "the field, with exit 2", says="5000 digits")


def case_null_metric(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("null metric")
    tests = entries(project)
    tests["test_a[llvm-prim]"]["exact"]["kernels"] = None
    write_entries(project, tests)
    ran = pytest_run(project)
    return judge(ran, ran.rc == 1 and "exact.kernels" in ran.out, "the null field", says="exact.kernels")


def case_executor_edited(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("executor edited")
    tests = entries(project)
    tests["test_a[llvm-prim]"]["executor"] = "vm-bytecode"
    write_entries(project, tests)
    ran = pytest_run(project)
    return judge(
        ran, ran.rc == 1 and "executor" in ran.out and "test_a" in ran.out, "the disagreeing field", says="executor"
    )


def case_kernel_never_returns(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("kernel never returns")
    (project / "test_perf.py").write_text(NEVER_RETURNS)
    shutil.rmtree(project / "baselines")
    ran = pytest_run(project, "--tvmperf-update", "--tvmperf-child-timeout=5")
    return judge(
        ran,
        ran.rc == 1 and ("did not return" in ran.out or "--tvmperf-child-timeout" in ran.out),
        "the hung kernel",
        says="child-timeout",
    )


def case_bad_option(flag: str, expect: str) -> Callable[[Projects], tuple[str, str]]:
    def case(projects: Projects) -> tuple[str, str]:
        project = projects.fresh(flag)
        ran = pytest_run(project, flag)
        return judge(ran, ran.rc == 4 and expect in ran.out, "the usage error", baseline_problems(project), says=expect)

    case.__doc__ = f"{flag}: a usage error"
    return case


def case_threshold_hint(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("threshold hint")
    ran = pytest_run(project, "--tvmperf-threshold=instructions=abc")
    wording = "instructions=0 (no increase), instructions=2 or instructions=5%; or instructions=off" in ran.out
    return judge(
        ran,
        ran.rc == 4 and wording and "(or '" not in ran.out,
        "a hint that reads well",
        says="instructions=0 (no increase)",
    )


def case_read_only_baseline_mode(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("read-only baseline mode")
    path = project / "baselines" / "test_perf.json"
    path.chmod(0o444)
    ran = pytest_run(project, "--tvmperf-update", env=env_for(FAULT_K="11"))
    mode = path.stat().st_mode & 0o777
    path.chmod(0o644)
    return judge(ran, mode == 0o444, f"the file's mode (now {mode:o})", baseline_problems(project))


# ----------------------------------------------------------------------------- issue 33, round 2: data (sec2's block)


def _cache_env(project: Path, **extra: str) -> dict:
    """A cache and a key of the project's own (the machine's cache left alone)."""
    return env_for(TVMPERF_CACHE_DIR=str(project / ".user-cache"), XDG_CONFIG_HOME=str(project / ".config"), **extra)


def case_planted_cache_library(projects: Projects) -> tuple[str, str]:
    """A library planted in $TVMPERF_CACHE_DIR/builds with its sha256 beside it."""
    project = projects.fresh("planted cache library")
    pytest_run(project, env=_cache_env(project))  # the baselines' IR rebuilt and cached
    marker = project / "owned"
    source = project / "planted.c"
    source.write_text(PLANTED_LIBRARY.replace("MARKER", json.dumps(str(marker))))
    cached = sorted((project / ".user-cache" / "builds").rglob("*.so"))
    for so in cached:
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(source)], check=True)
        so.with_name(so.name + ".sha256").write_text(hashlib.sha256(so.read_bytes()).hexdigest() + "\n")
    ran = pytest_run(project, env=_cache_env(project))
    return judge(
        ran, bool(cached) and ran.rc == 0 and "2 passed" in ran.out, "a gate that rebuilt the baselines", marker=marker
    )


def case_cache_dir_others_write(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("cache dir others write")
    (project / ".user-cache").mkdir()
    (project / ".user-cache").chmod(0o777)
    ran = pytest_run(project, env=_cache_env(project))
    return judge(ran, ran.rc == 4 and "is writable by others" in ran.out, "the refusal", says="writable by others")


def case_symlink_update(projects: Projects) -> tuple[str, str]:
    """A committed baselines/sub -> outside: an update must not write through it."""
    project = projects.fresh("symlink update")
    (project / "sub").mkdir()
    shutil.copyfile(project / "test_perf.py", project / "sub" / "test_perf.py")
    outside = project.parent / f"{project.name}-outside"
    outside.mkdir()
    (project / "baselines" / "sub").symlink_to(outside)
    ran = pytest_run(project, "--tvmperf-update", env=env_for(FAULT_K="5"))
    wrote = [f"written outside: {p.name}" for p in outside.rglob("*")]
    return judge(
        ran,
        ran.rc == 4 and "is a symbolic link" in ran.out,
        "the link",
        wrote + baseline_problems(project),
        says="is a symbolic link",
    )


def case_symlink_ir(projects: Projects) -> tuple[str, str]:
    """baselines/artifacts/ir replaced by a link to a directory outside."""
    project = projects.fresh("symlink ir")
    ir = project / "baselines" / "artifacts" / "ir"
    moved = project.parent / f"{project.name}-ir"
    ir.rename(moved)
    ir.symlink_to(moved)
    ran = pytest_run(project)
    return judge(
        ran, ran.rc == 4 and "artifacts/ir is a symbolic link" in ran.out, "the link", says="is a symbolic link"
    )


def case_symlink_artifacts(projects: Projects) -> tuple[str, str]:
    """baselines/artifacts a link: the message names the link, not an option nobody passed."""
    project = projects.fresh("symlink artifacts")
    artifacts = project / "baselines" / "artifacts"
    moved = project.parent / f"{project.name}-artifacts"
    artifacts.rename(moved)
    artifacts.symlink_to(moved)
    ran = pytest_run(project)
    return judge(
        ran,
        ran.rc == 4 and "artifacts is a symbolic link" in ran.out and "--tvmperf-artifacts=" not in ran.out,
        "the link (not the option)",
        says="is a symbolic link",
    )


HOLD_TIMING_LOCK = """
import sys
from pytest_tvmperf.session import timing_lock_path
from pytest_tvmperf.store.locks import file_lock
with file_lock(timing_lock_path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def case_timing_lock_held(projects: Projects) -> tuple[str, str]:
    """Another run holds the timing lock (stopped, or hung)."""
    project = projects.fresh("timing lock held")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_TIMING_LOCK, str(project.resolve())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env_for(),
    )
    try:
        holder.stdout.readline()
        ran = pytest_run(project, "--tvmperf-lock-timeout=2")
    finally:
        holder.stdin.close()
        holder.wait()
    return judge(
        ran,
        ran.rc == 1 and f"process {holder.pid} holds the lock" in ran.out,
        "the holder's pid",
        says="holds the lock",
    )


def case_gzip_bomb(projects: Projects) -> tuple[str, str]:
    """The stored IR replaced by a gzip bomb (here 64 MiB of blanks against a cap of 8 MiB), its sha256 updated."""
    project = projects.fresh("gzip bomb")
    tests = entries(project)
    rel = tests["test_a[llvm-prim]"]["ir"]["path"]
    path = project / "baselines" / rel
    path.write_bytes(gzip.compress(b"{" + b" " * (64 * 2**20) + b"}", mtime=0))
    for entry in tests.values():
        if entry.get("ir", {}).get("path") == rel:
            entry["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    write_entries(project, tests)
    ran = pytest_run(project, env=env_for(TVMPERF_MAX_IR_MB="8"))
    return judge(ran, ran.rc == 1 and "inflates to more than 8 MiB" in ran.out, "the cap", says="inflates to more than")


FILE_SIZE_LIMIT = """
import resource
def pytest_configure(config):
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
"""


def case_full_disk_export(projects: Projects) -> tuple[str, str]:
    """ulimit -f 4 (a full disk): the export for the isolation child cannot be written."""
    project = projects.fresh("full disk export")
    (project / "fsize_limit.py").write_text(FILE_SIZE_LIMIT)
    ran = pytest_run(project, "-p", "fsize_limit")
    return judge(
        ran,
        ran.rc == 1 and "test_a[llvm-prim]" in ran.out and "cannot be exported" in ran.out,
        "the test and the reason",
        says="cannot be exported",
    )


HUGE_ALLOC = """
import numpy as np
import pytest
from tvm.script import ir as I, relax as R
from pytest_tvmperf import Workload

@I.ir_module
class Huge:
    @R.function
    def main(x: R.Tensor((16,), "float32")):
        big = R.zeros(R.shape([2**38]), "float32")
        return R.add(x, R.sum(big))

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_huge(tvmperf):
    tvmperf.check(Workload(name="huge", program=Huge, make_inputs=lambda rng, dims: [np.ones(16, "float32")],
                           reference=lambda x: x))
"""


def case_out_of_memory(projects: Projects) -> tuple[str, str]:
    """A kernel that allocates 1 TiB."""
    project = projects.fresh("out of memory")
    (project / "test_huge.py").write_text(HUGE_ALLOC)
    ran = pytest_run(project, "test_huge.py", "--tvmperf-update")
    if "std::bad_alloc" in ran.out and "ran out of memory" not in ran.out:
        return "crash", line_with(ran.out, "bad_alloc")
    return judge(
        ran,
        ran.rc == 1 and "the kernel ran out of memory" in ran.out and "TvmperfSession(" not in ran.out,
        "the test and the reason",
        says="ran out of memory",
    )


def case_workflow_command_strings(projects: Projects) -> tuple[str, str]:
    """Test-id keys and workload names that are GitHub Actions commands, printed by pytest and tvmperf show."""
    project = projects.fresh("workflow command strings")
    tests = entries(project)
    tests["::error file=x.py::owned\n::stop-commands::t"] = json.loads(json.dumps(tests["test_a[llvm-prim]"]))
    tests["test_a[llvm-prim]"]["workload"] = "scale2\n::warning::owned\x1b[2J"
    write_entries(project, tests)
    ran = pytest_run(project, env=env_for(TVMPERF_FAKE_SCALE="3"))
    shown = tvmperf_run(project, "show", str(project / "baselines" / "test_perf.json"))
    ran = Ran(ran.rc, ran.out + shown.out, ran.seconds)
    commands = [ln for ln in ran.out.splitlines() if ln.lstrip().startswith("::") or "\x1b" in ln]
    if commands:
        return "silent", f"a line printed from data: {commands[0][:80]!r}"
    return judge(
        ran, ran.rc == 1 and "workload was scale2\\n::warning" in ran.out, "the escaped strings", says="workload was"
    )


def case_marker_huge_int(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("marker huge int")
    test = project / "test_perf.py"
    test.write_text(
        test.read_text().replace(
            'executors=["prim"])\ndef test_a', 'executors=["prim"], instructions=10**5000)\ndef test_a', 1
        )
    )
    ran = pytest_run(project)
    return judge(
        ran,
        ran.rc == 4
        and "bad threshold instructions=<a whole number of" in ran.out
        and "integer string conversion" not in ran.out,
        "the threshold hint",
        says="bad threshold",
    )


def case_duplicate_key(projects: Projects) -> tuple[str, str]:
    project = projects.fresh("duplicate key")
    path = project / "baselines" / "test_perf.json"
    path.write_text(path.read_text().replace('"kernels": 1,', '"kernels": 1, "kernels": 9,', 1))
    ran = pytest_run(project)
    return judge(
        ran,
        ran.rc == 1 and "key 'kernels' is written twice" in ran.out,
        "the file, entry and key",
        says="written twice",
    )


UNROLLED_IR = """
import sys
import tvm
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for j in T.unroll(200000):
        for i in range(64):
            B[i] = B[i] + A[i] * T.float32(j)

sys.stdout.buffer.write(tvm.ir.save_json(tvm.IRModule({"main": main})).encode())
"""


def plant_ir(project: Path, script_text: str) -> None:
    """Replace test_a[llvm-prim]'s stored IR with the module ``script_text`` prints (run in a
    fresh process), and update the sha256 of every entry that names that file."""
    tests = entries(project)
    rel = tests["test_a[llvm-prim]"]["ir"]["path"]
    path = project / "baselines" / rel
    script = project / "make_ir.py"
    script.write_text(script_text)
    text = subprocess.run([sys.executable, str(script)], capture_output=True, check=True, env=env_for()).stdout
    path.write_bytes(gzip.compress(text, mtime=0))
    for entry in tests.values():
        if entry.get("ir", {}).get("path") == rel:
            entry["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    write_entries(project, tests)


def case_ir_minutes_to_build(projects: Projects) -> tuple[str, str]:
    """A stored IR with T.unroll(200000) (minutes of LLVM), its sha256 updated."""
    project = projects.fresh("ir minutes to build")
    plant_ir(project, UNROLLED_IR)
    ran = pytest_run(project, "-vv", "--tvmperf-child-timeout=10", env=_cache_env(project))  # -q -vv: -v
    return judge(ran, ran.rc == 0 and "took longer than 10 s" in ran.out, "the stopped build", says="took longer")


SECOND_CALL_LOOPS = """
import sys
import tvm
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    while A[0] > T.float32(5):
        B[1] = B[1] + T.float32(1)
    for i in range(64):
        B[i] = A[i] * T.float32(2)
    A[0] = T.float32(7)

sys.stdout.buffer.write(tvm.ir.save_json(tvm.IRModule({"main": main})).encode())
"""


def case_ir_loops_on_second_call(projects: Projects) -> tuple[str, str]:
    """A stored IR that returns on its first call (the child's) and loops forever from its second on."""
    project = projects.fresh("ir loops on second call")
    plant_ir(project, SECOND_CALL_LOOPS)
    ran = pytest_run(project, "--tvmperf-child-timeout=10", env=_cache_env(project))
    return judge(
        ran,
        ran.rc == 1
        and "test_a[llvm-prim]: the baseline rebuilt from IR" in ran.out
        and "did not return within 10 s" in ran.out,
        "the test and the bound",
        says="did not return",
    )


ROUND2_DATA_CASES: dict[str, Callable[[Projects], tuple[str, str]]] = {
    "stored IR that takes minutes to build (T.unroll(200000))": case_ir_minutes_to_build,
    "stored IR that loops forever on its second call": case_ir_loops_on_second_call,
    "cache: planted .so with its sha256 beside it": case_planted_cache_library,
    "cache: directory writable by others": case_cache_dir_others_write,
    "link: baselines/sub -> outside, then --tvmperf-update": case_symlink_update,
    "link: baselines/artifacts/ir -> outside, gate": case_symlink_ir,
    "link: baselines/artifacts -> outside (named, not the option)": case_symlink_artifacts,
    "timing lock held by a stopped run": case_timing_lock_held,
    "gzip bomb as the stored IR": case_gzip_bomb,
    "ulimit -f during the export for the child": case_full_disk_export,
    "kernel allocating 1 TiB": case_out_of_memory,
    "workflow commands in test ids and workload names": case_workflow_command_strings,
    "marker instructions=10**5000": case_marker_huge_int,
    "a key written twice in a baseline entry": case_duplicate_key,
}


CASES: dict[str, Callable[[Projects], tuple[str, str]]] = {
    "planted IR calls system() (baselines/ change only)": case_planted_ir,
    "planted .so with a constructor (old form, sha256 updated)": case_planted_library,
    "PR re-records baselines; gated with --tvmperf-baselines-ref=main": case_baselines_ref,
    "--tvmperf-baselines-ref to a revision that does not exist": case_baselines_ref_missing,
    "--tvmperf-baselines-ref with --tvmperf-update": case_baselines_ref_update,
    "update without valgrind keeps the simulated counts": case_update_without_valgrind,
    "--tvmperf-simulate=on without valgrind": case_simulate_on_without_valgrind,
    "valgrind SIGKILLed during a gate": case_valgrind_killed,
    "orphaned IR file, then --tvmperf-prune": case_orphaned_ir,
    "RPC server SIGSTOPped: later tests of its key": case_hung_rpc_key,
    "SIGINT inside the final write": case_sigint_in_final_write,
    "read-only artifacts/ir during an update": case_read_only_ir,
    "'start a tracker' advice on a port >= 9199": case_tracker_advice,
    "5000-digit number in the history file": case_history_huge_int,
    "5000-digit number in a baseline file (pytest)": case_baseline_huge_int,
    "5000-digit number in a baseline file (tvmperf show)": case_cli_huge_int,
    "exact metric set to null": case_null_metric,
    "entry's executor edited": case_executor_edited,
    "kernel that never returns (sleep)": case_kernel_never_returns,
    "--tvmperf-rpc-timeout=99999999999": case_bad_option("--tvmperf-rpc-timeout=99999999999", "rpc-timeout"),
    "--tvmperf-min-repeat-ms=3000000000": case_bad_option("--tvmperf-min-repeat-ms=3000000000", "min-repeat-ms"),
    "--tvmperf-artifacts=../x": case_bad_option("--tvmperf-artifacts=../x", "inside the baseline directory"),
    "--tvmperf-trust-artifacts=maybe": case_bad_option("--tvmperf-trust-artifacts=maybe", "trust-artifacts"),
    "bad threshold's hint": case_threshold_hint,
    "update keeps a read-only baseline file's mode": case_read_only_baseline_mode,
    **ROUND2_DATA_CASES,
}

# ----------------------------------------------------------------------------- issue 33 (sec1): code in baselines/
# Cases 1-4 and 11 (a planted stored IR) and 5, 18 (a planted tuning record), built as the
# pytester tests in tests/test_baselines_code_execution.py build them.


def _round2():
    sys.path.insert(0, str(ROOT / "tests"))
    import test_baselines_code_execution as code_execution

    return code_execution


def case_round2_ir(key: str) -> Callable[[Projects], tuple[str, str]]:
    def case(projects: Projects) -> tuple[str, str]:
        project = projects.fresh(f"round2 {key}")
        marker = project / "owned"
        data, words = _round2()._attacks(marker)[key]
        tests = entries(project)
        path = project / "baselines" / tests["test_a[llvm-prim]"]["ir"]["path"]
        path.write_bytes(gzip.compress(data, mtime=0))
        for entry in tests.values():
            if entry.get("ir", {}).get("path") == tests["test_a[llvm-prim]"]["ir"]["path"]:
                entry["ir"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        write_entries(project, tests)
        ran = pytest_run(project)
        built = list(project.glob(".tvmperf-cache/**/*.so"))
        return judge(
            ran,
            words in ran.out and "is refused" in ran.out and ran.rc != 0 and not built,
            "the refusal naming the key",
            marker=marker,
            says="is refused",
        )

    return case


def _tuned_project(projects: Projects, name: str) -> Path:
    project = projects.tmp / f"round2-{name}"
    project.mkdir()
    (project / "conftest.py").write_text(FAKE_TIMER_CONFTEST)
    (project / "test_perf.py").write_text(_round2().TUNED)
    shutil.copytree(ROOT / "baselines" / "tuning", project / "baselines" / "tuning")
    return project


def case_round2_tuning_record(projects: Projects) -> tuple[str, str]:
    """Case 5: an Annotate(pragma_import_llvm) instruction in a committed record."""
    project = _tuned_project(projects, "pragma")
    records = project / "baselines" / "tuning" / "database_tuning_record.json"
    lines = records.read_text().splitlines()
    row = json.loads(lines[0])
    row[1][0][0].append(
        ["Annotate", ["b0", json.dumps("define float @expf(float) { ret float 0.0 }")], ["pragma_import_llvm"], []]
    )
    lines[0] = json.dumps(row)
    records.write_text("\n".join(lines) + "\n")
    ran = pytest_run(project)
    return judge(
        ran,
        "line 1: refused" in ran.out and "'pragma_import_llvm'" in ran.out and ran.rc != 0,
        "the refusal naming the file, line and key",
        says="line 1: refused",
    )


def case_round2_tuning_ref(projects: Projects) -> tuple[str, str]:
    """Case 5: with --tvmperf-baselines-ref the database is read from the ref."""
    project = _tuned_project(projects, "ref")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "main")
    records = project / "baselines" / "tuning" / "database_tuning_record.json"
    records.write_text(records.read_text().replace('"meta_schedule.parallel"', '"pragma_import_llvm"', 1))
    ran = pytest_run(project, "--tvmperf-baselines-ref=main")
    return judge(
        ran,
        "pragma_import_llvm" not in ran.out and "line 1" not in ran.out,
        "the ref's database used",
        says="baselines read from",
    )


def case_round2_tuning_deep(projects: Projects) -> tuple[str, str]:
    """Case 18: a deeply nested line in the tuning database."""
    project = _tuned_project(projects, "deep")
    records = project / "baselines" / "tuning" / "database_tuning_record.json"
    lines = records.read_text().splitlines()
    lines.insert(1, "[0, " + "[" * 50_000 + "]" * 50_000 + "]")
    records.write_text("\n".join(lines) + "\n")
    ran = pytest_run(project)
    return judge(
        ran,
        "line 2:" in ran.out and "nested more than" in ran.out and "RecursionError" not in ran.out,
        "an error naming the file and line",
        says="nested more than",
    )


CASES.update(
    {
        "issue 33 case 1: dangling global_symbol, T.call_extern('system')": case_round2_ir("case1"),
        "issue 33 case 2: vm.builtin.invoke_debug_func": case_round2_ir("case2"),
        "issue 33 case 3: external_mods holding an ffi.Module": case_round2_ir("case3"),
        "issue 33 case 4: pragma_import_llvm loop annotation": case_round2_ir("case4"),
        "issue 33 case 5: tuning record Annotate(pragma_import_llvm)": case_round2_tuning_record,
        "issue 33 case 5: --tvmperf-baselines-ref reads the tuning database from the ref": case_round2_tuning_ref,
        "issue 33 case 11: deeply nested IR JSON": case_round2_ir("case11"),
        "issue 33 case 18: deeply nested tuning database line": case_round2_tuning_deep,
    }
)
# ----------------------------------------------------------------------------- end of issue 33 (sec1)

NEEDS = {
    "valgrind": ("valgrind",),
    "git": ("baselines-ref",),
    "cc": ("planted .so",),
}  # "planted .so" covers the cache's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10, help="kill points per signal (default 10)")
    parser.add_argument("--only", default="", help="comma-separated parts of case names to run")
    args = parser.parse_args()
    wanted = [w.strip().lower() for w in args.only.split(",") if w.strip()]
    results: list[Result] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tvmperf-faults-") as tmp:
        projects = Projects(Path(tmp))
        if not wanted or any(w in "kill points" for w in wanted):
            results += kill_points(projects, args.points)
        for name, case in CASES.items():
            if wanted and not any(w in name.lower() for w in wanted):
                continue
            missing = [
                tool for tool, parts in NEEDS.items() if any(p in name for p in parts) and shutil.which(tool) is None
            ]
            if missing:
                results.append(Result(name, "skipped", f"needs {', '.join(missing)}"))
                continue
            try:
                outcome, detail = case(projects)
            except Exception as exc:  # the harness itself failed: shown, never counted as clear
                outcome, detail = "crash", f"harness: {type(exc).__name__}: {exc}"[:200]
            results.append(Result(name, outcome, detail))
            print(f"  {outcome:9s} {name}: {detail}", file=sys.stderr, flush=True)
    counts = Counter(r.outcome for r in results)
    print(f"{len(results)} cases in {time.monotonic() - started:.0f} s")
    print("| outcome | cases |")
    print("|---|---|")
    for outcome in (*OUTCOMES, "skipped"):
        if outcome in OUTCOMES or counts[outcome]:
            print(f"| {outcome} | {counts[outcome]} |")
    print()
    print("| case | outcome | detail |")
    print("|---|---|---|")
    for r in results:
        print(f"| {r.case} | {r.outcome} | {r.detail.replace('|', '/')} |")
    if any(counts[o] for o in OUTCOMES if o != "clear"):
        sys.exit(1)


if __name__ == "__main__":
    main()
