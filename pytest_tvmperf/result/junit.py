"""The figures a tvmperf test puts on its JUnit XML test case, from its results entry."""

from __future__ import annotations

from pytest_tvmperf.result.compile_text import compile_properties
from pytest_tvmperf.result.entry import ResultEntry
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.result.text import SummaryRow
from pytest_tvmperf.values.resources import COMPILE_S, RESOURCE_NAMES


def summary_row(outcome: Outcome) -> SummaryRow:
    """The outcome's summary row (of its results entry, as every row)."""
    return SummaryRow.of(ResultEntry.of(outcome))


def junit_properties(outcome: Outcome) -> list[tuple[str, object]]:
    """The figures put on a test case of the JUnit XML report (``record_property``)."""
    props: list[tuple[str, object]] = [
        ("tvmperf_verdict", outcome.verdict.value),
        ("tvmperf_executor", outcome.executor),
        ("tvmperf_target", outcome.target),
    ]
    row = summary_row(outcome)
    named = {"median_s": row.median_s, "baseline_s": row.baseline_s, "ratio": row.ratio, "ratio_low": row.low}
    named |= {"ratio_high": row.high, "instructions": row.instructions}
    props += [(f"tvmperf_{name}", value) for name, value in named.items() if value is not None]
    if row.mode:  # how median_s and baseline_s were compared (a/b: both timed side by side in this run)
        props.append(("tvmperf_mode", row.mode))
    if row.estimate:  # what median_s, baseline_s and the ratio measured: wall time, or own run time
        props.append(("tvmperf_estimate", row.estimate))
    if outcome.failed_metrics:
        props.append(("tvmperf_failed_metrics", ",".join(outcome.failed_metrics)))
    if outcome.record is not None:
        counts = ("kernels", "storage_bytes", "calls", "cpu_instructions", "est_cycles")
        for metric in (*counts, *RESOURCE_NAMES):
            value = outcome.record.exact.scalar(metric)
            if value is not None:
                props.append((f"tvmperf_{metric}", value))
        for metric, why in sorted(outcome.record.exact.not_measured.items()):  # n/a with the reason, never 0
            props.append((f"tvmperf_{metric}", f"n/a: {why}"))
    props.extend(compile_properties(outcome.comparison.get(COMPILE_S) if outcome.comparison is not None else None))
    return props
