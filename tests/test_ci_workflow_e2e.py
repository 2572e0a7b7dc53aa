"""issue 45 "Show": the workflow users copy (docs/examples/github-workflow.yml), its
``run:`` steps run in order as a runner runs them (the ``GITHUB_*`` environment, the
step's ``env:`` with its expressions evaluated, its ``if:``), in a temporary git
repository with an ``origin`` whose default branch is ``main`` and pull-request branches.

What a runner's actions do is done here in their place: ``actions/checkout`` is a clone
of the one branch, ``setup-python`` and the restored venv are this interpreter (the
plugin on ``PYTHONPATH``: the install and apt-get steps are not run), ``upload-artifact``
keeps the files in a local store, and ``gh`` is a stub that lists and downloads from that
store and records ``gh pr create``. The workload is the bundled MLP with its time off
(``timing=False``) and no simulated cost: every verdict here is an exact count, so no
scenario can flake on timing noise. One module, one shared repository, one subprocess
pytest per run of the gate.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gitrepo import git as _git

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "examples" / "github-workflow.yml"
LABEL = "perf-change-approved"

TEST_MODEL = """
import pytest
from pytest_tvmperf import workloads

BIND = True  # a pull request that changes this changes the program (weights passed at run time)


@pytest.mark.tvmperf(executors=["vm-bytecode"], timing=False)
def test_mlp(tvmperf):
    tvmperf.check(workloads.mlp(batch=1, bind_params=BIND))
"""

PYTEST_INI = "[pytest]\ntvmperf_simulate = off\n"

GH_STUB = r"""#!/bin/bash
# gh, as much of it as the workflow calls: artifacts from $GH_STUB_STORE
set -e
case "$1 $2" in
  "auth setup-git") exit 0 ;;
  "run list") cat "$GH_STUB_STORE/push-runs" 2>/dev/null || true ;;
  "run download")
    run=$3; shift 3
    while [ $# -gt 0 ]; do case "$1" in --name) name=$2; shift 2;; --dir) dir=$2; shift 2;; *) shift;; esac; done
    [ -d "$GH_STUB_STORE/artifacts/$run/$name" ] || exit 1
    mkdir -p "$dir" && cp -r "$GH_STUB_STORE/artifacts/$run/$name/." "$dir/" ;;
  "pr create") shift 2; printf '%s\n' "$@" > "$GH_STUB_STORE/pr-create" ;;
  *) echo "gh stub: $*: not simulated" >&2; exit 2 ;;
esac
"""


@dataclass
class Event:
    """What triggered a run: its name and the payload fields the workflow reads."""

    name: str  # push, pull_request, workflow_dispatch
    head: str  # the branch checked out
    base: str = ""  # a pull request's base branch
    action: str = ""  # a pull request's activity (opened, synchronize, labeled)
    label: str = ""  # the label a ``labeled`` activity added


@dataclass
class Run:
    """One job's run: its exit status (the first failing step's), output, and files."""

    rc: int
    output: str
    workspace: Path
    summary: str
    failed_step: str = ""
    steps: list[str] = field(default_factory=list)


class Runner:
    """Runs the workflow's jobs against the ``origin`` repository."""

    def __init__(self, base: Path) -> None:
        import yaml  # PyYAML comes with mkdocs (the test extra)

        self.base = base
        self.workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
        self.origin = base / "origin.git"
        self.store = base / "store"
        (self.store / "artifacts").mkdir(parents=True)
        bin_dir = base / "bin"
        bin_dir.mkdir()
        gh = bin_dir / "gh"
        gh.write_text(GH_STUB)
        gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
        self.path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        self.runs = 0

    def expressions(self, event: Event, run_id: int) -> dict[str, str]:
        """The value of each ``${{ ... }}`` the workflow uses, for this event."""
        return {
            "github.event_name": event.name,
            "github.base_ref": event.base,
            "github.ref_name": event.head,
            "github.token": "stub-token",
            "github.repository": "user/project",
            "github.workflow": self.workflow["name"],
            "github.event.repository.default_branch": "main",
            "github.run_id": str(run_id),
            "github.server_url": "https://github.com",
            "secrets.TVMPERF_CACHE_KEY": "k" * 64,
            "github.event.action == 'labeled' && github.event.label.name == 'perf-change-approved'": str(
                event.action == "labeled" and event.label == LABEL
            ).lower(),
            "github.event_name == 'pull_request'": str(event.name == "pull_request").lower(),
            "github.event_name != 'workflow_dispatch'": str(event.name != "workflow_dispatch").lower(),
            "github.event_name == 'workflow_dispatch'": str(event.name == "workflow_dispatch").lower(),
            "always()": "true",
            "steps.venv.outputs.cache-hit != 'true'": "false",  # the venv is this interpreter
        }

    def evaluate(self, text: str, values: dict[str, str]) -> str:
        def one(match: re.Match) -> str:
            expr = match.group(1).strip()
            assert expr in values, f"the workflow uses ${{{{ {expr} }}}}: add its value to Runner.expressions"
            return values[expr]

        return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))

    def condition(self, text: object, values: dict[str, str]) -> bool:
        if text is None:
            return True
        expr = str(text).strip()
        expr = expr[3:-2].strip() if expr.startswith("${{") else expr
        assert expr in values, f"the workflow's if: {expr}: add its value to Runner.expressions"
        return values[expr] == "true"

    def checkout(self, event: Event, workspace: Path) -> None:
        """actions/checkout: the one branch, no other refs (the base branch is the workflow's to fetch)."""
        _git(
            self.base, "clone", "-q", "--single-branch", "--branch", event.head, f"file://{self.origin}", str(workspace)
        )
        venv = workspace / ".venv" / "bin"
        venv.mkdir(parents=True)
        python = venv / "python"  # the restored venv: this interpreter, the plugin on PYTHONPATH
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(python.stat().st_mode | stat.S_IXUSR)

    def run(self, job: str, event: Event) -> Run:
        """The job's steps in order, as a runner runs them; stops at the first failing step."""
        self.runs += 1
        run_id = 1000 + self.runs
        values = self.expressions(event, run_id)
        spec = self.workflow["jobs"][job]
        assert self.condition(spec.get("if"), values), f"{job} does not run on {event.name}"
        workspace = self.base / f"run{run_id}"
        summary = self.base / f"summary{run_id}.md"
        summary.write_text("")
        env = {
            **os.environ,
            "PATH": self.path,
            "PYTHONPATH": str(ROOT),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event.name,
            "GITHUB_BASE_REF": event.base,
            "GITHUB_HEAD_REF": event.head if event.name == "pull_request" else "",
            "GITHUB_REF_NAME": event.head,
            "GITHUB_REPOSITORY": "user/project",
            "GITHUB_RUN_ID": str(run_id),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_TEMP": str(self.base / "runner-temp"),
            "GH_STUB_STORE": str(self.store),
            "TVMPERF_CACHE_DIR": str(self.base / "tvmperf-cache"),
            "PYTEST_ADDOPTS": "-p no:cacheprovider",
        }
        for name in ("TVMPERF_BASELINES_REF", "TVMPERF_APPROVED_CHANGE", "TVMPERF_SAME_PROGRAM"):
            env.pop(name, None)
        for key, value in {**self.workflow.get("env", {}), **spec.get("env", {})}.items():
            env[key] = self.evaluate(value, values)
        output: list[str] = []
        done = Run(0, "", workspace, "")
        for step in spec["steps"]:
            if not self.condition(step.get("if"), values) or (done.rc and step.get("if") != "always()"):
                continue
            name = step.get("name") or step.get("uses", "")
            if "uses" in step:
                self.action(step, event, run_id, workspace)
                continue
            script = step["run"]
            if "apt-get" in script or "pip install" in script:  # valgrind, the venv: this interpreter's
                continue
            step_env = {**env, **{k: self.evaluate(v, values) for k, v in step.get("env", {}).items()}}
            result = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", script],
                cwd=workspace,
                env=step_env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            output.append(f"--- step: {name} (exit {result.returncode})\n{result.stdout}{result.stderr}")
            done.steps.append(name)
            if result.returncode and not done.rc:
                done.rc, done.failed_step = result.returncode, name
        done.output, done.summary = "\n".join(output), summary.read_text()
        if event.name == "push":  # the history of a push is the one later runs read back
            (self.store / "push-runs").write_text(f"{run_id}\n" + _read(self.store / "push-runs"))
        return done

    def action(self, step: dict, event: Event, run_id: int, workspace: Path) -> None:
        uses = step["uses"].split("@")[0]
        if uses == "actions/checkout":
            self.checkout(event, workspace)
        elif uses == "actions/upload-artifact":
            kept = self.store / "artifacts" / str(run_id) / step["with"]["name"]
            kept.mkdir(parents=True)
            for path in str(step["with"]["path"]).split():
                if (workspace / path).is_file():
                    shutil.copy(workspace / path, kept / Path(path).name)
        else:
            assert uses in ("actions/setup-python", "actions/cache"), f"{uses}: not simulated"

    # --- the repository's side: what people push -------------------------------------------

    def push(self, clone: Path, branch: str, files: dict[str, str], message: str) -> None:
        for name, text in files.items():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).write_text(text)
        _git(clone, "add", "-A")
        _git(clone, "commit", "-qm", message)
        _git(clone, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")

    def history_lines(self, run_id: int) -> int:
        kept = self.store / "artifacts" / str(run_id) / "tvmperf-history" / "perf-history.jsonl"
        return len(_read(kept).splitlines())


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Runner, Path]:
    """``origin`` with ``main`` holding the perf test and no baselines yet, and a developer's clone."""
    pytest.importorskip("yaml")
    base = tmp_path_factory.mktemp("ci")
    runner = Runner(base)
    _git(base, "init", "-q", "--bare", str(runner.origin))
    dev = base / "dev"
    _git(base, "clone", "-q", f"file://{runner.origin}", str(dev))
    _git(dev, "checkout", "-qb", "main")
    runner.push(
        dev,
        "main",
        {
            "tests/perf/test_model.py": TEST_MODEL,
            "pytest.ini": PYTEST_INI,
            ".github/workflows/perf.yml": WORKFLOW.read_text(encoding="utf-8"),
            ".gitignore": ".venv/\n",
        },
        "the perf test",
    )
    return runner, dev


def _branch_from_main(runner: Runner, dev: Path, branch: str) -> None:
    _git(dev, "fetch", "-q", "origin")
    _git(dev, "checkout", "-q", "-B", branch, "origin/main")


def _record(dev: Path) -> None:
    """What a pull request's author runs: pytest --tvmperf-update (the plugin on PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TVMPERF_CACHE_DIR": str(dev.parent / "tvmperf-cache")}
    env.pop("GITHUB_STEP_SUMMARY", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/perf", "--tvmperf-update"],
        cwd=dev,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _baseline(workspace: Path) -> dict:
    return json.loads((workspace / "baselines/tests/perf/test_model.json").read_text())["tests"][
        "test_mlp[llvm-vm-bytecode]"
    ]


def test_the_workflow_gates_a_users_repository_run_by_run(repo):
    runner, dev = repo
    # (6) the manual re-record job records baselines/ and opens a pull request with them ...
    rerecord = runner.run("rerecord", Event("workflow_dispatch", "main"))
    assert rerecord.rc == 0, rerecord.output
    created = _read(runner.store / "pr-create")
    branch = re.search(r"--head\n(\S+)", created).group(1)
    assert branch.startswith("tvmperf/rerecord-") and "--base\nmain" in created
    # ... which the base branch (no baselines/ yet) cannot judge: one line naming the ref and what to do
    first = runner.run("perf", Event("pull_request", branch, base="main", action="opened"))
    assert first.rc != 0 and first.failed_step == "gate"
    assert (
        "--tvmperf-baselines-ref=origin/main: baselines/ does not exist at origin/main" in first.output
        and "a maintainer approves them with --tvmperf-approved-change=on" in first.output
    ), first.output
    approved = runner.run("perf", Event("pull_request", branch, base="main", action="labeled", label=LABEL))
    assert approved.rc == 0, approved.output
    assert "(1 approved, verified)" in approved.summary
    _git(dev, "fetch", "-q", "origin")
    _git(dev, "push", "-q", "origin", f"origin/{branch}:refs/heads/main")  # merged
    merged = runner.run("perf", Event("push", "main"))  # ... and a later gate of main accepts them
    assert merged.rc == 0, merged.output
    assert runner.history_lines(1000 + runner.runs) == 1

    # (5) the history grows by one run each time (read back from the last push's artifact)
    again = runner.run("perf", Event("push", "main"))
    assert again.rc == 0, again.output
    assert runner.history_lines(1000 + runner.runs) == 2

    # (1) an unchanged pull request passes (its history: the last push's, and its own run)
    _branch_from_main(runner, dev, "docs")
    runner.push(dev, "docs", {"README.md": "words\n"}, "docs only")
    unchanged = runner.run("perf", Event("pull_request", "docs", base="main", action="opened"))
    assert unchanged.rc == 0, unchanged.output
    assert "re-recorded no baseline against `origin/main`" in _read(unchanged.workspace / "perf-changes.md")
    assert runner.history_lines(1000 + runner.runs) == 3

    # (2) a pull request with a regression fails and names it, against the base branch's file
    _branch_from_main(runner, dev, "slower")
    runner.push(
        dev,
        "slower",
        {"tests/perf/test_model.py": TEST_MODEL.replace("BIND = True", "BIND = False")},
        "pass the weights at run time",
    )
    slower = runner.run("perf", Event("pull_request", "slower", base="main", action="opened"))
    assert slower.rc != 0 and slower.failed_step == "gate"
    assert (
        # peak_bytes: the weight transposes each call makes (2,101,248 B, 0 B with the weights bound)
        "instructions, calls, kernels, storage_bytes, alloc_bytes, code_bytes, peak_bytes regressed against the "
        "baseline in "
        "baselines/tests/perf/test_model.json at origin/main"
    ) in slower.output, slower.output
    assert "on a pull request that changes this on purpose" in slower.output
    assert "/tmp" not in slower.output.split("baseline in ", 1)[1].split("\n", 1)[0]
    assert runner.history_lines(1000 + runner.runs) == 3  # read back from the last push, not from a PR's run

    # (3) the same change with its baselines re-recorded: fails, showing the change and how to approve ...
    _record(dev)
    before, after = (
        _baseline(merged.workspace)["exact"]["instructions"]["forward"],
        _baseline(dev)["exact"]["instructions"]["forward"],
    )
    runner.push(dev, "slower", {}, "re-record the baselines")
    intended = runner.run("perf", Event("pull_request", "slower", base="main", action="synchronize"))
    assert intended.rc != 0
    changes = _read(intended.workspace / "perf-changes.md")
    for text in (intended.output, changes, intended.summary):
        assert f"instructions {before} -> {after} (+{after - before})" in text, text
    assert "this change re-recorded the baseline of test_mlp[llvm-vm-bytecode]" in intended.output
    assert "**To approve:**" in changes and LABEL in changes and "(1 not approved)" in intended.summary
    # ... and passes once a maintainer's label approves it, listing the approved change
    labeled = runner.run("perf", Event("pull_request", "slower", base="main", action="labeled", label=LABEL))
    assert labeled.rc == 0, labeled.output
    assert "(1 approved, verified)" in labeled.summary and f"instructions {before} -> {after}" in labeled.summary

    # (4) baselines edited by hand to numbers that were not measured fail even with the approval
    _branch_from_main(runner, dev, "by-hand")
    edited = json.loads((dev / "baselines/tests/perf/test_model.json").read_text())
    edited["tests"]["test_mlp[llvm-vm-bytecode]"]["exact"]["instructions"]["forward"] = before + 40
    runner.push(dev, "by-hand", {"baselines/tests/perf/test_model.json": json.dumps(edited, indent=2)}, "more room")
    forged = runner.run("perf", Event("pull_request", "by-hand", base="main", action="labeled", label=LABEL))
    assert forged.rc != 0
    assert (
        "the approved baseline of test_mlp[llvm-vm-bytecode] in baselines/tests/perf/test_model.json does "
        "not match what this code measures here"
    ) in forged.output, forged.output
    assert (
        f"instructions: the entry says {before + 40}, this code measures {before} (lower; limit no increase"
        in forged.output
    )
    assert "(1 does not match what was measured)" in forged.summary

    # a base branch that cannot be fetched: one line naming it and what to do; nothing is gated
    lost = runner.run("perf", Event("pull_request", "by-hand", base="gone", action="opened"))
    assert lost.rc != 0 and lost.failed_step.startswith("fetch the base branch") and "gate" not in lost.steps
    assert (
        "::error::cannot fetch the base branch gone from origin, so this pull request cannot be gated against "
        "its baselines (never against its own): re-run the job, or check that gone exists"
    ) in lost.output
