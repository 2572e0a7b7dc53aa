"""Peak memory's pure parts (issue 48): the noise floor and the relative limit, the
median of the child's readings and its n/a replies, the child's arithmetic over injected
/proc files and an injected device, and which reason a peak that cannot be read gets."""

from __future__ import annotations

from dataclasses import replace

from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit, parse_thresholds
from pytest_tvmperf.judge.compare import compare_peak, compare_resources
from pytest_tvmperf.measure.resource_metrics import with_resources
from pytest_tvmperf.result.regression import resource_lines
from pytest_tvmperf.sandbox.peak import ProcMemory, device_peaks, host_peaks
from pytest_tvmperf.values import peak_memory
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.peak_memory import PEAK_FLOOR_BYTES, PeakReading
from pytest_tvmperf.values.record import Record

MIB = 1024 * 1024


def test_the_floor_and_the_relative_limit():
    limit = DEFAULT_THRESHOLDS["peak_bytes"]
    assert limit == Limit(relative=0.1) and parse_thresholds("memory=20%") == {"peak_bytes": Limit(relative=0.2)}
    # a small peak: growth up to the floor passes though it is many times the baseline
    assert compare_peak("peak_bytes", 4096, 4096 + PEAK_FLOOR_BYTES, limit).status == "pass"
    assert compare_peak("peak_bytes", 4096, 4097 + PEAK_FLOOR_BYTES, limit).status == "regressed"
    # a large one: the relative limit is the wider
    assert compare_peak("peak_bytes", 10 * MIB, 11 * MIB, limit).status == "pass"
    grown = compare_peak("peak_bytes", 10 * MIB, 11 * MIB + 1, limit)
    assert grown.status == "regressed" and grown.limit == "+10%, growth up to 256 KiB passes"
    assert compare_peak("peak_bytes", 10 * MIB, 8 * MIB, limit).status == "improved"
    assert compare_peak("peak_bytes", 100_000, 0, limit).status == "pass"  # a fall within the floor
    assert compare_peak("peak_bytes", 0, 50 * MIB, Limit(enabled=False)).status == "not gated"


def test_failure_lines_show_the_most_allowed():
    before = Record("w", "vm-bytecode", {"kind": "llvm"}, "0.27", ExactMetrics(resources={"peak_bytes": 10 * MIB}))
    after = replace(before, exact=ExactMetrics(resources={"peak_bytes": 12 * MIB}))
    (v,) = [v for v in compare_resources(after, before, DEFAULT_THRESHOLDS) if v.metric == "peak_bytes"]
    assert resource_lines(v, after, before) == [
        "  peak_bytes 10,485,760 B -> 12,582,912 B (+2,097,152 B, limit +10%, growth up to 256 KiB passes, "
        "at most 11,534,336 B)"
    ]
    (v,) = [
        v for v in compare_resources(after, before, {"peak_bytes": Limit(absolute=MIB)}) if v.metric == "peak_bytes"
    ]
    assert resource_lines(v, after, before)[0].endswith(
        "limit +1.04858e+06, growth up to 256 KiB passes, at most 11,534,336 B)"
    )
    # the device peak of a host target is n/a as expected: in the JSON and JUnit, not in every failure
    from pytest_tvmperf.judge.metric_verdict import Comparison
    from pytest_tvmperf.result.regression import _not_measured_lines

    here = replace(after, exact=replace(after.exact, not_measured={"device_peak_bytes": peak_memory.ON_HOST}))
    elsewhere = replace(after, exact=ExactMetrics(not_measured={"peak_bytes": peak_memory.NO_CLEAR_REFS}))
    assert _not_measured_lines(Comparison(tuple(compare_resources(here, before, DEFAULT_THRESHOLDS)))) == []
    assert _not_measured_lines(Comparison(tuple(compare_resources(elsewhere, before, DEFAULT_THRESHOLDS)))) == [
        f"  peak_bytes n/a: {peak_memory.NO_CLEAR_REFS}"
    ]


def test_readings_and_replies():
    assert PeakReading((5, 1, 3)).total == 3 and PeakReading((4, 2)).total == 2  # the lower median
    assert PeakReading.from_reply({"samples": [7, 9, 8]}) == PeakReading((7, 9, 8))
    assert PeakReading.from_reply({"na": "why"}) == "why"
    assert PeakReading.from_reply(None).startswith("the isolation child gave no reading")
    assert PeakReading.from_reply({"samples": ["x"]}).startswith("the isolation child gave no reading")


def _proc(tmp_path, statuses, writable=True):
    """A ProcMemory whose status file moves through ``statuses`` (VmRSS, VmHWM) as it is read."""
    tmp_path.mkdir(exist_ok=True)
    status = tmp_path / "status"
    clear = tmp_path / "clear_refs"
    if not writable:
        clear.mkdir()  # opening a directory for writing fails, as an unwritable clear_refs does
    reads = iter(statuses)

    class Fake(ProcMemory):
        def read(self, key):
            rss, hwm = next(reads)
            status.write_text(f"VmHWM:\t{hwm // 1024} kB\nVmRSS:\t{rss // 1024} kB\n")
            return super().read(key)

    return Fake(status, clear)


def test_host_peaks_over_injected_proc_files(tmp_path):
    emptied = []
    calls = []
    # each call: VmRSS before, then VmHWM after
    proc = _proc(
        tmp_path, [(100 * MIB, 0), (0, 101 * MIB), (100 * MIB, 0), (0, 103 * MIB), (100 * MIB, 0), (0, 102 * MIB)]
    )
    reply = host_peaks(lambda: calls.append(1), lambda: emptied.append(1), proc)
    assert reply == {"samples": [MIB, 3 * MIB, 2 * MIB]} and len(calls) == 4 and len(emptied) == 3  # one warm call
    assert PeakReading.from_reply(reply).total == 2 * MIB
    calls.clear()  # where the crash check ran it in this child already: no warm call
    proc = _proc(tmp_path, [(0, 0), (0, MIB)] * 3)
    assert host_peaks(lambda: calls.append(1), lambda: None, proc, warm=False) == {"samples": [MIB] * 3}
    assert len(calls) == 3
    assert host_peaks(lambda: None, lambda: None, _proc(tmp_path / "x", [], writable=False)) == {
        "na": peak_memory.NO_CLEAR_REFS
    }


def test_device_peaks_from_free_memory():
    free = iter([8 * MIB, 8 * MIB, 5 * MIB, 8 * MIB, 6 * MIB, 8 * MIB, 4 * MIB])
    reply = device_peaks(lambda: None, lambda: None, lambda: None, lambda: next(free))
    assert reply == {"samples": [3 * MIB, 2 * MIB, 4 * MIB]}
    assert device_peaks(lambda: None, lambda: None, lambda: None, lambda: None) == {"na": peak_memory.NO_FREE_MEMORY}


class _Target:
    def __init__(self, device_type):
        self.device_type = device_type


def test_which_reason_a_peak_gets():
    wanted = ("peak_bytes", "device_peak_bytes")
    asked = []

    def ask():
        asked.append(1)
        return {"host": {"samples": [10, 30, 20]}, "device": {"samples": [5, 5, 5]}}

    cpu = with_resources(ExactMetrics(), object(), [], True, wanted, _Target("cpu"), None, ask)
    assert cpu.resources == {"peak_bytes": 20} and cpu.not_measured["device_peak_bytes"] == peak_memory.ON_HOST
    gpu = with_resources(ExactMetrics(), object(), [], True, wanted, _Target("cuda"), None, ask)
    assert gpu.resources == {"peak_bytes": 20, "device_peak_bytes": 5} and len(asked) == 2  # once per build
    assert "peak_bytes" not in gpu.resource_parts  # no parts
    not_run = with_resources(ExactMetrics(), object(), [], False, wanted, _Target("cuda"), None, ask)
    assert {not_run.not_measured[m] for m in wanted} == {peak_memory.NOT_RUN}
    alone = with_resources(ExactMetrics(), object(), [], True, wanted, _Target("cpu"), None, None)
    assert alone.not_measured["peak_bytes"] == peak_memory.NOT_EXPORTED

    class Remote:
        is_remote = True

    far = with_resources(ExactMetrics(), Remote(), [], True, wanted, _Target("cpu"), None, ask)
    assert far.not_measured["peak_bytes"] == peak_memory.REMOTE
    died = with_resources(ExactMetrics(), object(), [], True, wanted, _Target("cpu"), None, lambda: {"na": "it died"})
    assert died.not_measured["peak_bytes"] == "it died" and "peak_bytes" not in died.resources
    assert len(asked) == 2


def test_a_baseline_from_before_the_peaks_gates_as_before_and_says_so():
    from pytest_tvmperf.values.resources import predates_line

    stored = ExactMetrics(kernels=2, resources={"alloc_bytes": 240, "code_bytes": 1000}).as_json()
    old = ExactMetrics.from_json(stored)  # recorded with alloc_bytes and code_bytes, before the peaks
    assert old.predates == {"peak_bytes", "device_peak_bytes"}
    assert predates_line(old.predates) == (
        "the baseline predates device_peak_bytes, peak_bytes: not gated against it; they will be recorded at the "
        "next --tvmperf-update"
    )
    now = ExactMetrics(
        kernels=2,
        resources={"alloc_bytes": 240, "code_bytes": 1000, "peak_bytes": 50 * MIB},
        not_measured={"device_peak_bytes": peak_memory.ON_HOST},
    )
    record = Record("w", "vm-bytecode", {"kind": "llvm"}, "0.27", now)
    v = {x.metric: x for x in compare_resources(record, replace(record, exact=old), DEFAULT_THRESHOLDS)}
    assert (v["peak_bytes"].status, v["peak_bytes"].note) == ("n/a", "the baseline predates it")
    assert (v["alloc_bytes"].status, v["code_bytes"].status) == ("pass", "pass")


def test_html_has_a_peak_column_and_none_for_a_host_targets_device_peak():
    from pytest_tvmperf.report.html_report import render_html

    measured = ExactMetrics(resources={"peak_bytes": 2 * MIB}, not_measured={"device_peak_bytes": peak_memory.ON_HOST})
    rec = Record("w", "vm-bytecode", {"kind": "llvm"}, "0.27", measured).as_json()
    test = {"nodeid": "t.py::test_w", "test_id": "test_w", "executor": "vm-bytecode", "target": "llvm"}
    test.update(verdict="pass", note="", time=None, kernels=[], record=rec, baseline=rec)
    page = render_html({"schema_version": 1, "kind": "pytest-tvmperf-results", "created": "2026", "tests": [test]})
    assert "peak_bytes now / base" in page and "device_peak_bytes" not in page


def test_summary_step_summary_and_show():
    from pytest_tvmperf.command.cli_match import _show_rows
    from pytest_tvmperf.judge.verdict import Verdict
    from pytest_tvmperf.result.markdown import markdown_summary
    from pytest_tvmperf.result.text import SummaryRow, summary_table

    row = SummaryRow("test_w", "vm-bytecode", "llvm", None, None, 16, 16, Verdict.PASS, resources={"alloc_bytes": 240})
    peaked = replace(row, resources={"alloc_bytes": 240, "peak_bytes": 2 * MIB, "code_bytes": 1024})
    assert "peak" not in summary_table([row])[0].split() and "alloc/code/peak" not in markdown_summary(
        [replace(row, resources={})]
    )
    table = summary_table([peaked])
    assert table[0].split()[-2:] == ["peak", "verdict"] and table[1].split()[-2:] == ["2MiB", "pass"]
    assert replace(peaked, resources={**peaked.resources, "device_peak_bytes": 3 * MIB}).peak_cell == "2MiB gpu 3MiB"
    assert "| 240B/1KiB/2MiB |" in markdown_summary([peaked])
    measured = ExactMetrics(resources={"peak_bytes": 2 * MIB}, not_measured={"device_peak_bytes": "why"})
    (first,) = _show_rows("t", "vm-bytecode", "llvm", Record("w", "vm-bytecode", {}, "0.27", measured), ())
    assert first[10:12] == ["2097152", "n/a"]  # peak_bytes, device_peak_bytes (after compile_s at 4)


def test_the_child_maps_large_blocks_unless_the_environment_says_otherwise(tmp_path, monkeypatch):
    import subprocess

    from pytest_tvmperf.sandbox.child import Sandbox

    seen = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: seen.append(kw["env"]))
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    Sandbox(tmp_path)._start()
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    Sandbox(tmp_path)._start()
    assert [env["MALLOC_MMAP_THRESHOLD_"] for env in seen] == ["65536", "131072"]
