"""``tvmperf.check`` for a target that is built but not run here (``cuda`` on a machine
without a GPU, :attr:`TargetSpec.not_run`): the workload is compiled and its kernels
built, its exact metrics are recorded and gated against the baseline, and correctness,
executed calls and time are left out, each said in the outcome and the run's summary."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_tvmperf.build.prepare import Prepared, display_path
from pytest_tvmperf.config.parsing import EXACT_METRICS, KERNEL_METRIC_NAMES
from pytest_tvmperf.judge.compare import compare
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.kernel_metrics import collect as collect_kernel_metrics
from pytest_tvmperf.measure.metrics import ExactMetrics
from pytest_tvmperf.report.outcome import Outcome
from pytest_tvmperf.report.text import missing_baseline_message, regression_message
from pytest_tvmperf.store.record import Record

if TYPE_CHECKING:
    from pytest_tvmperf.runner import Tvmperf

#: the verdicts of metrics that were compared with the baseline
_GATED = (Verdict.PASS, Verdict.IMPROVED, Verdict.REGRESSED)


def built_exact(prep: Prepared, sources, settings) -> tuple[ExactMetrics, tuple[str, ...]]:
    """The exact metrics that need no run (no executed calls), with the metric sources'
    per-kernel counts, and why a source could not measure."""
    exact = replace(prep.compiled.static_metrics(), calls=None)
    collected = collect_kernel_metrics(sources, prep, settings)
    return replace(exact, per_kernel=collected.per_kernel, measured_with=collected.measured_with), collected.skipped


def with_baseline_calls(exact: ExactMetrics, baseline: Record | None) -> ExactMetrics:
    """Executed calls are counted only where the program runs: when everything else
    matches the baseline, its calls stand, so a GPU machine's timings and a CPU-only
    machine's build share one baseline entry."""
    if baseline is not None and replace(baseline.exact, calls=None) == exact:
        return baseline.exact
    return exact


def measured_count(exact: ExactMetrics) -> int:
    return sum(exact.scalar(m) is not None for m in (*EXACT_METRICS, *KERNEL_METRIC_NAMES) if m != "calls")


def summary_line(target: str, why: str, verb: str = "gated") -> str:
    return (f"target {target}: {why} on this machine: built and {verb} the exact metrics only "
            f"(VM instructions, kernels, planned bytes, GPU registers/shared/local/spill bytes and PTX "
            f"instructions per kernel); correctness, executed calls and time were not checked")


def check_built(tv: "Tvmperf", prep: Prepared) -> Outcome:
    """Record or gate ``prep``'s exact metrics; fails the test on a regression."""
    __tracebackhide__ = True
    import tvm

    why = prep.target.not_run or "not run"
    session = tv.session
    exact, skipped = built_exact(prep, session.metric_sources(), session.settings)
    session.report.not_measured.update(skipped)
    session.report.not_measured.add(summary_line(tv.target, why, "recorded" if session.settings.update else "gated"))
    baseline = tv._baselines().get(tv.test_id)
    exact = with_baseline_calls(exact, baseline)
    workload = prep.workload
    record = Record(workload=workload.name, executor=tv.executor, target=prep.target.as_json(),
                    tvm_version=str(tvm.__version__), exact=exact, timings={}, compile_s=prep.compile_s,
                    bytecode=prep.compiled.listing(), pipeline=workload.pipeline,
                    tuning=prep.tuning.as_json() if prep.tuning else None)
    if session.settings.update:
        session.store.queue_update(tv.baseline_file, tv.test_id, record)
        note = f"{why}: built and recorded {measured_count(exact)} exact metrics, not run"
        return tv._add(Outcome(tv.nodeid, tv.test_id, tv.executor, tv.target, Verdict.RECORDED, record=record, note=note))
    shown_path = display_path(tv.baseline_file, session.rootpath)
    if baseline is None:
        tv._fail("no baseline", missing_baseline_message(tv.nodeid, tv.test_id, shown_path, session.accept_command(tv.nodeid)),
                 record=record, note="no baseline: run pytest --tvmperf-update to create it")
    comparison = compare(record, baseline, tv.thresholds, session.time_policy())
    gated = sum(v.status in _GATED for v in comparison.verdicts)
    note = f"{why}: built and gated {gated} exact metrics, not run"
    message = ""
    if comparison.regressions:
        message = regression_message(tv.nodeid, shown_path, record, baseline, comparison,
                                     [f"{note} (correctness and time not checked)"], session.accept_command(tv.nodeid))
    outcome = tv._add(Outcome(tv.nodeid, tv.test_id, tv.executor, tv.target, comparison.status, record=record,
                              baseline=baseline, comparison=comparison, message=message, note=note))
    if comparison.regressions:
        import pytest

        pytest.fail(message, pytrace=False)
    return outcome
