"""Pure: current record + baseline record + thresholds -> verdicts with the evidence."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from pytest_tvmperf.judge.disturbance import busy_shares, clean
from pytest_tvmperf.judge.own_time import OwnTimes, own_times
from pytest_tvmperf.values.kernel_metrics import setup_difference
from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.config.parsing import EXACT_METRICS, KERNEL_METRIC_NAMES, TIME_METRIC
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.values.peak_memory import allowed_peak, floor_text
from pytest_tvmperf.values.resources import PEAK_NAMES, RESOURCE_NAMES
from pytest_tvmperf.config.time_policy import TimePolicy
from pytest_tvmperf.values.record import Record, Timing
from pytest_tvmperf.judge.busy import (
    busy_paired_decision,
    busy_widened_decision,
    held_decision,
    untold_decision,
    widened_note,
)
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME, TimeDecision, decide
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.judge.metric_verdict import HELD, Comparison, MetricVerdict

DEFAULT_TIME_POLICY = TimePolicy()
#: what a time decision compares (this run's series, the baseline's, the noise): judged again when busy
Series = tuple[Sequence[float], Sequence[float] | None, float]


#: the resource metrics' own defaults, for thresholds built before they existed
DEFAULT_RESOURCE_LIMITS: Mapping[str, Limit] = {m: DEFAULT_THRESHOLDS[m] for m in RESOURCE_NAMES}


def compare_exact(metric: str, baseline: float | None, current: float | None, limit: Limit) -> MetricVerdict:
    if baseline is None or current is None:
        return MetricVerdict(metric, Verdict.NA, baseline, current, limit.describe())
    if not limit.enabled:
        return MetricVerdict(metric, Verdict.NOT_GATED, baseline, current, "off")
    allowed = limit.allowed_max(baseline)
    # improved: down by more than the allowance (a count that moves within it either way, like
    # a few hundred simulated cycles of the runtime's cache misses, is a pass)
    improved = current < baseline - (allowed - baseline)
    status = Verdict.REGRESSED if current > allowed else Verdict.IMPROVED if improved else Verdict.PASS
    return MetricVerdict(metric, status, baseline, current, limit.describe())


def _other_machine_timing(baseline: Record, current: Timing) -> Timing | None:
    """The timing of another machine to compare with: one with the same CPU model and
    reference kernel if any, else any with the same reference kernel."""
    usable = [
        t
        for t in baseline.timings.values()
        if t.samples.reference_name == current.samples.reference_name
        and t.samples.reference is not None
        and current.samples.reference is not None
    ]
    same_cpu = [t for t in usable if t.machine.cpu_model == current.machine.cpu_model]
    return (same_cpu or usable or [None])[0]


#: the mode of an a/b comparison against the baseline's IR rebuilt on this machine
AB_REBUILT = "a/b, baseline rebuilt here"


def ab_rebuilt_mode(inputs: str) -> str:
    """The mode of an a/b comparison against the baseline's IR rebuilt here: on today's
    inputs (``inputs`` "") or on inputs of its own signature (``inputs``: what changed)."""
    return f"a/b, baseline on its own inputs ({inputs})" if inputs else AB_REBUILT


#: ``ab_source`` of a build that is the baseline's own program (check/sources.py ``same_program``)
AB_SAME = "same"
#: the ratio cell of such a test in the summary table and the HTML report
SAME_PROGRAM_CELL = "same program, not timed against it"
SAME_PROGRAM_NOTE = (
    "same program as the baseline: its lowered IR and weights are the baseline's, byte for byte, "
    "under the same TVM version, so no code changed and it was not timed against the baseline "
    "(--tvmperf-same-program=time times it all the same)"
)


def compare_time(
    current: Record,
    baseline: Record,
    limit: Limit,
    policy: TimePolicy = DEFAULT_TIME_POLICY,
    ab_source: str = "artifact",
    ab_inputs: str = "",
) -> MetricVerdict:
    """``ab_source``: what the a/b samples (if any) timed: ``artifact``, the compiled
    library saved with the baseline on this machine; ``rebuilt``, the baseline's IR
    rebuilt here (compared a/b whatever machine recorded the baseline). ``ab_inputs``:
    the rebuilt baseline was timed on inputs of its own signature, what changed from
    today's (the mode and the note say so: the ratio compares different input sizes)."""
    timing = current.timing
    if timing is None:
        return MetricVerdict(TIME_METRIC, Verdict.NA, None, None, limit.describe())
    now, screened = clean(timing.samples)
    fingerprint = timing.machine.fingerprint
    base_timing = baseline.timings.get(fingerprint)
    stored = base_timing.samples.median if base_timing is not None else None
    if not limit.enabled:
        return MetricVerdict(TIME_METRIC, Verdict.NOT_GATED, stored, now.median, "off")
    threshold = limit.relative if limit.relative is not None else 0.0
    if ab_source == AB_SAME:  # the same code: a side-by-side ratio could only measure where it landed in memory
        return MetricVerdict(
            TIME_METRIC, Verdict.PASS, stored, now.median, limit.describe(), note=SAME_PROGRAM_NOTE, bound=1 + threshold
        )
    reason = ""
    side_by_side: float | None = None
    series: Series
    if ab_source == "rebuilt" and now.ab_ratios is not None and now.baseline:
        mode = ab_rebuilt_mode(ab_inputs)
        series = (now.ab_ratios, None, policy.shrink(policy.noise_ab))
        where = (
            f"{mode}: the baseline's IR rebuilt for this machine and timed on inputs of its own signature "
            f"(seeded values), side by side with this build on today's inputs; the ratio compares the two "
            f"workloads, input sizes included"
            if ab_inputs
            else f"{AB_REBUILT}: the baseline's IR rebuilt for this machine, timed side by side"
        )
        side_by_side = float(np.median(now.baseline))
    elif base_timing is None:
        other = _other_machine_timing(baseline, timing) if policy.other_machine == "normalized" else None
        if other is None:
            if not baseline.timings:
                why = "no machine has a time baseline yet"
            elif policy.other_machine == "skip":
                why = f"{len(baseline.timings)} other machine(s) recorded, not compared (--tvmperf-other-machine=skip)"
            elif now.reference is None:
                why = "this run has no reference-kernel samples to normalize by"
            else:
                why = f"{len(baseline.timings)} other machine(s) recorded, none with reference kernel {now.reference_name}"
            note = f"no time baseline for this machine (fingerprint {fingerprint}); {why}"
            return MetricVerdict(TIME_METRIC, Verdict.NOT_GATED, None, now.median, limit.describe(), note=note)
        mode, series = "normalized", (now.normalized, other.samples.normalized, 2 * policy.noise_normalized)
        base_timing = other
        where = f"vs another machine ({safe(other.machine.cpu_model)}, {safe(other.machine.fingerprint)}), normalized"
        if other.machine.cpu_model != timing.machine.cpu_model:
            # the reference kernel does not scale like the workload across micro-architectures
            # (measured: unchanged code 2.6-2.7x apart between AMD and Intel): shown, never failed
            reason = f"baseline from another CPU model ({safe(other.machine.cpu_model)}): normalized times do not carry across CPU models"
        elif other.machine.target != timing.machine.target:
            # the same CPU name (clouds report generic ones, "AMD EPYC") but code built for
            # another CPU: measured, znver4 vs x86-64-v2 code 1.7-1.8x apart: shown, never failed
            reason = (
                f"baseline built for another target ({other.machine.target}): normalized times do not "
                f"carry across instruction sets"
            )
    elif now.ab_ratios is not None:
        mode, series = "a/b", (now.ab_ratios, None, policy.shrink(policy.noise_ab))
        where = "the baseline's artifact timed side by side"
        side_by_side = float(np.median(now.baseline))
    elif (
        now.normalized is not None
        and base_timing.samples.normalized is not None
        and now.reference_name == base_timing.samples.reference_name
    ):
        mode, series = "normalized", (now.normalized, base_timing.samples.normalized, policy.noise_normalized)
        where = "normalized by the reference kernel"
    else:
        mode, series = "raw", (now.samples, base_timing.samples.samples, policy.noise_raw)
        where = "raw times (no common reference kernel)"
    decision = decide(series[0], series[1], threshold, policy.alpha, series[2], mode, fail_rule=policy.fail_rule)
    if reason:  # another CPU model or target: shown, never failed
        decision = held_decision(decision, allow_pass=True)
    current, current_samples = now.median, tuple(now.samples)
    side_samples = tuple(now.baseline) if side_by_side is not None and now.baseline else None
    if screened is not None and screened.describe():
        where = f"{where}; {screened.describe()}"
        own = None
        if screened.busy and screened.source == "host" and not reason:
            # the own run times of the sides this comparison timed
            sides = {"a/b": ("time", "baseline"), "normalized": ("time", "reference")}
            own = own_times(timing.samples, sides.get("a/b" if mode.startswith("a/b") else mode, ("time",)))
        if own is not None and not own.lost:
            # each side by its own run time: what the load took from it is out of its samples
            decision, current, side = _own_time_decision(own, series, threshold, policy, mode)
            side_by_side = side if side is not None else side_by_side
            current_samples = own.series("time")
            side_samples = own.series("baseline") if side is not None else side_samples
            where = f"{where}; {own.describe()}"
            if decision.status == Verdict.INCONCLUSIVE:  # no reason held it: more rounds can decide it
                # the least ratio whose interval would clear 1 (a/b: by the load's lean) past the limit
                lean = policy.shrink(own.allowance) if mode.startswith("a/b") else 0.0
                tell = max(1 + threshold, (1 + lean) * math.sqrt(decision.high / decision.low))
                where = f"{where}; could tell a slowdown of {tell - 1:.0%} or more, saw {decision.ratio:.2f}x"
        elif own is not None and now.preempted is not None:
            # a side whose run time cannot be told: held with that reason, and shown with the
            # interval every round's wait allows (the wall times' own can lie wholly past the limit)
            decision = untold_decision(series[0], series[1], now.preempted, threshold, policy.alpha, series[2], mode)
            where = f"{where}; {widened_note(now.preempted)}"
            if decision.status == Verdict.INCONCLUSIVE:
                reason = f"{screened.describe()}; {own.lost}"
        elif own is not None:
            reason = f"{screened.describe()}; {own.lost}"
            decision = held_decision(decision)
        elif not reason and (shares := busy_shares(now, screened)) is not None:
            # no per-side waits (an injected timer; an RPC device, by its reference kernel): the
            # wall times, widened by what each round's disturbance could have moved them; a
            # verdict far past the limit is no load's doing
            decision = busy_widened_decision(series[0], series[1], shares, threshold, policy.alpha, series[2], mode)
            where = f"{where}; {widened_note(shares, screened.source)}"
            if decision.status == Verdict.INCONCLUSIVE:
                reason = screened.describe()
        elif screened.busy:
            reason = reason or screened.describe()
            decision = held_decision(decision)
    # a/b rebuilt here: this machine may have no stored timing (the baseline recorded elsewhere)
    stored = base_timing.samples.median if base_timing is not None else None
    # side by side: the baseline shown is the one timed in this run, the stored one beside it
    shown, stored = (stored, None) if side_by_side is None else (side_by_side, stored)
    if side_samples is None and base_timing is not None and side_by_side is None:
        side_samples = tuple(base_timing.samples.samples)  # the stored median's own samples
    status, bound = decision.status, 1 + threshold
    return MetricVerdict(
        TIME_METRIC,
        status,
        shown,
        current,
        limit.describe(),
        note=where,
        decision=decision,
        reason=reason,
        bound=bound,
        stored_baseline=stored,
        current_samples=current_samples,
        baseline_samples=side_samples,
    )


def _own_time_decision(
    own: OwnTimes, series: Series, threshold: float, policy: TimePolicy, mode: str
) -> tuple[TimeDecision, float, float | None]:
    """The decision from each side's own run time, with the allowance the load adds (an a/b
    one also asks :func:`busy_paired_decision`'s lean; a normalized or raw interval already
    carries the process noise). Returns it, today's median run time, and the baseline
    program's (a/b; None otherwise), from the same rounds as the ratio."""
    # a/b: both sides loaded anew in each pooled measurement, so the load's allowance shrinks with them
    allowance = policy.shrink(own.allowance) if mode.startswith("a/b") else own.allowance
    noise = math.hypot(series[2], allowance)
    if mode.startswith("a/b"):
        now, base, side = own.ratios("time", "baseline"), None, own.median("baseline")
    elif mode == "normalized":
        now, base, side = own.ratios("time", "reference"), series[1], None
    else:
        now, base, side = own.series("time"), series[1], None
    decision = decide(now, base, threshold, policy.alpha, noise, mode, fail_rule=policy.fail_rule)  # type: ignore[arg-type]
    if mode.startswith("a/b"):
        decision = busy_paired_decision(decision, allowance)
    return replace(decision, estimate=OWN_RUN_TIME), own.median("time"), side


def same_program_cell(comparison: "Comparison | None") -> str:
    """:data:`SAME_PROGRAM_CELL` where ``comparison``'s time verdict found the baseline's
    own program (no ratio measured), else ""."""
    verdict = comparison.get(TIME_METRIC) if comparison is not None else None
    return SAME_PROGRAM_CELL if verdict is not None and verdict.note == SAME_PROGRAM_NOTE else ""


def compare(
    current: Record,
    baseline: Record,
    thresholds: Mapping[str, Limit],
    policy: TimePolicy = DEFAULT_TIME_POLICY,
    ab_source: str = "artifact",
    ab_inputs: str = "",
) -> Comparison:
    kernel_metrics = [m for m in KERNEL_METRIC_NAMES if m in current.exact.per_kernel or m in baseline.exact.per_kernel]
    verdicts = [
        compare_exact(m, baseline.exact.scalar(m), current.exact.scalar(m), thresholds[m]) for m in EXACT_METRICS
    ]
    for m in kernel_metrics:
        # counts of another setup (pinned target, tool version): shown, not gated
        then, now = baseline.exact.scalar(m), current.exact.scalar(m)
        held = _held_for_setup(m, then, now, baseline, current)
        verdicts.append(held or compare_exact(m, then, now, thresholds[m]))
    verdicts.extend(compare_resources(current, baseline, thresholds))
    verdicts.append(compare_time(current, baseline, thresholds[TIME_METRIC], policy, ab_source, ab_inputs))
    return Comparison(tuple(verdicts))


def compare_resources(current: Record, baseline: Record, thresholds: Mapping[str, Limit]) -> list[MetricVerdict]:
    """The resource metrics' verdicts (values/resources.py): n/a with the reason where
    this run could not read one, or the baseline predates it; held where the baseline
    measured it on another setup (code_bytes of another TVM, LLVM or target)."""
    verdicts = []
    for m in RESOURCE_NAMES:
        if m not in current.exact.resources and m not in current.exact.not_measured:
            continue  # a record made without them (no build measured it): nothing to show
        now, then = current.exact.scalar(m), baseline.exact.scalar(m)
        limit = thresholds.get(m) or DEFAULT_RESOURCE_LIMITS[m]
        if now is None or then is None:
            why = current.exact.not_measured.get(m) or (
                "the baseline predates it" if m in baseline.exact.predates else baseline.exact.not_measured.get(m, "")
            )
            verdicts.append(MetricVerdict(m, Verdict.NA, then, now, limit.describe(), note=why))
            continue
        held = _held_for_setup(m, then, now, baseline, current)
        verdicts.append(
            held or (compare_peak(m, then, now, limit) if m in PEAK_NAMES else compare_exact(m, then, now, limit))
        )
    return verdicts


def _held_for_setup(
    m: str, then: float | None, now: float | None, baseline: Record, current: Record
) -> MetricVerdict | None:
    """Not gated where the baseline measured ``m`` on another setup, else None."""
    differs = setup_difference(m, baseline.exact.measured_with, current.exact.measured_with)
    return MetricVerdict(m, Verdict.NOT_GATED, then, now, HELD, reason=differs) if differs else None


def compare_peak(metric: str, baseline: float, current: float, limit: Limit) -> MetricVerdict:
    """A peak's verdict (values/peak_memory.py): as an exact metric's, but a growth up to
    the noise floor passes whatever the limit, and only a fall past it is an improvement."""
    if not limit.enabled:
        return MetricVerdict(metric, Verdict.NOT_GATED, baseline, current, "off")
    allowed = allowed_peak(baseline, limit.relative, limit.absolute)
    shown = f"{limit.describe()}, {floor_text()}"
    status = Verdict.REGRESSED if current > allowed else Verdict.PASS
    if current < baseline - (allowed - baseline):
        status = Verdict.IMPROVED
    return MetricVerdict(metric, status, baseline, current, shown, bound=allowed)  # bound: the most allowed
