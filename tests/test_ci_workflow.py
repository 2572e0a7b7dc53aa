"""The GitHub Actions workflow that docs/ci.md gives users to copy as is
(docs/examples/github-workflow.yml): valid against GitHub's workflow schema, pinned, least
privilege, and wired the way the plugin expects (baselines of the base branch on pull
requests, the cache key, the reports, the history, a re-record job)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "examples" / "github-workflow.yml"


def _workflow() -> dict:
    yaml = pytest.importorskip("yaml")  # PyYAML comes with mkdocs (the test extra)
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(workflow: dict) -> list[tuple[str, dict]]:
    return [(job, step) for job, spec in workflow["jobs"].items() for step in spec["steps"]]


def _on(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare ``on`` key as True


def test_the_workflow_passes_githubs_workflow_schema():
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is in the test extra: pip install -e '.[test]'")
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing_in_the_workflow():
    """zizmor's audits (offline: unpinned actions, template injection, excessive permissions,
    persisted credentials, dangerous triggers, ...) at its default persona."""
    import shutil

    zizmor = shutil.which("zizmor") or str(Path(sys.executable).with_name("zizmor"))
    if not Path(zizmor).exists():
        pytest.skip("zizmor is in the test extra: pip install -e '.[test]'")
    result = subprocess.run(
        [zizmor, "--offline", "--no-progress", str(WORKFLOW)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout + result.stderr


def test_the_approval_is_only_the_run_a_maintainers_label_starts():
    """A pull request re-runs when labeled; only that run passes --tvmperf-approved-change, and
    --tvmperf-changes-md writes the changes, uploaded with the reports."""
    workflow = _workflow()
    assert "labeled" in _on(workflow)["pull_request"]["types"]
    assert "synchronize" in _on(workflow)["pull_request"]["types"]
    steps = workflow["jobs"]["perf"]["steps"]
    gate = next(s for s in steps if "pytest tests/perf" in s.get("run", ""))
    assert gate["env"]["APPROVED"] == (
        "${{ github.event.action == 'labeled' && github.event.label.name == 'perf-change-approved' }}"
    )
    assert 'if [ "$APPROVED" = true ]; then against+=(--tvmperf-approved-change=on); fi' in gate["run"]
    assert "--tvmperf-changes-md=perf-changes.md" in gate["run"]
    reports = next(s for s in steps if s.get("with", {}).get("name") == "tvmperf-reports")
    assert "perf-changes.md" in reports["with"]["path"]


def test_every_action_is_pinned_to_a_commit_with_its_version_named():
    text = WORKFLOW.read_text(encoding="utf-8")
    uses = re.findall(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$", text, re.MULTILINE)
    assert len(uses) == len([s for _, s in _steps(_workflow()) if "uses" in s]) >= 4
    for action, rest in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r"\s+# v\d+(\.\d+)*", rest), f"{action}: no version comment"


def test_least_privilege_and_no_persisted_credentials():
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        assert "permissions" in job, name  # each job says what it needs
        if name != "rerecord":
            assert set(job["permissions"].values()) == {"read"}, (name, job["permissions"])
    assert workflow["jobs"]["rerecord"]["permissions"] == {"contents": "write", "pull-requests": "write"}
    checkouts = [step for _, step in _steps(workflow) if step.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_no_expression_is_pasted_into_a_script():
    """Values reach ``run:`` scripts through ``env:`` (no template injection), and every script parses."""
    for job, step in _steps(_workflow()):
        if "run" in step:
            assert "${{" not in step["run"], (job, step.get("name"))
            parsed = subprocess.run(["bash", "-n"], input=step["run"], capture_output=True, text=True, timeout=60)
            assert parsed.returncode == 0, (job, step.get("name"), parsed.stderr)


def test_pull_requests_are_gated_against_the_base_branch_and_pushes_against_their_own():
    workflow = _workflow()
    assert set(_on(workflow)) == {"push", "pull_request", "workflow_dispatch"}
    steps = workflow["jobs"]["perf"]["steps"]
    fetch = next(s for s in steps if "git fetch" in s.get("run", ""))
    assert fetch["if"] == "github.event_name == 'pull_request'"
    assert fetch["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert '"+refs/heads/${BASE_REF}:refs/remotes/origin/${BASE_REF}"' in fetch["run"]
    gate = next(s for s in steps if "pytest tests/perf" in s.get("run", ""))
    assert '"--tvmperf-baselines-ref=origin/${BASE_REF}"' in gate["run"]
    assert 'if [ "$EVENT" = pull_request ]' in gate["run"]  # a push: the work tree's own baselines
    for flag in ("--junitxml=", "--tvmperf-json=", "--tvmperf-html=", "--tvmperf-history="):
        assert flag in gate["run"], flag


def test_the_build_cache_is_sealed_with_the_key_the_plugin_reads():
    from pytest_tvmperf.store.user_cache import ENV_CACHE_KEY

    perf = _workflow()["jobs"]["perf"]
    assert perf["env"][ENV_CACHE_KEY] == "${{ secrets.TVMPERF_CACHE_KEY }}"
    assert any(s.get("with", {}).get("path") == "~/.cache/pytest-tvmperf" for s in perf["steps"])


def test_the_plugin_and_torch_are_installed_by_name_at_pinned_versions():
    import tomllib

    workflow = _workflow()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert workflow["env"]["TVMPERF"] == f"pytest-tvmperf[peers]=={project['version']}"
    assert workflow["env"]["TORCH"] == "torch==2.13.0"  # as the README's commands
    assert "torch==2.13.0" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "-e " not in WORKFLOW.read_text(encoding="utf-8")  # not this repository's own checkout


def test_the_history_is_carried_from_run_to_run():
    steps = _workflow()["jobs"]["perf"]["steps"]
    download = next(s for s in steps if "gh run download" in s.get("run", ""))
    upload = next(s for s in steps if s.get("with", {}).get("name") == "tvmperf-history")
    assert "--name tvmperf-history" in download["run"] and upload["if"] == "always()"
    assert upload["with"]["path"] == "history/perf-history.jsonl"


def test_a_manual_run_rerecords_the_baselines_into_a_pull_request():
    workflow = _workflow()
    assert workflow["jobs"]["rerecord"]["if"] == "github.event_name == 'workflow_dispatch'"
    assert workflow["jobs"]["perf"]["if"] == "github.event_name != 'workflow_dispatch'"
    scripts = "\n".join(s.get("run", "") for s in workflow["jobs"]["rerecord"]["steps"])
    assert "--tvmperf-update" in scripts
    assert 'git push origin "$BRANCH"' in scripts and "gh pr create" in scripts
