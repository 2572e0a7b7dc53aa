"""A tuning database's traces are checked against an allowlist before MetaSchedule replays
them (store/trace_check.py, issue 33 cases 5 and 18)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_tvmperf.builder.tuning_db import RECORD_FILE, WORKLOAD_FILE, TuningError, _check_files
from pytest_tvmperf.store import bounded_json, trace_check

ROOT = Path(__file__).resolve().parents[2]
DB = ROOT / "baselines" / "tuning"


def _lines(name):
    return [line for line in (DB / name).read_text().splitlines() if line.strip()]


def test_every_record_and_workload_the_bundled_suite_commits_passes():
    for name in (WORKLOAD_FILE, RECORD_FILE):
        lines = _lines(name)
        assert lines
        for number, line in enumerate(lines, start=1):
            assert trace_check.line_problem(name, trace_check.parse_line(line)) is None, (name, number)


def test_the_committed_kinds_and_keys_are_the_derived_lists():
    kinds, keys = set(), set()
    for line in _lines(RECORD_FILE):
        for kind, _inputs, attrs, _outputs in json.loads(line)[1][0][0]:
            kinds.add(kind)
            if kind in ("Annotate", "Unannotate"):
                keys.add(attrs[0])
    assert kinds == trace_check.COMMITTED_KINDS
    assert keys == trace_check.COMMITTED_ANNOTATIONS
    assert "pragma_import_llvm" not in trace_check.ALLOWED_ANNOTATIONS


def _record_with(instruction) -> list:
    row = json.loads(_lines(RECORD_FILE)[0])
    row[1][0][0].append(instruction)
    return row


def test_an_annotation_carrying_llvm_ir_is_refused_naming_it():
    row = _record_with(
        ["Annotate", ["b0", json.dumps("define float @expf(float) { ret float 0.0 }")], ["pragma_import_llvm"], []]
    )
    problem = trace_check.record_problem(row)
    assert problem is not None and "sets the annotation 'pragma_import_llvm'" in problem


def test_an_instruction_kind_tuning_never_writes_is_refused():
    problem = trace_check.record_problem(_record_with(["TransformLayout", ["b0"], [0, 0, "lambda i: i"], []]))
    assert problem is not None and "'TransformLayout', a kind the plugin's tuning never writes" in problem


def test_a_workload_module_is_checked_like_a_stored_ir():
    import base64
    import struct

    row = json.loads(_lines(WORKLOAD_FILE)[0])
    raw = base64.b64decode(row[1])
    graph = json.loads(raw[8:])
    graph["nodes"][graph["root_index"]]["data"]["evil"] = 0
    text = json.dumps(graph).encode()
    row[1] = base64.b64encode(struct.pack("<Q", len(text)) + text).decode()
    problem = trace_check.workload_problem(row)
    assert problem is not None and "field 'evil'" in problem


def test_a_deeply_nested_line_is_an_error_naming_the_file_and_line(tmp_path):
    db = tmp_path / "tuning"
    shutil.copytree(DB, db)
    lines = _lines(RECORD_FILE)
    lines.insert(2, "[0, " + "[" * 100_000 + "]" * 100_000 + "]")
    (db / RECORD_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(bounded_json.TooDeep):
        trace_check.parse_line(lines[2])
    with pytest.raises(
        TuningError,
        match=rf"tuning database file {db / RECORD_FILE}, line 3: .*nested more than 32 "
        "levels deep",
    ):
        _check_files(db)


def test_the_database_check_refuses_the_planted_record_naming_file_and_line(tmp_path):
    db = tmp_path / "tuning"
    shutil.copytree(DB, db)
    lines = _lines(RECORD_FILE)
    lines[4] = json.dumps(_record_with(["Annotate", ["b0", '"x"'], ["pragma_import_llvm"], []]))
    (db / RECORD_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(TuningError, match=rf"{RECORD_FILE}, line 5: refused: .*'pragma_import_llvm'"):
        _check_files(db)
    _check_files(DB)  # the committed one passes
