"""Every string a baseline or results file holds reaches the terminal, the annotations and
the step summary escaped: a value holding a newline and ``::error`` is fed through each
string field, and no line of the run's output starts with ``::`` but the plugin's own
annotations."""

from __future__ import annotations

import json
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

HOSTILE = "x\n::error title=fake::injected"


def string_paths(value, path=(), keys=False):
    """The path of every string value (and with ``keys``, of every object key) in a JSON value."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys:
                yield ("key", *path, key)
            yield from string_paths(item, (*path, key), keys)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_paths(item, (*path, i), keys)


def with_hostile(data, path):
    """``data`` with the string at ``path`` (or the key, for a ``("key", ...)`` path) made hostile."""
    data = json.loads(json.dumps(data))
    if path[0] == "key":
        *parents, key = path[1:]
        node = data
        for p in parents:
            node = node[p]
        node[key + HOSTILE] = node.pop(key)
        return data
    node = data
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = node[path[-1]] + HOSTILE
    return data


def foreign_commands(text: str) -> list[str]:
    """Lines GitHub Actions would read as a workflow command that the plugin did not write
    (its own annotations are ``::error file=...,title=tvmperf ...::``, one line each)."""
    return [
        line
        for line in text.splitlines()
        if line.lstrip().startswith("::") and not (line.startswith("::error file=") and ",title=tvmperf " in line)
    ]


@pytest.fixture
def recorded(project, tmp_path):
    project.pytester.makepyfile(test_perf=PRIM_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("GITHUB_ACTIONS", "true")
    project.set_env("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    return project


def _entry_paths(baseline: dict) -> list[tuple]:
    ((test_id, entry),) = baseline["tests"].items()
    return [
        ("tests", test_id, *p) if p[0] != "key" else ("key", "tests", test_id, *p[1:]) for p in string_paths(entry)
    ] + [("key", "tests", test_id)]


def test_no_string_field_of_a_baseline_prints_a_workflow_command(recorded):
    """Each string field of the baseline entry in turn (one run each, under GitHub Actions,
    slowed down so the failure message and the annotation show the entry's fields)."""
    baseline = recorded.baselines()
    recorded.set_env("TVMPERF_FAKE_SCALE", "3")
    leaks = {}
    for path in _entry_paths(baseline):
        recorded.baseline_file().write_text(json.dumps(with_hostile(baseline, path)))
        result = recorded.run("-rA")
        found = foreign_commands(result.stdout.str() + "\n" + result.stderr.str())
        if found:
            leaks[".".join(map(str, path))] = found
    assert leaks == {}


def test_another_machines_cpu_model_prints_no_workflow_command(recorded):
    """Under --tvmperf-other-machine=normalized the message names the baseline machine's CPU model."""
    baseline = recorded.baselines()
    ((test_id, entry),) = baseline["tests"].items()
    from pytest_tvmperf.values.machine import Machine

    (timing,) = entry["timings"].values()
    timing["machine"]["cpu_model"] = "Other CPU" + HOSTILE  # another machine's timing
    entry["timings"] = {Machine.from_json(timing["machine"]).fingerprint: timing}
    del entry["ir"]  # no program to time side by side: the stored numbers, normalized
    recorded.baseline_file().write_text(json.dumps(baseline))
    recorded.set_env("TVMPERF_FAKE_SCALE", "3")
    result = recorded.run("-rA", "-v", "--tvmperf-other-machine=normalized")
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert "baseline from another CPU model (Other CPUx\\n" in text
    assert foreign_commands(text) == []


def test_the_tvm_version_of_a_baseline_prints_no_workflow_command(recorded):
    baseline = recorded.baselines()
    ((test_id, entry),) = baseline["tests"].items()
    entry["tvm_version"] = "0.1" + HOSTILE
    recorded.baseline_file().write_text(json.dumps(baseline))
    recorded.set_env("TVMPERF_FAKE_SCALE", "3")
    result = recorded.run("-rA")
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert "TVM was 0.1x\\n::error" in text
    assert foreign_commands(text) == []


def _results_file(recorded, tmp_path: Path) -> tuple[Path, dict]:
    out = tmp_path / "results.json"
    recorded.run(f"--tvmperf-json={out}")
    return out, json.loads(out.read_text())


@pytest.mark.parametrize("command", ["show", "diff"])
def test_no_string_field_of_a_results_file_prints_a_workflow_command(recorded, tmp_path, capsys, command):
    """``tvmperf show`` and ``tvmperf diff`` (also their error messages) on a results file
    with each string field made hostile in turn."""
    from pytest_tvmperf.command.cli import main

    good, data = _results_file(recorded, tmp_path)
    leaks = {}
    for path in string_paths(data, keys=True):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(with_hostile(data, path)))
        main(["show", str(bad)] if command == "show" else ["diff", str(good), str(bad)])
        out = capsys.readouterr()
        found = foreign_commands(out.out + "\n" + out.err)
        if found:
            leaks[".".join(map(str, path))] = found
    assert leaks == {}


def test_a_node_id_twice_in_a_results_file_is_named_escaped(recorded, tmp_path, capsys):
    from pytest_tvmperf.command.cli import main

    good, data = _results_file(recorded, tmp_path)
    tests = data["tests"]
    tests[0]["nodeid"] = tests[0]["nodeid"] + HOSTILE
    tests.append(json.loads(json.dumps(tests[0])))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    for argv in (["show", str(bad)], ["diff", str(good), str(bad)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "appears twice" in err and "x\\n::error" in err
        assert foreign_commands(err) == []
