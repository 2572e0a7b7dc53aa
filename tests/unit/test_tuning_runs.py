"""store/tuning_runs.py: each finished tuning run kept with the database's records, read
back as written; lines the plugin does not write (the file comes from the repository)
are skipped and kept, a link is not followed, a run is appended whole and never rewrites the others."""

from __future__ import annotations

import json
import os

from pytest_tvmperf.store.tuning_runs import RUNS_FILE, TuningRun, append_run, read_runs

RUN = TuningRun("resnet18", "llvm -mcpu=znver4", 116.2, 120.0, 96, 19, 96, "0.27.0", "2026-11-27T01:00:00+00:00")


def test_runs_are_appended_and_read_back(tmp_path):
    append_run(tmp_path, RUN)
    second = TuningRun("mlp", "llvm", 3.5, None, 8, 2, 8, "0.27.0", "2026-11-27T01:05:00+00:00")
    append_run(tmp_path, second)
    assert read_runs(tmp_path) == ([RUN, second], 0)
    assert [json.loads(line)["trials"] for line in (tmp_path / RUNS_FILE).read_text().splitlines()] == [96, 8]


def test_lines_the_plugin_does_not_write_are_skipped(tmp_path):
    good = json.dumps(dict(RUN.__dict__))
    lines = [
        "not json",
        json.dumps({**RUN.__dict__, "extra": 1}),  # an unknown field
        json.dumps({**RUN.__dict__, "trials": "96"}),  # a wrong type
        json.dumps({**RUN.__dict__, "used_s": True}),
        json.dumps({**RUN.__dict__, "workload": "x" * 600}),
        "[" * 5000,
        good,
    ]
    (tmp_path / RUNS_FILE).write_text("\n".join(lines) + "\n")
    assert read_runs(tmp_path) == ([RUN], 6)


def test_a_run_appends_its_line_and_keeps_every_line_before_it_as_it_was(tmp_path):
    """issue 66: the file was rewritten from the lines the reader could parse, so a line with an extra
    field went with the next run, and one byte that is no UTF-8 took every earlier run with it."""
    before = (
        json.dumps(dict(RUN.__dict__)).encode()
        + b"\n"
        + json.dumps({**RUN.__dict__, "extra": 1}).encode()
        + b"\n"
        + b'{"workload": "caf\xe9"}\n'
        + json.dumps(dict(RUN.__dict__)).encode()  # its line end lost (a write cut short)
    )
    (tmp_path / RUNS_FILE).write_bytes(before)
    second = TuningRun("mlp", "llvm", 3.5, None, 8, 2, 8, "0.27.0", "2026-11-27T01:05:00+00:00")
    append_run(tmp_path, second)
    after = (tmp_path / RUNS_FILE).read_bytes()
    assert (
        after.startswith(before)
        and after == before + b"\n" + json.dumps(dict(second.__dict__), sort_keys=True).encode() + b"\n"
    )
    assert read_runs(tmp_path) == ([RUN, RUN, second], 2)


def test_two_tuning_runs_appending_at_once_both_land(tmp_path, monkeypatch):
    """A deterministic overlap: a second run appends while the first is between making its line and
    writing it (read, add, replace lost the second's line)."""
    from pytest_tvmperf.store import tuning_runs

    second = TuningRun("mlp", "llvm", 3.5, None, 8, 2, 8, "0.27.0", "2026-11-27T01:05:00+00:00")
    append_run(tmp_path, RUN)
    real, overlapped = tuning_runs.json.dumps, []

    def dumps(*args, **kwargs):
        if not overlapped:
            overlapped.append(True)
            append_run(tmp_path, second)
        return real(*args, **kwargs)

    monkeypatch.setattr(tuning_runs.json, "dumps", dumps)
    append_run(tmp_path, RUN)
    runs, skipped = read_runs(tmp_path)
    assert sorted(r.workload for r in runs) == ["mlp", "resnet18", "resnet18"] and skipped == 0


def test_a_link_is_not_followed_and_is_replaced_by_a_file(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps(dict(RUN.__dict__)) + "\n")
    db = tmp_path / "db"
    db.mkdir()
    os.symlink(outside, db / RUNS_FILE)
    assert read_runs(db) == ([], 0)
    append_run(db, RUN)
    assert not (db / RUNS_FILE).is_symlink() and read_runs(db) == ([RUN], 0)
    assert outside.read_text() == json.dumps(dict(RUN.__dict__)) + "\n"  # untouched
