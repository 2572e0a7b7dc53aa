"""``--tvmperf-timing=off`` (ini ``tvmperf_timing``, marker ``timing=False``): a test is
compiled, checked against its reference (and on Hypothesis-drawn shapes) and gated on
its exact metrics, with no timing at all (no time samples, no per-kernel times, no
peers, no a/b artifact), like pytest-benchmark's ``--benchmark-disable``: the fast inner
loop. The time verdict is ``n/a`` and the summary says so in one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_tvmperf.judge.compare import MetricVerdict, compare
from pytest_tvmperf.judge.gate import pipeline_notes, whole_verdict
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.machine import current_machine
from pytest_tvmperf.report.outcome import Outcome
from pytest_tvmperf.report.text import missing_baseline_message, regression_message
from pytest_tvmperf.store.record import Record

if TYPE_CHECKING:
    from pytest_tvmperf.build.prepare import Prepared
    from pytest_tvmperf.runner import Tvmperf

#: the summary note of every untimed test (one summary line counts them)
UNTIMED_NOTE = "timing off: correctness and exact metrics only, time not measured (--tvmperf-timing=off)"


def untimed_note(comparison) -> str:
    """The summary note of an untimed test, with what its simulated cost did: 'timing off: ...;
    simulated cost gated (cpu_instructions, est_cycles)' when the counts were gated in place of
    the time (a run that did not simulate says why in a line of its own)."""
    from pytest_tvmperf.measure.simulate import simulated_gate_note

    return "; ".join(n for n in (UNTIMED_NOTE, simulated_gate_note(Verdict.NOT_GATED, comparison)) if n)


def check_untimed(t: "Tvmperf", prep: "Prepared") -> Outcome:
    """The rest of ``tvmperf.check`` for an untimed test: exact metrics against the
    baseline (or recorded with ``--tvmperf-update``, keeping the entry's timings while
    the exact metrics are unchanged)."""
    __tracebackhide__ = True
    from pytest_tvmperf.build.prepare import display_path

    compiled = prep.compiled
    exact = t._exact(prep)  # with the metric sources' per-kernel counts, as a timed run records them
    target_json = prep.target.as_json()
    record = Record(workload=prep.workload.name, executor=t.executor, target=target_json,
                    tvm_version=current_machine(target_json).tvm_version, exact=exact, timings={},
                    compile_s=prep.compile_s, bytecode=compiled.listing(), kernel_time_s=None,
                    pipeline=prep.workload.pipeline, tuning=prep.tuning.as_json() if prep.tuning else None)
    baseline = t._baselines().get(t.test_id)
    if t.session.settings.update:
        t.session.store.queue_update(t.baseline_file, t.test_id, record)
        return t._add(Outcome(t.nodeid, t.test_id, t.executor, t.target, Verdict.RECORDED, record=record,
                              note=UNTIMED_NOTE))
    shown_path = display_path(t.baseline_file, t.session.rootpath)
    if baseline is None:
        t._fail("no baseline", missing_baseline_message(t.nodeid, t.test_id, shown_path,
                                                        t.session.accept_command(t.nodeid)), record=record,
                note="no baseline: run pytest --tvmperf-update to create it")
    notes, _ = pipeline_notes(baseline.pipeline, record.pipeline, dict(baseline.target) == dict(record.target),
                              (baseline.tuning or {}).get("records_hash"), (record.tuning or {}).get("records_hash"))
    comparison = compare(record, baseline, t.thresholds, t.session.time_policy())
    comparison = comparison.with_verdict(MetricVerdict("time", Verdict.NA, None, None, "timing off"))
    decided = whole_verdict(comparison.status, bool(comparison.regressions), comparison.inconclusive, [])
    message = ""
    if decided.fails:
        message = regression_message(t.nodeid, shown_path, record, baseline, comparison,
                                     [*notes, "timing off: time was not measured"], t.session.accept_command(t.nodeid))
    outcome = t._add(Outcome(t.nodeid, t.test_id, t.executor, t.target, decided.verdict, record=record,
                             baseline=baseline, comparison=comparison, message=message,
                             note=untimed_note(comparison)))
    if decided.fails:
        pytest.fail(message, pytrace=False)
    return outcome
