"""Baseline files (parse, load, dump, atomic write, merge) and the Record JSON they hold."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from _factories import exact, machine, record, timing
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.store import files as store
from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.builder.timer import TimingTask, TvmTimer
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record, Timing
from pytest_tvmperf.store.files import (
    SCHEMA_VERSION,
    BaselineError,
    atomic_write,
    baseline_path,
    dump_baselines,
    load_baselines,
    merge_updates,
    parse_baselines,
    save_updates,
)

PATH = Path("baselines/tests/test_x.json")


def _file(tests) -> str:
    return json.dumps({"schema_version": SCHEMA_VERSION, "tests": tests})


def _valid_entry() -> dict:
    return record().as_json()


# --------------------------------------------------------------------------- Machine / Timing / Record


def test_machine_fingerprint_is_stable_and_sensitive():
    a = machine()
    assert a.fingerprint == machine().fingerprint
    assert len(a.fingerprint) == 12
    assert int(a.fingerprint, 16) >= 0
    assert machine(cpu="y").fingerprint != a.fingerprint
    assert machine(cores=4).fingerprint != a.fingerprint
    assert Machine.from_json(a.as_json()) == a


def test_machine_describe():
    assert machine().describe() == "x, 2 cores, 1 TVM threads, TVM 0.27, LLVM 22"


def test_time_samples_validation():
    assert TimeSamples((3.0, 1.0, 2.0)).median == 2.0
    assert TimeSamples((1.0, 2.0)).median == 1.5
    for bad in [(), (0.0,), (-1.0,), (float("inf"),), (float("nan"),)]:
        with pytest.raises(ValueError):
            TimeSamples(bad)


@pytest.mark.parametrize("side", ["reference", "baseline"])
def test_time_samples_validates_paired_sides(side):
    def make(values):
        return TimeSamples((1.0, 2.0), **{side: values})

    assert getattr(make((1.0, 1.0)), side) == (1.0, 1.0)
    with pytest.raises(ValueError, match=f"^{side} samples must pair one to one with the time samples$"):
        make((1.0,))
    for bad in [(1.0, 0.0), (1.0, -2.0), (float("inf"), 1.0), (float("nan"), 1.0)]:
        with pytest.raises(ValueError, match=f"^{side} samples must be positive and finite"):
            make(bad)


def test_time_samples_normalized_and_ab_ratios_are_per_round():
    samples = TimeSamples((2.0, 3.0, 4.0), reference=(1.0, 2.0, 4.0), reference_name="ref", baseline=(4.0, 3.0, 1.0))
    assert samples.normalized == (2.0, 1.5, 1.0)
    assert samples.ab_ratios == (0.5, 1.0, 4.0)
    assert samples.median == 3.0  # of the workload's own samples
    plain = TimeSamples((2.0, 3.0))
    assert (plain.normalized, plain.ab_ratios, plain.reference_name) == (None, None, None)


def test_time_samples_add_pools_every_side():
    a = TimeSamples((1.0, 2.0), (1.0, 1.0), "ref", (2.0, 2.0))
    b = TimeSamples((3.0,), (3.0,), "ref", (1.0,))
    assert a + b == TimeSamples((1.0, 2.0, 3.0), (1.0, 1.0, 3.0), "ref", (2.0, 2.0, 1.0))
    assert (a + b).normalized == (1.0, 2.0, 1.0)
    assert (a + b).ab_ratios == (0.5, 1.0, 3.0)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # another reference kernel: the pooled samples keep no reference
        (TimeSamples((1.0,), (1.0,), "ref"), TimeSamples((2.0,), (2.0,), "other"), TimeSamples((1.0, 2.0))),
        # one side without a reference
        (TimeSamples((1.0,), (1.0,), "ref"), TimeSamples((2.0,)), TimeSamples((1.0, 2.0))),
        (TimeSamples((1.0,)), TimeSamples((2.0,), (2.0,), "ref"), TimeSamples((1.0, 2.0))),
        # one side without the baseline artifact's samples
        (TimeSamples((1.0,), baseline=(1.0,)), TimeSamples((2.0,)), TimeSamples((1.0, 2.0))),
        (
            TimeSamples((1.0,), (1.0,), "ref", (1.0,)),
            TimeSamples((2.0,), (4.0,), "ref"),
            TimeSamples((1.0, 2.0), (1.0, 4.0), "ref"),
        ),
    ],
)
def test_time_samples_add_drops_what_does_not_pair(a, b, expected):
    assert a + b == expected


@settings(max_examples=30)
@given(
    rows=st.lists(st.tuples(st.floats(1e-6, 1.0), st.floats(1e-6, 1.0), st.floats(1e-6, 1.0)), min_size=2, max_size=10),
    data=st.data(),
)
def test_time_samples_add_keeps_rounds_paired(rows, data):
    def part(chunk):
        return TimeSamples(tuple(r[0] for r in chunk), tuple(r[1] for r in chunk), "ref", tuple(r[2] for r in chunk))

    cut = data.draw(st.integers(1, len(rows) - 1))
    pooled = part(rows[:cut]) + part(rows[cut:])
    assert pooled == part(rows)
    assert pooled.normalized == tuple(w / r for w, r, _ in rows)
    assert pooled.ab_ratios == tuple(w / b for w, _, b in rows)


class _Kernel:
    """A fake sample function: logs its calls and returns a fixed value (no clock)."""

    def __init__(self, name: str, value: float, log: list[str]) -> None:
        self.name, self.value, self.log = name, value, log

    def __call__(self) -> float:
        self.log.append(self.name)
        return self.value


def test_tvm_timer_rotates_the_order_and_drops_the_warm_up():
    log: list[str] = []
    task = TimingTask(_Kernel("w", 2.0, log), _Kernel("r", 1.0, log), "ref", _Kernel("b", 4.0, log))
    samples = TvmTimer(times=lambda: None)(task, 7)
    assert samples == TimeSamples((2.0,) * 7, (1.0,) * 7, "ref", (4.0,) * 7)
    warm_up, rounds = log[:3], [log[3 + 3 * i : 6 + 3 * i] for i in range(7)]
    assert warm_up == ["w", "r", "b"]
    assert rounds == [
        ["w", "b", "r"],
        ["r", "b", "w"],  # the a/b pair back to back, its order alternating,
        ["r", "w", "b"],
        ["b", "w", "r"],  # the reference rotating around it, then reversed
        ["w", "b", "r"],
        ["r", "b", "w"],
        ["r", "w", "b"],
    ]
    assert all(abs(r.index("w") - r.index("b")) == 1 for r in rounds)


def test_tvm_timer_workload_only():
    log: list[str] = []
    samples = TvmTimer(times=lambda: None)(TimingTask(_Kernel("w", 3.0, log), reference_name="ignored"), 4)
    assert samples == TimeSamples((3.0,) * 4)
    assert samples.reference_name is None
    assert log == ["w"] * 5


def test_tvm_timer_with_reference_only():
    log: list[str] = []
    samples = TvmTimer(times=lambda: None)(TimingTask(_Kernel("w", 3.0, log), _Kernel("r", 1.5, log), "ref"), 4)
    assert samples == TimeSamples((3.0,) * 4, (1.5,) * 4, "ref")
    assert log == ["w", "r", "w", "r", "r", "w", "r", "w", "w", "r"]


def test_timing_as_json_with_reference_and_artifact():
    t = timing(
        (1.23456789e-3, 2e-3),
        reference=(1e-3, 1.0000004e-3),
        reference_name="mm/v1",
        ab=(1e-3, 1e-3),
        artifact="artifacts/x.so",
        artifact_sha256="ab" * 32,
    )
    data = t.as_json()
    assert data["reference"] == {"name": "mm/v1", "samples_s": [1e-3, 1e-3]}
    assert data["artifact"] == {"path": "artifacts/x.so", "sha256": "ab" * 32}
    assert "baseline" not in json.dumps(data)  # the a/b samples belong to one run, not the baseline
    back = Timing.from_json(json.loads(json.dumps(data)))
    assert back.samples == TimeSamples((1.23457e-3, 2e-3), (1e-3, 1e-3), "mm/v1")
    assert (back.artifact, back.artifact_sha256) == ("artifacts/x.so", "ab" * 32)


def test_timing_json_without_reference_or_artifact_has_neither_key():
    data = timing((1e-3,)).as_json()
    assert "reference" not in data and "artifact" not in data
    back = Timing.from_json(data)
    assert (back.samples.reference, back.samples.reference_name, back.artifact, back.artifact_sha256) == (
        None,
        None,
        None,
        None,
    )


def test_record_with_reference_round_trips():
    rec = record((1e-3, 2e-3), reference=(2e-3, 2e-3), reference_name="mm/v1")
    assert Record.from_json(json.loads(json.dumps(rec.as_json()))) == rec


def test_timing_reference_without_name_round_trips():
    t = Timing(machine(), TimeSamples((1e-3,), (2e-3,), None))
    assert Timing.from_json(json.loads(json.dumps(t.as_json()))).samples.reference_name is None


def test_timing_as_json_rounds_to_6_significant_digits():
    data = Timing(machine(), TimeSamples((1.23456789e-3, 2.0e-3, 3.0e-3))).as_json()
    assert data["samples_s"] == [1.23457e-3, 2.0e-3, 3.0e-3]
    assert data["median_s"] == 2.0e-3
    assert data["machine"] == machine().as_json()
    assert data["stats"]["rounds"] == 3
    assert data["stats"]["min"] == 1.23457e-3
    json.dumps(data)  # serialisable


def test_record_json_round_trip():
    rec = record((1e-3, 2e-3), compile_s=1.25)
    data = json.loads(json.dumps(rec.as_json()))
    assert Record.from_json(data) == rec
    assert data["compile_s"] == 1.25
    assert list(data["timings"]) == [machine().fingerprint]


def test_record_from_json_defaults():
    data = _valid_entry()
    del data["timings"], data["compile_s"]
    rec = Record.from_json(data)
    assert rec.timings == {}
    assert rec.timing is None
    assert rec.compile_s is None


def test_record_timing_is_first():
    rec = record((4e-3,))
    assert rec.timing.samples.samples == (4e-3,)


def _with_timings(*machines_and_samples, metrics=None, workload="mlp") -> Record:
    base = record(None, metrics=metrics, workload=workload)
    timings = {m.fingerprint: Timing(m, TimeSamples(s)) for m, s in machines_and_samples}
    return Record(base.workload, base.executor, base.target, base.tvm_version, base.exact, timings, base.compile_s)


def test_merged_over_keeps_other_machines_timings():
    a, b = machine("a"), machine("b")
    old = _with_timings((a, (1.0,)), (b, (2.0,)))
    new = _with_timings((a, (5.0,)))
    merged = new.merged_over(old)
    assert set(merged.timings) == {a.fingerprint, b.fingerprint}
    assert merged.timings[a.fingerprint].samples.samples == (5.0,)
    assert merged.timings[b.fingerprint].samples.samples == (2.0,)
    assert merged.exact == new.exact


def test_merged_over_drops_timings_when_exact_metrics_change():
    a, b = machine("a"), machine("b")
    old = _with_timings((b, (2.0,)), metrics=exact(instructions=10))
    new = _with_timings((a, (5.0,)), metrics=exact(instructions=11))
    assert new.merged_over(old) is new


def test_merged_over_drops_timings_when_workload_changes():
    old = _with_timings((machine("b"), (2.0,)), workload="old")
    new = _with_timings((machine("a"), (5.0,)), workload="new")
    assert new.merged_over(old) is new
    assert new.merged_over(None) is new


# --------------------------------------------------------------------------- baseline_path


def test_baseline_path_inside_root(tmp_path):
    module = tmp_path / "tests" / "perf" / "test_models.py"
    assert baseline_path(tmp_path / "baselines", tmp_path, module) == tmp_path / "baselines/tests/perf/test_models.json"


def test_modules_outside_root_of_the_same_name_get_their_own_file(tmp_path):
    from pytest_tvmperf.store.files import module_of

    root = tmp_path / "project"
    a, b = tmp_path / "a" / "test_x.py", tmp_path / "b" / "test_x.py"
    path_a, path_b = (baseline_path(root / "baselines", root, m) for m in (a, b))
    assert path_a != path_b
    assert path_a == root / "baselines" / "_outside_rootdir" / a.relative_to(a.anchor).with_suffix(".json")
    assert module_of(path_a, root / "baselines", root) == a
    inside = root / "tests" / "test_y.py"
    assert module_of(baseline_path(root / "baselines", root, inside), root / "baselines", root) == inside


# --------------------------------------------------------------------------- parse_baselines


def test_parse_baselines_valid():
    records = parse_baselines(_file({"test_a[vm-bytecode-llvm]": _valid_entry()}), PATH)
    assert records == {"test_a[vm-bytecode-llvm]": record()}


def test_parse_baselines_empty_tests():
    assert parse_baselines(_file({}), PATH) == {}


def test_parse_baselines_bad_json():
    with pytest.raises(BaselineError) as info:
        parse_baselines('{"schema_version": 1,\n  "tests": {', PATH)
    message = str(info.value)
    assert f"baseline file {PATH} is not valid JSON" in message
    assert "line 2" in message
    assert "--tvmperf-update" in message
    assert f"delete {PATH}" in message


@pytest.mark.parametrize(
    "data",
    [
        [],
        "text",
        {"tests": {}},
        {"schema_version": 1},
        {"schema_version": 1, "tests": []},
        {"schema_version": 1, "tests": None},
    ],
)
def test_parse_baselines_not_a_baseline(data):
    with pytest.raises(BaselineError, match="is not a pytest-tvmperf baseline") as info:
        parse_baselines(json.dumps(data), PATH)
    assert str(PATH) in str(info.value)


@pytest.mark.parametrize("version", [0, 2, "1", None, True, 1.0])
def test_parse_baselines_other_schema_version(version):
    with pytest.raises(BaselineError) as info:
        parse_baselines(json.dumps({"schema_version": version, "tests": {}}), PATH)
    message = str(info.value)
    assert f"has schema version {json.dumps(version)}" in message
    assert f"reads version {SCHEMA_VERSION}" in message
    assert "--tvmperf-update" in message


def _malformed(kind: str) -> object:
    entry = _valid_entry()
    fp = next(iter(entry["timings"]))
    if kind == "missing key":
        del entry["workload"]
    elif kind == "not an object":
        return "oops"
    elif kind == "null":
        return None
    elif kind == "exact null":
        entry["exact"] = None
    elif kind == "no samples":
        entry["timings"][fp]["samples_s"] = []
    elif kind == "negative sample":
        entry["timings"][fp]["samples_s"] = [-1.0]
    elif kind == "sample text":
        entry["timings"][fp]["samples_s"] = ["fast"]
    elif kind == "machine field missing":
        del entry["timings"][fp]["machine"]["cpu_model"]
    elif kind == "timings null":
        entry["timings"] = None
    elif kind == "target number":
        entry["target"] = 5
    elif kind == "reference unpaired":
        entry["timings"][fp]["reference"] = {"name": "mm/v1", "samples_s": [1e-3]}
    elif kind == "reference negative":
        n = len(entry["timings"][fp]["samples_s"])
        entry["timings"][fp]["reference"] = {"name": "mm/v1", "samples_s": [-1e-3] * n}
    elif kind == "reference without samples":
        entry["timings"][fp]["reference"] = {"name": "mm/v1"}
    elif kind == "artifact not an object":
        entry["timings"][fp]["artifact"] = "x.so"
    return entry


@pytest.mark.parametrize(
    "kind",
    [
        "missing key",
        "not an object",
        "null",
        "exact null",
        "no samples",
        "negative sample",
        "sample text",
        "machine field missing",
        "timings null",
        "target number",
        "reference unpaired",
        "reference negative",
        "reference without samples",
        "artifact not an object",
    ],
)
def test_parse_baselines_malformed_entry(kind):
    text = _file({"good": _valid_entry(), "bad[id]": _malformed(kind)})
    with pytest.raises(BaselineError) as info:
        parse_baselines(text, PATH)
    message = str(info.value)
    assert f"baseline file {PATH}: entry 'bad[id]' is malformed" in message
    assert "--tvmperf-update" in message


# --------------------------------------------------------------------------- load_baselines


def test_load_baselines_missing_file_is_empty(tmp_path):
    assert load_baselines(tmp_path / "nope" / "test_x.json") == {}


def test_load_baselines_reads_file(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(dump_baselines({"t": record()}), encoding="utf-8")
    assert load_baselines(path) == {"t": record()}


def test_load_baselines_unreadable(tmp_path):
    with pytest.raises(BaselineError, match="cannot be read"):
        load_baselines(tmp_path)  # a directory


def test_load_baselines_not_utf8(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BaselineError, match="cannot be read") as info:
        load_baselines(path)
    assert str(path) in str(info.value)


def test_load_baselines_corrupt_names_file(tmp_path):
    path = tmp_path / "b.json"
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(BaselineError, match="is not valid JSON") as info:
        load_baselines(path)
    assert str(path) in str(info.value)


# --------------------------------------------------------------------------- dump_baselines


def test_dump_baselines_sorted_and_stable():
    records = {"test_b": record(), "test_a": record(workload="other"), "test_c[x]": record(None)}
    text = dump_baselines(records)
    assert text.endswith("}\n")
    data = json.loads(text)
    assert data["schema_version"] == SCHEMA_VERSION
    assert list(data["tests"]) == ["test_a", "test_b", "test_c[x]"]
    assert text.index('"test_a"') < text.index('"test_b"') < text.index('"test_c[x]"')
    # two-space JSON, each list of numbers and each stats map on one line (a re-record's diff: a line a measurement)
    assert '"samples_s": [0.001, 0.0011, 0.0009],' in text and '"stats": {"iqr": ' in text
    assert all(not line.strip().startswith(("0.", "1e")) for line in text.splitlines())
    # insertion order does not matter and a re-dump is byte-identical
    assert dump_baselines(dict(reversed(list(records.items())))) == text
    assert dump_baselines(parse_baselines(text, PATH)) == text


def test_dump_baselines_empty():
    assert json.loads(dump_baselines({})) == {"schema_version": SCHEMA_VERSION, "tests": {}}


six_digit = st.floats(min_value=1e-9, max_value=100.0).map(lambda x: float(f"{x:.6g}"))
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_[]-.0123456789", min_size=1, max_size=12)
counts_map = st.dictionaries(names, st.integers(min_value=0, max_value=10**9), max_size=4)


def _metric(executor: str, key: str, values):
    """A metric as ``executor`` records it: always a value, never one (null), or either."""
    from pytest_tvmperf.store.schema import ALWAYS_MEASURED, NEVER_MEASURED

    if key in ALWAYS_MEASURED[executor]:
        return values
    if key in NEVER_MEASURED.get(executor, ((), ""))[0]:
        return st.none()
    return st.none() | values


def exact_metrics(executor: str):
    return st.builds(
        ExactMetrics,
        instructions=_metric(executor, "instructions", counts_map),
        by_callee=_metric(executor, "by_callee", counts_map),
        calls=_metric(executor, "calls", counts_map),
        kernels=_metric(executor, "kernels", st.integers(min_value=0, max_value=1000)),
        storage_bytes=_metric(executor, "storage_bytes", st.integers(min_value=0, max_value=2**40)),
    )


machines = st.builds(
    Machine,
    cpu_model=st.text(max_size=20),
    logical_cores=st.integers(min_value=1, max_value=256),
    tvm_threads=st.integers(min_value=1, max_value=256),
    tvm_version=st.sampled_from(["0.27", "0.27.dev1"]),
    llvm_version=st.sampled_from(["22", "none"]),
    target=st.sampled_from(["{}", '{"kind": "llvm"}']),
)
timings = st.lists(st.tuples(machines, st.lists(six_digit, min_size=1, max_size=6)), max_size=3).map(
    lambda items: {m.fingerprint: Timing(m, TimeSamples(tuple(s))) for m, s in items}
)
records = st.sampled_from(["vm-bytecode", "vm-compiled", "prim", "vm-cudagraph"]).flatmap(
    lambda executor: st.builds(
        Record,
        workload=names,
        executor=st.just(executor),
        target=st.dictionaries(st.sampled_from(["kind", "mcpu", "arch"]), names, max_size=3),
        tvm_version=st.just("0.27"),
        exact=exact_metrics(executor),
        timings=timings,
        compile_s=st.none() | six_digit,
    )
)


@given(st.dictionaries(st.text(min_size=1, max_size=30).filter(lambda t: "[" not in t), records, max_size=4))
def test_dump_parse_round_trip(recs):
    text = dump_baselines(recs)
    assert parse_baselines(text, PATH) == recs
    assert dump_baselines(parse_baselines(text, PATH)) == text


# --------------------------------------------------------------------------- atomic_write


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_creates_parents_and_replaces(tmp_path):
    path = tmp_path / "a" / "b" / "x.json"
    atomic_write(path, "one\n")
    assert path.read_text(encoding="utf-8") == "one\n"
    atomic_write(path, "two ✓\n")
    assert path.read_text(encoding="utf-8") == "two ✓\n"
    assert _leftovers(path.parent) == []


def test_atomic_write_failure_keeps_old_file_and_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    path.write_text("old", encoding="utf-8")

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(store.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert _leftovers(tmp_path) == []


def test_atomic_write_interrupted_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    path.write_text("old", encoding="utf-8")

    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(store.os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert _leftovers(tmp_path) == []


# --------------------------------------------------------------------------- save_updates


def test_save_updates_creates_file(tmp_path):
    path = tmp_path / "baselines" / "tests" / "test_x.json"
    save_updates(path, {"test_a": record()})
    assert load_baselines(path) == {"test_a": record()}
    assert path.read_text(encoding="utf-8") == dump_baselines({"test_a": record()})


def test_save_updates_keeps_other_entries_and_replaces_updated(tmp_path):
    path = tmp_path / "test_x.json"
    keep = record(workload="keep")
    save_updates(path, {"test_a": record((1e-3,)), "test_b": keep})
    save_updates(path, {"test_a": record((2e-3,), metrics=exact(instructions=20)), "test_c": record(None)})
    loaded = load_baselines(path)
    assert set(loaded) == {"test_a", "test_b", "test_c"}
    assert loaded["test_b"] == keep
    assert loaded["test_a"].exact.scalar("instructions") == 20
    assert loaded["test_a"].timing.samples.samples == (2e-3,)
    assert list(json.loads(path.read_text())["tests"]) == ["test_a", "test_b", "test_c"]


def test_save_updates_merges_timings_of_other_machines(tmp_path):
    path = tmp_path / "test_x.json"
    a, b = machine("a"), machine("b")
    save_updates(path, {"t": record((1e-3,), mach=a)})
    save_updates(path, {"t": record((2e-3,), mach=b)})
    timings = load_baselines(path)["t"].timings
    assert set(timings) == {a.fingerprint, b.fingerprint}
    # a re-record on machine a of the same program keeps the entry as it was, byte for byte
    text = path.read_text()
    save_updates(path, {"t": record((3e-3,), mach=a)})
    assert path.read_text() == text
    # a change the gate judges (here the compile pipeline) rewrites it, with only a's new timing
    save_updates(path, {"t": dataclasses.replace(record((3e-3,), mach=a), pipeline="unfused")})
    timings = load_baselines(path)["t"].timings
    assert set(timings) == {a.fingerprint}
    assert timings[a.fingerprint].samples.samples == (3e-3,)
    save_updates(path, {"t": record((2e-3,), mach=b)})
    # changed exact metrics drop the other machines' timings
    save_updates(path, {"t": record((4e-3,), mach=a, metrics=exact(kernels=9))})
    assert set(load_baselines(path)["t"].timings) == {a.fingerprint}


def test_save_updates_refuses_corrupt_file(tmp_path):
    path = tmp_path / "test_x.json"
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(BaselineError):
        save_updates(path, {"t": record()})
    assert path.read_text(encoding="utf-8") == "{broken"


def test_save_updates_with_no_updates_normalises(tmp_path):
    path = tmp_path / "test_x.json"
    path.write_text(json.dumps({"tests": {"t": record().as_json()}, "schema_version": 1}), encoding="utf-8")
    save_updates(path, {})
    assert path.read_text(encoding="utf-8") == dump_baselines({"t": record()})
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert [p.name for p in tmp_path.iterdir()] == ["test_x.json"]  # no lock file among the baselines


def test_results_file_with_a_malformed_entry_is_named(tmp_path):
    from pytest_tvmperf.result.entry import ResultsError, load_results

    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "kind": "pytest-tvmperf-results",
                "created": "x",
                "tests": [{"nodeid": "t.py::a", "verdict": "pass", "record": {"workload": "w"}}],
            }
        )
    )
    with pytest.raises(
        ResultsError,
        match=r"results file .*r.json: test entry 0 \(t.py::a\) is malformed: record field executor: missing",
    ):
        load_results(path)


def test_tvm_timer_keeps_each_sides_own_wait_and_each_rounds_most_waited_share():
    """Each sample is probed; each side keeps its own threads' wait, and a round carries its
    most waited sample's share (here the baseline kernel's thread waits 1 s of each call)."""
    import threading

    log: list[str] = []
    me = threading.get_native_id()
    clock = {me: [0, 0], 99: [0, 0]}

    class Waits(_Kernel):
        def __call__(self) -> float:
            clock[me][1] += 10**9 if self.name == "b" else 0
            return super().__call__()

    def times():
        return {tid: (cpu, wait) for tid, (cpu, wait) in clock.items()}

    task = TimingTask(Waits("w", 2.0, log), None, None, Waits("b", 4.0, log))
    samples = TvmTimer(times=times, cpu_clock=lambda: 0.0)(task, 4)  # the caller never ran: all wait
    assert samples.preempted is not None and len(samples.preempted) == 4
    assert all(p == 1.0 for p in samples.preempted)  # 1 s waited in a sample of microseconds: all of it
    assert samples.wait("time") == (0.0,) * 4 and samples.wait("baseline") == (1.0,) * 4
    assert TvmTimer(times=lambda: None)(task, 4).preempted is None
    assert TvmTimer(times=lambda: None)(task, 4).waits == ()


def test_a_sides_own_wait_is_its_most_waited_active_thread_not_a_sleeping_pools():
    from pytest_tvmperf.builder.timer import waited

    before = {1: (0, 0), 2: (0, 0), 3: (0, 0)}
    # 1 s sample: thread 1 (the caller) ran 0.5 s and waited 0.5 s; thread 2 (a worker of the
    # same kernel) ran 0.3 s and waited 0.6 s; thread 3 (a peer's pool) waited 0.1 s only
    after = {1: (5 * 10**8, 5 * 10**8), 2: (3 * 10**8, 6 * 10**8), 3: (0, 10**8)}
    assert waited(before, after, 1.0, caller=1).own == pytest.approx(0.6)
    # a peer's pool thread, woken but never run while TVM's caller ran: not TVM's wait
    after = {1: (10**9, 0), 3: (10**6, 9 * 10**8)}
    assert waited(before, after, 1.0, caller=1).own == 0.0
    # a worker that ran 20% of the sample at a few busy jobs per core is one of its threads
    after = {1: (10**9, 0), 3: (2 * 10**8, 7 * 10**8)}
    assert waited(before, after, 1.0, caller=1).own == pytest.approx(0.7)
    # a wait credited in the sample but begun before it: no more than the sample less the time run
    after = {1: (4 * 10**8, 9 * 10**8)}
    assert waited(before, after, 1.0, caller=1).own == pytest.approx(0.6)
    assert waited(before, after, 1.0, caller=1, caller_cpu_s=0.3).own == pytest.approx(0.7)  # the exact CPU clock


# --------------------------------------------------------------------------- the entry schema


def _edited(edit) -> dict:
    entry = _valid_entry()
    edit(entry, next(iter(entry["timings"])))
    return entry


def _set_exact(entry, fp, **values):
    entry["exact"] = values


@pytest.mark.parametrize(
    "edit, field, problem",
    [
        (lambda e, fp: e.update(exact={}), "exact.instructions", "missing"),
        (lambda e, fp: e["exact"].pop("instructions"), "exact.instructions", "missing"),
        (
            lambda e, fp: e["exact"].update(instructions="17"),
            "exact.instructions",
            "expected an object, got the string '17'",
        ),
        (
            lambda e, fp: e["exact"].update(instructions={"main": "17"}),
            "exact.instructions.main",
            "expected a whole number >= 0, got the string '17'",
        ),
        (lambda e, fp: e["exact"].update(kernels=True), "exact.kernels", "expected a whole number >= 0, got a boolean"),
        (lambda e, fp: e["exact"].update(storage_bytes=1.5), "exact.storage_bytes", "got the number 1.5"),
        (lambda e, fp: e.update(workload=3), "workload", "expected a string, got the number 3"),
        (lambda e, fp: e.update(compile_s="1s"), "compile_s", "expected a number of seconds"),
        (lambda e, fp: e.update(bytecode={"main": "call x"}), "bytecode.main", "expected a list of strings"),
        (
            lambda e, fp: e["timings"][fp]["machine"].update(logical_cores="2"),
            "timings.{fp}.machine.logical_cores",
            "expected a whole number >= 0",
        ),
        (
            lambda e, fp: e["timings"][fp].update(artifact={"path": "../../etc/x.so", "sha256": "0" * 64}),
            "timings.{fp}.artifact.path",
            "a path inside the baseline directory",
        ),
        (
            lambda e, fp: e["timings"][fp].update(artifact={"path": "artifacts/x.so", "sha256": "abc"}),
            "timings.{fp}.artifact.sha256",
            "64 lowercase hex digits",
        ),
        (
            lambda e, fp: e["timings"].update({"0123456789ab": e["timings"].pop(fp)}),
            "timings.0123456789ab",
            "is not the fingerprint of the machine stored with it",
        ),
    ],
    ids=[
        "exact empty",
        "instructions missing",
        "instructions text",
        "count text",
        "kernels bool",
        "storage float",
        "workload number",
        "compile_s text",
        "bytecode text",
        "cores text",
        "artifact outside",
        "sha256 short",
        "fingerprint edited",
    ],
)
def test_every_field_of_an_entry_is_checked(edit, field, problem):
    entry = _edited(edit)
    fp = next(iter(entry["timings"]))
    with pytest.raises(BaselineError) as info:
        parse_baselines(_file({"test_a[llvm-prim]": entry}), PATH)
    message = str(info.value)
    assert f"baseline file {PATH}: entry 'test_a[llvm-prim]' is malformed: field {field.format(fp=fp)}: " in message
    assert problem in message
    assert "--tvmperf-update" in message


def _entry_of(executor: str, kind: str = "llvm") -> dict:
    """A valid entry as ``executor`` records it (its n/a metrics null)."""
    metrics = {
        "vm-bytecode": exact(),
        "vm-cudagraph": exact(calls=None),
        "vm-compiled": exact(instructions=None, calls=None),
        "prim": exact(instructions=None, calls=None, storage=None),
    }
    entry = dataclasses.replace(record(metrics=metrics[executor]), executor=executor).as_json()
    entry["target"] = {"kind": kind}
    return entry


@pytest.mark.parametrize(
    "executor, field",
    [
        ("vm-bytecode", "instructions"),
        ("vm-bytecode", "by_callee"),
        ("vm-bytecode", "kernels"),
        ("vm-bytecode", "storage_bytes"),
        ("vm-cudagraph", "instructions"),
        ("vm-compiled", "kernels"),
        ("vm-compiled", "storage_bytes"),
        ("prim", "kernels"),
    ],
)
def test_a_null_metric_that_the_executor_measures_is_a_schema_error(executor, field):
    kind = "cuda" if executor == "vm-cudagraph" else "llvm"
    test_id = f"test_a[{kind}-{executor}]"
    entry = _entry_of(executor, kind)
    parse_baselines(_file({test_id: entry}), PATH)  # valid as recorded
    entry["exact"][field] = None
    with pytest.raises(BaselineError) as info:
        parse_baselines(_file({test_id: entry}), PATH)
    message = str(info.value)
    assert (
        f"baseline file {PATH}: entry {test_id!r} is malformed: field exact.{field}: null, but {executor} always measures it"
        in message
    )
    assert "--tvmperf-update" in message


@pytest.mark.parametrize(
    "executor, field",
    [
        ("vm-compiled", "instructions"),
        ("vm-compiled", "by_callee"),
        ("vm-compiled", "calls"),
        ("prim", "instructions"),
        ("prim", "storage_bytes"),
    ],
)
def test_a_metric_the_executor_never_measures_must_be_null(executor, field):
    entry = _entry_of(executor)
    entry["exact"][field] = 5 if field == "storage_bytes" else {"main": 5}
    with pytest.raises(
        BaselineError,
        match=rf"entry 'test_a\[llvm-{executor}\]' is malformed: field exact\.{field}: "
        rf"expected null, as {executor} does not measure {field}",
    ):
        parse_baselines(_file({f"test_a[llvm-{executor}]": entry}), PATH)


def test_executed_calls_may_be_null_under_a_bytecode_vm():
    """Not counted where the program did not run on the host (built only, a remote device)."""
    entry = _entry_of("vm-bytecode", "cuda")
    entry["exact"]["calls"] = None
    assert (
        parse_baselines(_file({"test_a[cuda-vm-bytecode]": entry}), PATH)["test_a[cuda-vm-bytecode]"].exact.calls
        is None
    )


@pytest.mark.parametrize(
    "test_id, edit, field, says",
    [
        (
            "test_a[llvm-vm-bytecode]",
            lambda e: e.update(executor="vm-compiled"),
            "executor",
            "the test id says 'vm-bytecode', the entry says 'vm-compiled'; the test id's [llvm-vm-bytecode] part",
        ),
        (
            "test_a[llvm-vm-bytecode-bound]",
            lambda e: e.update(executor="prim"),
            "executor",
            "the test id says 'vm-bytecode', the entry says 'prim'",
        ),
        (
            "test_a[cuda-vm-bytecode]",
            lambda e: e.update(target={"kind": "llvm"}),
            "target.kind",
            "the test id says 'cuda', the entry says 'llvm'",
        ),
        (
            "test_a[llvm-vm-bytecode]",
            lambda e: e.update(target={}),
            "target.kind",
            "the test id says 'llvm', the entry says no kind",
        ),
        (
            "test_a[rpc:board-llvm-vm-bytecode]",
            lambda e: e.update(executor="vm-compiled"),
            "executor",
            "the test id says 'vm-bytecode'",
        ),
    ],
)
def test_an_entry_that_disagrees_with_its_test_id_is_a_schema_error(test_id, edit, field, says):
    entry = _entry_of("vm-bytecode")
    parse_baselines(_file({"test_a[llvm-vm-bytecode]": entry}), PATH)
    edit(entry)
    entry["exact"] = _entry_of(entry["executor"])["exact"]  # the metrics fit the new executor: only the id disagrees
    with pytest.raises(BaselineError) as info:
        parse_baselines(_file({test_id: entry}), PATH)
    message = str(info.value)
    assert f"baseline file {PATH}: entry {test_id!r} is malformed: field {field}: {says}" in message
    assert "set the field back to" in message and "--tvmperf-update" in message


@pytest.mark.parametrize(
    "test_id, combo",
    [
        ("test_a[llvm-prim]", ("llvm-prim", "llvm", "prim")),
        ("T::test_a[llvm-vm-bytecode-bound]", ("llvm-vm-bytecode", "llvm", "vm-bytecode")),
        ("test_a[bound-llvm-vm-compiled]", ("llvm-vm-compiled", "llvm", "vm-compiled")),
        ("test_a[rpc:my-board-llvm-prim]", ("rpc:my-board-llvm-prim", "llvm", "prim")),
        ("test_a[cuda-vm-cudagraph]", ("cuda-vm-cudagraph", "cuda", "vm-cudagraph")),
        ("test_a[llvm-vm-bytecode-prim]", ("llvm-vm-bytecode", "llvm", "vm-bytecode")),
        ("test_a[vm-bytecode-llvm]", None),
        ("test_a[llvm-primal]", None),
        ("test_a", None),
        ("llvm-prim", None),
    ],
)
def test_the_combination_part_of_a_test_id(test_id, combo):
    from pytest_tvmperf.store.schema import combo_of

    assert combo_of(test_id) == combo


@pytest.mark.parametrize(
    "where, replace, field",
    [
        ("kernels", '"kernels": 3', "exact.kernels"),
        ("instructions", '"main": 10', "exact.instructions.main"),
        ("sample", '"samples_s": [0.001', "timings.{fp}.samples_s[0]"),
        ("a field no check reads", '"compile_s": 0.5', "compile_s"),
    ],
)
@pytest.mark.parametrize("digits", [5000, 400, 21])
def test_a_huge_integer_is_a_schema_error_naming_the_field(where, replace, field, digits):
    """issue 23: 5000 digits raised ValueError from int() (an INTERNALERROR in pytest, a
    traceback in the CLI); 400 digits as a sample raised OverflowError."""
    entry = _entry_of("vm-bytecode")
    fp = next(iter(entry["timings"]))
    text = _file({"test_a[llvm-vm-bytecode]": entry})
    assert replace in text
    bad = text.replace(
        replace, replace.rsplit(" ", 1)[0].replace("[", "") + " " + ("[" if "[" in replace else "") + "9" * digits, 1
    )
    with pytest.raises(BaselineError) as info:
        parse_baselines(bad, PATH)
    message = str(info.value)
    assert (
        f"baseline file {PATH}: entry 'test_a[llvm-vm-bytecode]' is malformed: field {field.format(fp=fp)}: "
        f"a whole number of {digits} digits"
    ) in message
    assert "--tvmperf-update" in message


def test_a_huge_schema_version_is_named():
    with pytest.raises(
        BaselineError, match=f"^baseline file {PATH}: field schema_version: a whole number of 5000 digits"
    ):
        parse_baselines('{"schema_version": ' + "1" * 5000 + ', "tests": {}}', PATH)


def test_the_largest_count_a_file_holds_reads_back():
    entry = _entry_of("vm-bytecode")
    entry["exact"]["storage_bytes"] = 2**64 - 1  # 20 digits
    assert parse_baselines(_file({"t": entry}), PATH)["t"].exact.storage_bytes == 2**64 - 1


def test_a_baseline_file_without_read_permission_is_not_to_be_deleted(tmp_path, monkeypatch):
    """issue 23: EACCES advised deleting the file (the user's data, intact but unreadable)."""
    path = tmp_path / "test_x.json"
    path.write_text(dump_baselines({"t": record()}))

    def denied(p):
        raise PermissionError(13, "Permission denied", str(p))

    monkeypatch.setattr(store, "read_regular_text", denied)
    with pytest.raises(BaselineError) as info:
        load_baselines(path)
    message = str(info.value)
    assert message == (
        f"baseline file {path} cannot be read (Permission denied); make it readable by this user "
        f"(e.g. chmod u+r {path}, or run as its owner); it was left as it is"
    )
    assert "delete" not in message


def test_a_directory_at_a_baseline_path_is_not_to_be_deleted(tmp_path):
    with pytest.raises(BaselineError) as info:
        load_baselines(tmp_path)
    assert "it is a directory, not a regular file" in str(info.value)
    assert "delete" not in str(info.value) and "move it out of the way" in str(info.value)


@pytest.mark.parametrize("mode", [0o444, 0o640, 0o664])
def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path, mode):
    """issue 23: a read-only baseline file came back 0644 after an update."""
    path = tmp_path / "a.json"
    path.write_text("{}")
    path.chmod(mode)
    atomic_write(path, '{"x": 1}')
    assert path.read_text() == '{"x": 1}'
    assert path.stat().st_mode & 0o7777 == mode


def test_a_fifo_at_a_baseline_path_is_an_error_not_a_hang(tmp_path):
    path = tmp_path / "test_x.json"
    os.mkfifo(path)
    with pytest.raises(BaselineError, match=r"cannot be read \(it is a FIFO \(named pipe\), not a regular file\)"):
        load_baselines(path)


def test_atomic_write_respects_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.json", "{}")
        os.umask(0o077)
        atomic_write(tmp_path / "b.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- what a re-record keeps


def test_a_rerecord_keeps_an_entry_whose_gated_content_is_unchanged():
    """store/rerecord.unchanged: measurements moving (samples, median, stats, compile seconds,
    per-kernel times, resource numbers) keep the old entry; a gated field changed, a metric
    newly measured, another machine or peer, rewrite it."""
    from pytest_tvmperf.store.rerecord import unchanged

    old = dataclasses.replace(record((1e-3, 2e-3)), compile_s=1.0, kernel_time_s={"k": 1e-4}).as_json()
    moved = dataclasses.replace(record((5e-3,)), compile_s=2.5, kernel_time_s={"k": 3e-4}).as_json()
    assert unchanged(old, moved)
    assert not unchanged(
        old,
        dataclasses.replace(record((1e-3,)), compile_s=1.0, kernel_time_s={"k": 1e-4}, pipeline="unfused").as_json(),
    )
    assert not unchanged(old, dataclasses.replace(record((1e-3,)), compile_s=1.0).as_json())  # kernel times gone
    assert not unchanged(
        old,
        dataclasses.replace(record((1e-3,)), compile_s=1.0, kernel_time_s={"k": 1e-4}, tvm_version="0.28.0").as_json(),
    )
    other = dataclasses.replace(record((1e-3,), mach=machine("b")), compile_s=1.0, kernel_time_s={"k": 1e-4})
    assert not unchanged(old, other.as_json())  # no timing of that machine in the old entry
    more = dict(moved, exact=dict(moved["exact"], instructions={"main": 99}))
    assert not unchanged(old, more)
    with_peak = dict(moved, exact=dict(moved["exact"], peak_bytes=4096))
    assert not unchanged(old, with_peak)  # a metric the old entry predates: recorded
    assert unchanged(with_peak, dict(moved, exact=dict(moved["exact"], peak_bytes=8192)))


def test_a_rerecord_rewrites_an_unchanged_entry_whose_artifacts_are_not_intact(tmp_path):
    """merge_updates: an unchanged entry is kept (the file untouched) unless ``intact`` says a
    file it names is missing or damaged: then it is rewritten, and its artifacts placed."""
    path = tmp_path / "t.json"
    save_updates(path, {"t": record((1e-3,))})
    text = path.read_text()
    placed: list[int] = []
    merged = merge_updates(path, {"t": record((5e-3,))}, lambda: placed.append(1), intact=lambda r: True)
    assert (merged.kept, merged.written, placed, path.read_text()) == (frozenset({"t"}), False, [], text)
    merged = merge_updates(path, {"t": record((5e-3,))}, lambda: placed.append(1), intact=lambda r: False)
    assert (merged.kept, merged.written, placed) == (frozenset(), True, [1])
    assert load_baselines(path)["t"].timings[next(iter(load_baselines(path)["t"].timings))].samples.samples == (5e-3,)


def test_write_advice_follows_the_cause():
    """issue 66: ENOSPC, EDQUOT and EFBIG get the full disk's advice, EACCES, EPERM and EROFS the
    permission's, anything else to check the place."""
    import errno

    from pytest_tvmperf.store.files import write_advice

    for code in ("ENOSPC", "EDQUOT", "EFBIG"):
        assert write_advice(OSError(getattr(errno, code), "x"), "baselines/").startswith(
            "the disk holding baselines/ is full"
        )
    for code in ("EACCES", "EPERM", "EROFS"):
        assert write_advice(OSError(getattr(errno, code), "x"), "baselines/") == "make baselines/ writable by this user"
    assert write_advice(OSError(errno.EIO, "x"), "baselines/") == "check baselines/ and the disk it is on"
