"""The run's timings in pytest-benchmark's JSON format (``--tvmperf-benchmark-json=PATH``), for
``pytest-benchmark compare`` / ``list`` and the CI tools that read it (github-action-benchmark),
as pytest-benchmark 5 writes it with ``--benchmark-json``::

    {"machine_info": {...}, "commit_info": {"id", "time", "dirty", "project", "branch", ...},
     "benchmarks": [{"group", "name", "fullname", "params", "param", "extra_info", "options",
                     "stats": {"min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1",
                               "q3", "iqr_outliers", "stddev_outliers", "outliers", "ld15iqr",
                               "hd15iqr", "ops", "total", "data", "iterations"}}],
     "datetime": ISO-8601, "version": pytest-benchmark's version}

The statistics, machine and commit information are pytest-benchmark's own (``Stats`` over the
time samples, seconds per call, ``iterations`` 1). Tests without time samples and
``assert_ratio`` relations are left out. tvmperf's verdict, ratio and mode go to ``extra_info``,
with the two medians the ratio was judged with (``tvmperf_median_s``, ``tvmperf_baseline_s``)
and what they measured (``tvmperf_estimate``: "own run time" on a busy machine, where they
differ from the stats' median of the wall-time samples).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable

from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.values.resources import COMPILE_S, RESOURCE_NAMES


def benchmark_entry(entry: ResultEntry) -> dict[str, Any] | None:
    """One test's ``benchmarks[]`` item (None when it has no time samples)."""
    from pytest_benchmark.stats import Stats

    if entry.relation is not None or entry.time is None or not entry.time.samples_s:
        return None
    stats = Stats()
    for sample in entry.time.samples_s:
        stats.update(sample)
    data = {**stats.as_dict(), "data": list(entry.time.samples_s), "iterations": 1}
    name = entry.test_id or entry.nodeid.split("::", 1)[-1]
    combo = f"{entry.target}-{entry.executor}" if entry.target and entry.executor else None
    extra = {"tvmperf_verdict": str(entry.verdict), "executor": entry.executor, "target": entry.target}
    # the medians the ratio was judged with (the module docstring): not the stats' median
    time = {k: getattr(entry.time, k) for k in ("median_s", "baseline_s", "ratio", "low", "high", "mode", "estimate")}
    extra |= {f"tvmperf_{k}": v for k, v in time.items() if v is not None}
    if entry.failed:  # which metric failed the test (time, instructions, cpu_instructions, ...)
        extra["tvmperf_failed_metrics"] = list(entry.failed)
    for record, prefix in ((entry.record, ""), (entry.baseline, "baseline_")):
        # the resources: values/resources.py
        for metric in ("cpu_instructions", *RESOURCE_NAMES):
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


def benchmark_json(entries: Iterable[ResultEntry], created: str | None = None) -> dict[str, Any]:
    """The whole file, as pytest-benchmark writes it (its machine and commit information its own)."""
    from pytest_benchmark import __version__
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info
    from pytest_benchmark.utils import get_commit_info

    items = [b for b in (benchmark_entry(e) for e in sorted(entries, key=lambda e: (e.nodeid, e.test_id))) if b]
    return {
        "machine_info": pytest_benchmark_generate_machine_info(),
        "commit_info": get_commit_info(),
        "benchmarks": items,
        "datetime": created or datetime.now(timezone.utc).isoformat(),
        "version": __version__,
    }


def compile_extra(entry: ResultEntry) -> dict[str, Any]:
    """compile_s: both median builds and the verdict, or ``tvmperf_compile_s_na`` with the reason."""
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
