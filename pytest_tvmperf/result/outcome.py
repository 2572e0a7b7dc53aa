"""What one tvmperf test measured and decided (``Outcome``), and what is derived from it
for JUnit XML and for counting which baselines a run could have written."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_tvmperf.judge.compare import Comparison
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.judge.layers import LayerTable
from pytest_tvmperf.result.text import SummaryRow
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.compile_text import compile_properties
from pytest_tvmperf.values.resources import COMPILE_S


@dataclass(frozen=True)
class Outcome:
    """What one tvmperf test measured and decided."""

    nodeid: str
    test_id: str
    executor: str
    target: str
    #: a whole-test verdict (``verdict.TEST_VERDICTS``); a plain word is taken as its member
    verdict: Verdict
    record: Record | None = None
    baseline: Record | None = None
    comparison: Comparison | None = None
    note: str = ""
    message: str = ""
    location: tuple[str, int] = ("", 0)
    #: TVM against peer frameworks timed side by side (``--tvmperf-peers``, ``vs_<peer>``)
    peers: tuple[RatioVerdict, ...] = ()
    #: the verdict of a ``tvmperf.assert_ratio`` (this outcome is then that relation's)
    relation: RatioVerdict | None = None
    #: per layer, TVM against each peer (``--tvmperf-layers``, or a failed ``vs_<peer>``; judge/layers.py)
    layers: tuple[LayerTable, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", Verdict(self.verdict))

    def summary_row(self) -> SummaryRow:
        """Its summary row, derived (as every row is) from its results entry."""
        from pytest_tvmperf.result.entry import ResultEntry

        return SummaryRow.of(ResultEntry.of(self))

    @property
    def failed_metrics(self) -> tuple[str, ...]:
        """The metrics that regressed against the baseline (the comparison's order)."""
        return tuple(v.metric for v in self.comparison.regressions) if self.comparison is not None else ()


def junit_properties(outcome: Outcome) -> list[tuple[str, object]]:
    """The figures put on a test case of the JUnit XML report (``record_property``)."""
    props: list[tuple[str, object]] = [
        ("tvmperf_verdict", outcome.verdict.value),
        ("tvmperf_executor", outcome.executor),
        ("tvmperf_target", outcome.target),
    ]
    row = outcome.summary_row()
    for name, value in (
        ("median_s", row.median_s),
        ("baseline_s", row.baseline_s),
        ("ratio", row.ratio),
        ("ratio_low", row.low),
        ("ratio_high", row.high),
        ("instructions", row.instructions),
    ):
        if value is not None:
            props.append((f"tvmperf_{name}", value))
    if row.mode:  # how median_s and baseline_s were compared (a/b: both timed side by side in this run)
        props.append(("tvmperf_mode", row.mode))
    if outcome.failed_metrics:
        props.append(("tvmperf_failed_metrics", ",".join(outcome.failed_metrics)))
    if outcome.record is not None:
        for metric in (
            "kernels",
            "storage_bytes",
            "calls",
            "cpu_instructions",
            "est_cycles",
            "alloc_bytes",
            "code_bytes",
            "peak_bytes",
            "device_peak_bytes",
        ):
            value = outcome.record.exact.scalar(metric)
            if value is not None:
                props.append((f"tvmperf_{metric}", value))
        for metric, why in sorted(outcome.record.exact.not_measured.items()):  # n/a with the reason, never 0
            props.append((f"tvmperf_{metric}", f"n/a: {why}"))
    props.extend(compile_properties(outcome.comparison.get(COMPILE_S) if outcome.comparison is not None else None))
    return props


def producible_ids(test_id: str, combo_id: str) -> set[str]:
    """Every test id a collected test could write a baseline under: its own with the
    executor x target part (``combo_id``, ``none`` when none was left) swapped for every
    combination there is, so a run with fewer executors or targets (or a marker that
    allows fewer) still counts the other combinations' baselines as used."""
    from pytest_tvmperf.config.parsing import EXECUTORS, TARGETS

    combos = [f"{t}-{e}" for t in TARGETS for e in EXECUTORS]
    if combo_id not in test_id:
        return {test_id}
    return {test_id} | {test_id.replace(combo_id, other) for other in combos}
