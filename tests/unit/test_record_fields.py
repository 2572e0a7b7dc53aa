"""The record is described once (issue 34): values/record.py's RECORD_FIELDS drives its
reader, its writer and store/schema.py's check."""

from __future__ import annotations

import dataclasses

from pytest_tvmperf.store import schema
from pytest_tvmperf.values.record import RECORD_FIELDS, FieldCheck, Record


def test_the_table_has_every_field_of_the_record_once():
    keys = [f.key for f in RECORD_FIELDS]
    assert len(keys) == len(set(keys))
    assert {f.key for f in RECORD_FIELDS} == {f.name for f in dataclasses.fields(Record)}


def test_every_kind_of_field_has_its_check():
    assert set(schema._CHECKS) == set(FieldCheck)
