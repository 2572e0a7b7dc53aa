"""One check, prepare -> measure -> decide, for every mode: the steps around the pure
decision (decide.py) that read the store, run TVM or keep the outcome. Each mode (timed.py,
untimed.py, ratio.py) ends here, by :func:`gate` (compare with the baseline and decide) or
:func:`record` (``--tvmperf-update``); each step reads the frozen ``CheckContext``."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Sequence

from pytest_tvmperf.check.approval import with_change
from pytest_tvmperf.check.compile_gate import compile_times
from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.decide import TIMED, Decision, Measured, conclude, confirm_time, decide
from pytest_tvmperf.check.decide import judged_peers, no_baseline, recorded
from pytest_tvmperf.check.unmeasured import settle
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.measure.host_machine import current_machine
from pytest_tvmperf.measure.kernel_identity import kernel_identities
from pytest_tvmperf.measure.metric_sources import REUSED_LINE, collect as collect_kernel_metrics
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.resources import predates_line
from pytest_tvmperf.values.kernel_keys import in_build_names, is_keyed
from pytest_tvmperf.measure.plan import Plan
from pytest_tvmperf.measure.resource_metrics import with_resources
from pytest_tvmperf.result.layers_text import with_layers
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.values.record import Record

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.check.context import CheckContext


def build_record(
    executor: str,
    prep: "Prepared",
    exact: ExactMetrics,
    *,
    tvm_version: str | None = None,
    kernel_time_s: "dict[str, float] | None" = None,
    kernels: bool = True,
) -> Record:
    """The one place a :class:`Record` of today's build is made, without timing (a timed mode adds
    ``timings`` and ``ir``). ``tvm_version``: of the machine that runs it (a remote device's);
    ``kernels``: with the kernels' identities (not in ``--tvmperf-against-tvm``'s export: it predates them)."""
    target_json = prep.target.as_json()
    return Record(
        workload=prep.workload.name,
        executor=executor,
        target=target_json,
        tvm_version=tvm_version or current_machine(target_json).tvm_version,
        exact=exact,
        compile_s=prep.compile_s,
        bytecode=prep.compiled.listing(),
        kernel_time_s=kernel_time_s,
        pipeline=prep.workload.pipeline,
        tuning=prep.tuning.as_json() if prep.tuning else None,
        kernels=kernel_identities(prep.compiled, sources=prep.workload.layers) if kernels else None,
    )


def counts(prep: "Prepared", runs: bool = True) -> ExactMetrics:
    """The build's static metrics, with its executed calls where it ``runs`` here."""
    return replace(prep.compiled.static_metrics(), calls=prep.compiled.executed_calls(prep.args) if runs else None)


def exact_metrics(
    ctx: "CheckContext", prep: "Prepared", runs: bool = True, baseline: "Record | None" = None
) -> ExactMetrics:
    """The exact metrics of a prepared workload, with the metric sources' per-kernel counts; ``runs``:
    its executed calls counted; ``baseline``: whose counts are taken for its own program (:func:`same_counts`)."""
    exact = counts(prep, runs)
    collected = collect_kernel_metrics(
        ctx.session.metric_sources(), prep, ctx.settings, stored=_in_build_names(prep, same_counts(ctx, prep, baseline))
    )
    for line in collected.skipped:
        ctx.note(line)
    if collected.reused:
        ctx.note(REUSED_LINE.format(sources=", ".join(collected.reused)))
    exact = replace(exact, per_kernel=collected.per_kernel, measured_with=collected.measured_with)
    # the entry (kept on update, failed when the tool died), its kernels under this build's names
    settled = settle(ctx, exact, collected, lambda: in_build_entry(prep, ctx.stored_baselines().get(ctx.test_id)))
    export = ctx.preparer.exports.get(id(prep.compiled))
    library = export[1] if export is not None and export[0] is prep.compiled else None
    peak = _peak_in_child(ctx, prep, library)
    return with_resources(settled, prep.compiled, prep.args, runs, ctx.settings.resources, prep.target, library, peak)


def in_build_entry(prep: "Prepared", entry: "Record | None") -> "Record | None":
    """A stored entry with its exact metrics under this build's kernel names (:func:`_in_build_names`)."""
    return None if entry is None else replace(entry, exact=_in_build_names(prep, entry.exact))


def _peak_in_child(ctx: "CheckContext", prep: "Prepared", library) -> "Callable[[], dict] | None":
    """Asks the isolation child for the peak memory of one call of ``library`` (None: not exported)."""
    if library is None:
        return None
    entry, device_type = prep.workload.entry, getattr(prep.target, "device_type", "cpu")
    return lambda: ctx.session.sandbox().peak(library, prep.executor, entry, device_type, prep.args, prep.out_specs)


def _in_build_names(prep: "Prepared", exact: ExactMetrics | None) -> ExactMetrics | None:
    """A stored entry's exact metrics with the kernels it keys by identity under the names
    this build gave them (values/kernel_keys.py), so they compare with this build's."""
    if exact is None:
        return None
    parts = (*exact.per_kernel.values(), *exact.resource_parts.values())
    if not any(is_keyed(k) for k in (*(exact.by_callee or ()), *(exact.calls or ()), *(k for m in parts for k in m))):
        return exact
    return in_build_names(exact, kernel_identities(prep.compiled, sources=prep.workload.layers))


def same_counts(ctx: "CheckContext", prep: "Prepared", baseline: "Record | None") -> ExactMetrics | None:
    """The baseline's exact metrics when a gate (not an update) builds the baseline's own program
    (check/sources.py ``same_program``, under ``--tvmperf-same-program=skip``) on inputs of fixed shapes (no
    symbolic dims, no smaller ``simulate_as`` workload): its per-kernel counts are the ones a new count would give."""
    settings = ctx.session.settings
    if baseline is None or baseline.ir is None or settings.update or settings.same_program != "skip":
        return None
    if settings.artifact_dir is None or prep.workload.dims or prep.workload.simulate_as is not None:
        return None
    return baseline.exact if ctx.sources.checked_program(prep.compiled, baseline).same else None


def peers_of(ctx: "CheckContext", record: "Record", measured: Measured | None) -> tuple[RatioVerdict, ...]:
    """TVM against the peers timed beside (a timer that left one out fails the test)."""
    __tracebackhide__ = True
    timed, unconfirmed = (measured.peers_timed, measured.peers_unconfirmed) if measured else ((), {})
    settled = measured.peers_settled if measured else {}
    try:
        return judged_peers(
            record.timing.samples, ctx.settings.peer_limits, ctx.session.time_policy(), timed, unconfirmed, settled
        )
    except ValueError as exc:
        ctx.fail("error", f"tvmperf: {ctx.nodeid}: {exc}")
    raise AssertionError("unreachable")  # pragma: no cover


def with_layer_tables(ctx: "CheckContext", prep: "Prepared | None", decision: Decision) -> Decision:
    """The decision with the per-layer tables against the peers: asked for, or a peer limit failed."""
    if prep is None or not decision.peers:
        return replace(decision, layers=())
    from pytest_tvmperf.measure.peer_layers import for_test

    timing = decision.record.timing
    samples = timing.samples if timing else None
    lock = lambda: ctx.session.timing_lock(ctx.target)  # noqa: E731
    layers = for_test(prep, samples, decision.peers, ctx.session.settings.layers, lock, ctx.note)
    return replace(decision, message=with_layers(decision.message, layers), layers=layers)


def finish(ctx: "CheckContext", decision: Decision) -> Outcome:
    """Keep the decision's outcome, then pass, fail, or leave it to ``--tvmperf-inconclusive``."""
    __tracebackhide__ = True
    return conclude(decision, ctx.identity, ctx.add_outcome, ctx.inconclusive)


def gate(
    ctx: "CheckContext",
    record: "Record",
    source: BaselineSource,
    measured: Measured | None,
    notes: Sequence[str],
    plan: Plan = TIMED,
    prep: "Prepared | None" = None,
) -> Outcome:
    """Compare ``record`` with what ``source`` holds and decide the test, for every mode
    (a timed record's time confirmed by ``measured.remeasure``)."""
    __tracebackhide__ = True
    who = ctx.identity
    if source.record is None:
        return finish(ctx, with_change(ctx, record, source, no_baseline(record, who), measured, plan, prep))
    session = ctx.session
    predates = predates_line(source.record.exact.predates & set(ctx.settings.resources))
    if predates:  # one line for the run (not one per test and metric), and a note on this test's message
        ctx.note(predates.replace("the baseline predates", "baselines predate", 1))
        notes = [*notes, predates]
    policy = session.time_policy()
    time = peers = None
    if plan.time:
        assert measured is not None
        time = confirm_time(measured, source, ctx.settings.thresholds["time"], policy, session.settings.confirm)
        peers = peers_of(ctx, time.record, measured)
    rounds, threads = (measured.rounds, measured.threads_note) if measured else (None, "")
    budget = measured.decide_budget if measured is not None else ctx.settings.decide_budget
    if time is not None and time.settling is not None:  # one budget for the test: what time's looks left
        budget = budget.less(time.settling.seconds, time.settling.rounds)
    builds = compile_times(ctx, prep, source.record, budget)
    thresholds, peers = ctx.settings.thresholds, peers or ()
    decision = decide(
        record, source.record, time, thresholds, policy, who, notes, plan, peers, source.ab, rounds, threads, builds
    )
    return finish(ctx, with_change(ctx, record, source, with_layer_tables(ctx, prep, decision), measured, plan, prep))


def record(
    ctx: "CheckContext",
    record: "Record",
    note: str = "",
    plan: Plan = TIMED,
    measured: Measured | None = None,
    prep: "Prepared | None" = None,
) -> Outcome:
    """``--tvmperf-update``: queue ``record`` as the test's baseline (written at the
    session's end; an unchanged entry is kept, and ``note``, on how it was measured, dropped);
    a gated peer past its limit still fails."""
    __tracebackhide__ = True
    store = ctx.session.store
    if store.would_keep(ctx.baseline_file, ctx.test_id, record):  # its measurements are not stored: no note on them
        note = ""
    store.queue_update(ctx.baseline_file, ctx.test_id, record)
    peers = peers_of(ctx, record, measured) if plan.time else ()
    return finish(ctx, with_layer_tables(ctx, prep, recorded(record, ctx.identity, peers, note)))
