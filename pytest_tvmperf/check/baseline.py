"""Pure: what a run is judged against, one kind of value for every source: the stored
baseline (its numbers, and where one runs here, its own program), or another TVM
version's build in its place (``--tvmperf-against-tvm``). Its time verdict is judged
here, once, for the sequential looks and for the confirmation alike."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from pytest_tvmperf.judge.compare import TimePolicy, compare, compare_time
from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.config.limits import Limit

if TYPE_CHECKING:
    from pytest_tvmperf.values.record import Record

SampleFn = Callable[[], float]


@dataclass(frozen=True)
class BaselineSource:
    """The record a run is compared with, and the program timed beside today's, if any."""

    #: the record compared with (None: no baseline stored for the test)
    record: "Record | None"
    #: samples the baseline's (or the other version's) program, timed a/b beside today's; None: stored numbers only
    sampler: SampleFn | None = None
    #: what the a/b samples time (``compare_time``'s ``ab_source``): ``rebuilt`` (the IR rebuilt
    #: here, or another version's build), ``artifact`` (an old-form library), ``same`` (the
    #: same program: not timed twice), "" (no a/b)
    ab: str = ""
    #: the a/b samples timed the baseline on inputs of its own signature, not today's: what
    #: changed (``shapes changed: A 16384 -> 20480``, check/sources.py); "" on today's inputs
    inputs: str = ""
    #: the time decision's mode word in place of the a/b one (``a/b vs TVM 0.26.0``); None: kept
    mode: str | None = None
    #: the time verdict's note in place of its own; None: kept
    note: str | None = None

    def judge_time(self, current: "Record", limit: Limit, policy: TimePolicy) -> MetricVerdict:
        """``current``'s time against this source's, worded as the source is."""
        assert self.record is not None
        verdict = compare_time(current, self.record, limit, policy, self.ab, self.inputs)
        if verdict.decision is not None and (self.mode is not None or self.note is not None):
            decision = replace(verdict.decision, mode=self.mode) if self.mode is not None else verdict.decision
            verdict = replace(verdict, decision=decision, note=self.note if self.note is not None else verdict.note)
        return verdict

    def compare(self, current: "Record", thresholds, policy: TimePolicy, timed: bool = True) -> Comparison:
        """Every metric of ``current`` against this source's (time by its a/b source when ``timed``, else stored)."""
        assert self.record is not None
        return compare(current, self.record, thresholds, policy, self.ab if timed else "artifact", self.inputs)
