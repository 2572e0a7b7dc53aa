"""The run's timings in pytest-benchmark's JSON format (``--tvmperf-benchmark-json=PATH``),
so that ``pytest-benchmark compare`` / ``list`` and CI tools that read that format
(github-action-benchmark's ``pytest`` tool) show tvmperf's timings with no glue.

The schema is the one pytest-benchmark 5 writes with ``--benchmark-json`` (and reads
back in ``compare``)::

    {"machine_info": {...}, "commit_info": {"id", "time", "dirty", "project", "branch", ...},
     "benchmarks": [{"group", "name", "fullname", "params", "param", "extra_info", "options",
                     "stats": {"min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1",
                               "q3", "iqr_outliers", "stddev_outliers", "outliers", "ld15iqr",
                               "hd15iqr", "ops", "total", "data", "iterations"}}],
     "datetime": ISO-8601, "version": pytest-benchmark's version}

The statistics are pytest-benchmark's own (``pytest_benchmark.stats.Stats``) over the
test's time samples (seconds per call, ``iterations`` 1); the machine and commit
information come from pytest-benchmark's own functions. Tests without time samples
(``--tvmperf-timing=off``, a failure before timing) and ``assert_ratio`` relations are
left out; tvmperf's verdict, ratio and mode go to ``extra_info``, with the two medians the ratio
was judged with (``tvmperf_median_s``, ``tvmperf_baseline_s``) and what they measured
(``tvmperf_estimate``: "wall time", or "own run time" on a busy machine, where they differ
from the stats' median of the wall-time samples).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.values.resources import COMPILE_S


def benchmark_entry(entry: ResultEntry) -> dict[str, Any] | None:
    """One test's ``benchmarks[]`` item (None when it has no time samples)."""
    from pytest_benchmark.stats import Stats

    if entry.relation is not None or entry.time is None or not entry.time.samples_s:
        return None
    stats = Stats()
    for sample in entry.time.samples_s:
        stats.update(sample)
    data = stats.as_dict()
    data["data"] = list(entry.time.samples_s)
    data["iterations"] = 1
    name = entry.test_id or entry.nodeid.split("::", 1)[-1]
    combo = f"{entry.target}-{entry.executor}" if entry.target and entry.executor else None
    extra = {"tvmperf_verdict": str(entry.verdict), "executor": entry.executor, "target": entry.target}
    # the medians the ratio was judged with (under load each side's own run time, "estimate"):
    # the stats above are pytest-benchmark's, over every wall-time sample
    for key in ("median_s", "baseline_s", "ratio", "low", "high", "mode", "estimate"):
        value = getattr(entry.time, key)
        if value is not None:
            extra[f"tvmperf_{key}"] = value
    if entry.failed:  # which metric failed the test (time, instructions, cpu_instructions, ...)
        extra["tvmperf_failed_metrics"] = list(entry.failed)
    for record, prefix in ((entry.record, ""), (entry.baseline, "baseline_")):
        # the resources: values/resources.py
        for metric in ("cpu_instructions", "alloc_bytes", "code_bytes", "peak_bytes", "device_peak_bytes"):
            count = record.exact.scalar(metric) if record is not None else None
            if count is not None:
                extra[f"tvmperf_{prefix}{metric}"] = int(count)
    for metric, why in entry.record.exact.not_measured.items() if entry.record is not None else ():
        extra[f"tvmperf_{metric}_na"] = why  # n/a, with the reason (never 0)
    extra.update(compile_extra(entry))
    return {
        "group": None,
        "name": name,
        "fullname": entry.nodeid,
        "params": {"tvmperf": combo} if combo else None,
        "param": combo,
        "extra_info": extra,
        "options": {"timer": "tvm time_evaluator", "disable_gc": False, "min_rounds": len(entry.time.samples_s)},
        "stats": data,
    }


def machine_info() -> dict[str, Any]:
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    return pytest_benchmark_generate_machine_info()


def commit_info() -> dict[str, Any]:
    from pytest_benchmark.utils import get_commit_info

    return get_commit_info()


def benchmark_json(
    entries: Iterable[ResultEntry],
    created: str | None = None,
    machine: Callable[[], dict[str, Any]] = machine_info,
    commit: Callable[[], dict[str, Any]] = commit_info,
) -> dict[str, Any]:
    """The whole file, as pytest-benchmark writes it."""
    from pytest_benchmark import __version__

    items = [b for b in (benchmark_entry(e) for e in sorted(entries, key=lambda e: (e.nodeid, e.test_id))) if b]
    return {
        "machine_info": machine(),
        "commit_info": commit(),
        "benchmarks": items,
        "datetime": created or datetime.now(timezone.utc).isoformat(),
        "version": __version__,
    }


def compile_extra(entry: ResultEntry) -> dict[str, Any]:
    """compile_s side by side (values/compile_times.py): today's and the baseline's median
    build and its verdict; ``tvmperf_compile_s_na`` with the reason where not measured."""
    cell = next((m for m in entry.metrics if m.metric == COMPILE_S), None)
    if cell is None:
        return {}
    if cell.current is None or cell.baseline is None:
        return {"tvmperf_compile_s_na": cell.note or str(cell.status)}
    return {
        "tvmperf_compile_s": cell.current,
        "tvmperf_baseline_compile_s": cell.baseline,
        "tvmperf_compile_s_verdict": cell.status,
    }
