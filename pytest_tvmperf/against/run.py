"""Today's run starts the other TVM version's pass: one child pytest, in the other
version's environment, on this run's selection of tvmperf tests, with the export side
on (export.py). Its results and exported builds land in a directory of this run,
shared by its xdist workers (the first to ask runs the pass under a lock, the others
read what it wrote) and removed at the end of the run."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Any, Mapping, Sequence

from pytest_tvmperf.against.env import OtherEnv
from pytest_tvmperf.against.export import ENV_EXPORT, RESULTS

#: only this plugin and pytest's own in the child (its ``-p`` must be on the command line proper,
#: not in the ``@file``, to be loaded before the options are parsed)
PLUGINS = ("-p", "pytest_tvmperf.plugin", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")
#: lines of the child's output kept when the whole pass failed
LOG_LINES = 20


@dataclass(frozen=True)
class OtherBuild:
    """One test as the other version built it (or why it could not)."""

    status: str  #: built, failed, skipped, missing
    error: str = ""
    record: Mapping[str, Any] | None = None
    library: Path | None = None


@dataclass
class OtherBuilds:
    """The other version's pass: by node id; ``problem`` when the pass itself failed."""

    by_nodeid: dict[str, OtherBuild] = field(default_factory=dict)
    problem: str = ""
    tvm_version: str = ""

    def get(self, nodeid: str) -> OtherBuild:
        """The test's build, else its module's collection error, else why it is missing."""
        missing = OtherBuild("missing", self.problem or "the other version's run did not reach this test")
        return self.by_nodeid.get(nodeid) or self.by_nodeid.get(f"collect:{nodeid.split('::')[0]}") or missing


def run_dir(run_id: str) -> Path:
    """The pass's directory: claimed by the controller for the run (store/sweep.py)."""
    from pytest_tvmperf.store.sweep import PREFIX

    return Path(tempfile.gettempdir()) / f"{PREFIX}against-{run_id}"


def child_args(nodeids: Sequence[str], rootdir: Path, inipath: Path | None, options: Sequence[str]) -> list[str]:
    """The child pytest's arguments (in an ``@file``: node ids can be many): the same
    rootdir and ini, the options given, the node ids; :data:`PLUGINS` go on its command line."""
    args = ["-o", "addopts=", f"--rootdir={rootdir}", "-q", "--tvmperf-timing=off", "--tvmperf-artifacts=off"]
    if inipath is not None:
        args.append(f"--config-file={inipath}")
    return [*args, *options, *nodeids]


#: the seconds the other version's pass may take per test (compile, check, time), on top
#: of the run's lock bound: past it the pass is stopped, and each test says so
PASS_S_PER_TEST = 300


def pass_bound_s(tests: int, lock_timeout_s: float) -> float:
    """How long the other version's pass of ``tests`` tests may run (and others wait for it)."""
    return float(lock_timeout_s) + PASS_S_PER_TEST * max(1, tests)


def run_pass(
    env: OtherEnv,
    nodeids: Sequence[str],
    rootdir: Path,
    inipath: Path | None,
    options: Sequence[str],
    out: Path,
    bound_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    wait_s: float | None = None,
) -> OtherBuilds:
    """Run the other version's pass into ``out`` once (a finished one is read back), stopped
    after ``bound_s`` seconds; a run that finds it running waits at most ``wait_s`` (default:
    a minute past that; None: no bound), with a line naming its holder."""
    from pytest_tvmperf.store.locks import LockError, LockTimeout, file_lock

    out.mkdir(parents=True, exist_ok=True)
    try:
        if wait_s is None and bound_s is not None:
            wait_s = bound_s + 60
        with file_lock(Path(str(out) + ".lock"), wait_s, f"lock of the apache-tvm {env.tvm_version} pass", on_wait):
            if not (out / RESULTS).exists():
                _run_child(env, child_args(nodeids, rootdir, inipath, options), rootdir, out, bound_s)
    except LockTimeout as exc:
        problem = (
            f"the apache-tvm {env.tvm_version} pass of another run was not over within {wait_s:.0f} s "
            f"(--tvmperf-lock-timeout plus {PASS_S_PER_TEST} s per test): {exc}"
        )
        return OtherBuilds(problem=problem, tvm_version=env.tvm_version)
    except LockError as exc:
        return OtherBuilds(problem=str(exc), tvm_version=env.tvm_version)
    return read_pass(out, env.tvm_version)


def _run_child(env: OtherEnv, args: list[str], rootdir: Path, out: Path, bound_s: float | None) -> None:
    import pytest_tvmperf

    # the child's PYTHONPATH: a directory holding only a link to this plugin's package (no
    # metadata beside it, so no entry point loads it twice)
    here = out / "plugin-path"
    here.mkdir(parents=True, exist_ok=True)
    if not (here / "pytest_tvmperf").exists():
        os.symlink(Path(pytest_tvmperf.__file__).resolve().parent, here / "pytest_tvmperf")
    argsfile = out / "args.txt"
    argsfile.write_text("\n".join(args) + "\n")
    # only this plugin (named on the command line): no entry point loads it a second time
    # (a checkout with its egg-info on sys.path), and no other plugin of that environment runs
    environ = {**os.environ, ENV_EXPORT: str(out), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(here), os.environ.get("PYTHONPATH", "")) if p)
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST", "VIRTUAL_ENV"):
        environ.pop(name, None)
    with open(out / "child.log", "wb") as log:
        try:
            subprocess.run(
                [str(env.python), "-m", "pytest", *PLUGINS, f"@{argsfile}"],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(rootdir),
                env=environ,
                stdin=subprocess.DEVNULL,
                timeout=bound_s,
            )
        except subprocess.TimeoutExpired:
            log.write(
                f"\ntvmperf: the apache-tvm {env.tvm_version} pass was stopped after {bound_s:.0f} s "
                f"({PASS_S_PER_TEST} s per test beyond --tvmperf-lock-timeout)\n".encode()
            )


def read_pass(out: Path, tvm_version: str = "") -> OtherBuilds:
    builds = OtherBuilds(tvm_version=tvm_version)
    try:
        data = json.loads((out / RESULTS).read_text())
    except (OSError, ValueError):
        try:
            log = (out / "child.log").read_text(errors="replace")
        except OSError:
            log = ""
        kept = [line[:300] for line in log.splitlines() if line.strip()][-LOG_LINES:]
        builds.problem = "its pytest run ended without results; its last lines:\n" + "\n".join(kept)
        return builds
    for nodeid, entry in data.items():
        library = out / entry["library"] if entry.get("library") else None
        builds.by_nodeid[nodeid] = OtherBuild(
            entry.get("status", "failed"), entry.get("error", ""), entry.get("record"), library
        )
    return builds
