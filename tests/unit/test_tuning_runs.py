"""store/tuning_runs.py: each finished tuning run kept with the database's records, read
back as written; lines the plugin does not write (the file comes from the repository)
are skipped, a link is not followed, the write is atomic."""

from __future__ import annotations

import json
import os

from pytest_tvmperf.store.tuning_runs import RUNS_FILE, TuningRun, append_run, read_runs

RUN = TuningRun("resnet18", "llvm -mcpu=znver4", 116.2, 120.0, 96, 19, 96, "0.27.0", "2026-11-27T01:00:00+00:00")


def test_runs_are_appended_and_read_back(tmp_path):
    append_run(tmp_path, RUN)
    second = TuningRun("mlp", "llvm", 3.5, None, 8, 2, 8, "0.27.0", "2026-11-27T01:05:00+00:00")
    append_run(tmp_path, second)
    assert read_runs(tmp_path) == [RUN, second]
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
    assert read_runs(tmp_path) == [RUN]


def test_a_link_is_not_followed_and_is_replaced_by_a_file(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps(dict(RUN.__dict__)) + "\n")
    db = tmp_path / "db"
    db.mkdir()
    os.symlink(outside, db / RUNS_FILE)
    assert read_runs(db) == []
    append_run(db, RUN)
    assert not (db / RUNS_FILE).is_symlink() and read_runs(db) == [RUN]
    assert outside.read_text() == json.dumps(dict(RUN.__dict__)) + "\n"  # untouched
