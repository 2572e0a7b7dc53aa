"""One check, prepare -> measure -> decide, for every mode: the steps around the pure
decision (decide.py) that read the store, run TVM or keep the outcome. A mode (timed.py,
untimed.py, ratio.py) is a choice of measurements; each ends here, by :func:`gate`
(compare with the baseline and decide) or :func:`record` (``--tvmperf-update``). The
fixture (fixture.py) is read here, never written: what one step hands the next is a
frozen value (:class:`~pytest_tvmperf.check.decide.Measured`, ``Decision``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Sequence

from pytest_tvmperf.check.approval import with_change
from pytest_tvmperf.check.compile_gate import compile_times
from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.decide import (
    TIMED,
    Decision,
    Measured,
    conclude,
    confirm_time,
    decide,
    judged_peers,
    no_baseline,
    recorded,
)
from pytest_tvmperf.check.unmeasured import settle
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.measure.kernel_metrics import REUSED_LINE, collect as collect_kernel_metrics
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.resources import predates_line
from pytest_tvmperf.values.kernel_keys import in_build_names, is_keyed
from pytest_tvmperf.measure.plan import Plan
from pytest_tvmperf.measure.resources import with_resources
from pytest_tvmperf.result.layers_text import with_layers
from pytest_tvmperf.result.outcome import Outcome

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.check.fixture import Tvmperf
    from pytest_tvmperf.values.record import Record


def exact_metrics(tv: "Tvmperf", prep: "Prepared", runs: bool = True, baseline: "Record | None" = None) -> ExactMetrics:
    """The exact metrics of a prepared workload, with the metric sources' per-kernel
    counts; ``runs``: the program runs here, so its executed calls are counted.
    ``baseline``: the stored one, whose counts are taken when this build is its own
    program (:func:`same_counts`)."""
    exact = replace(prep.compiled.static_metrics(), calls=prep.compiled.executed_calls(prep.args) if runs else None)
    session = tv.session
    settings = session.settings
    if tv.simulate is not None:  # the test's marker: over the ini, under the command line
        settings = replace(settings, ini_simulate=tv.simulate)
    collected = collect_kernel_metrics(
        session.metric_sources(), prep, settings, stored=_in_build_names(prep, same_counts(tv, prep, baseline))
    )
    session.report.not_measured.update(collected.skipped)
    if collected.reused:
        session.report.not_measured.add(REUSED_LINE.format(sources=", ".join(collected.reused)))

    # kept on update, failed when the tool died
    def stored() -> "Record | None":  # the entry, its kernels under this build's names (store keys them by identity)
        return in_build_entry(prep, tv.stored_baselines().get(tv.test_id))

    settled = settle(
        replace(exact, per_kernel=collected.per_kernel, measured_with=collected.measured_with),
        collected,
        stored,
        settings.update,
        session.report.not_measured,
        tv.fail,
        tv.nodeid,
        tv.identity().shown_file,
    )
    export = tv.preparer.exports.get(id(prep.compiled))
    library = export[1] if export is not None and export[0] is prep.compiled else None
    return with_resources(
        settled, prep.compiled, prep.args, runs, tv.resources, prep.target, library, _peak_in_child(tv, prep, library)
    )


def in_build_entry(prep: "Prepared", entry: "Record | None") -> "Record | None":
    """A stored entry with its exact metrics under this build's kernel names (:func:`_in_build_names`)."""
    return None if entry is None else replace(entry, exact=_in_build_names(prep, entry.exact))


def _peak_in_child(tv: "Tvmperf", prep: "Prepared", library) -> "Callable[[], dict] | None":
    """Asks the isolation child for the peak memory of one call of ``library`` (None: not exported)."""
    if library is None:
        return None
    entry, device_type = prep.workload.entry, getattr(prep.target, "device_type", "cpu")
    return lambda: tv.session.sandbox().peak(library, prep.executor, entry, device_type, prep.args, prep.out_specs)


def _in_build_names(prep: "Prepared", exact: ExactMetrics | None) -> ExactMetrics | None:
    """A stored entry's exact metrics with the kernels it keys by identity under the names
    this build gave them (values/kernel_keys.py), so they compare with this build's."""
    if exact is None or not any(
        is_keyed(k)
        for k in (
            *(exact.by_callee or ()),
            *(exact.calls or ()),
            *(k for m in exact.per_kernel.values() for k in m),
            *(k for m in exact.resource_parts.values() for k in m),
        )
    ):
        return exact
    from pytest_tvmperf.measure.kernel_identity import kernel_identities

    return in_build_names(exact, kernel_identities(prep.compiled, sources=prep.workload.layers))


def same_counts(tv: "Tvmperf", prep: "Prepared", baseline: "Record | None") -> ExactMetrics | None:
    """The baseline's exact metrics when a gate (not an update) builds the baseline's own
    program (check/sources.py ``same_program``, under ``--tvmperf-same-program=skip``) and
    its inputs have fixed shapes (no symbolic dims, no smaller ``simulate_as`` workload):
    its per-kernel counts are the ones a new count would give."""
    settings = tv.session.settings
    if (
        baseline is None
        or baseline.ir is None
        or settings.update
        or settings.same_program != "skip"
        or settings.artifact_dir is None
        or prep.workload.dims
        or prep.workload.simulate_as is not None
    ):
        return None
    return baseline.exact if tv.sources.is_same_program(prep.compiled, baseline) else None


def peers_of(tv: "Tvmperf", record: "Record", measured: Measured | None) -> tuple[RatioVerdict, ...]:
    """TVM against the peers timed beside (a timer that left one out fails the test)."""
    __tracebackhide__ = True
    timed, unconfirmed = (measured.peers_timed, measured.peers_unconfirmed) if measured else ((), {})
    try:
        return judged_peers(record.timing.samples, tv.peer_limits, tv.session.time_policy(), timed, unconfirmed)
    except ValueError as exc:
        tv.fail("error", f"tvmperf: {tv.nodeid}: {exc}")
    raise AssertionError("unreachable")  # pragma: no cover


def layers_of(tv: "Tvmperf", prep: "Prepared | None", record: "Record", peers: tuple[RatioVerdict, ...]) -> tuple:
    """The per-layer tables against the peers: asked for, or a peer limit failed."""
    if prep is None or not peers:
        return ()
    from pytest_tvmperf.measure.peer_layers import for_test

    return for_test(tv, prep, record.timing.samples if record.timing else None, peers)


def with_layer_tables(tv: "Tvmperf", prep: "Prepared | None", decision: Decision) -> Decision:
    layers = layers_of(tv, prep, decision.record, decision.peers)
    return replace(decision, message=with_layers(decision.message, layers), layers=layers)


def finish(tv: "Tvmperf", decision: Decision) -> Outcome:
    """Keep the decision's outcome, then pass, fail, or leave it to ``--tvmperf-inconclusive``."""
    __tracebackhide__ = True
    return conclude(decision, tv.identity(), tv.add_outcome, tv.inconclusive)


def gate(
    tv: "Tvmperf",
    record: "Record",
    source: BaselineSource,
    measured: Measured | None,
    notes: Sequence[str],
    plan: Plan = TIMED,
    prep: "Prepared | None" = None,
) -> Outcome:
    """Compare ``record`` with what ``source`` holds and decide the test, for every mode:
    a timed record's time is judged (and confirmed by ``measured.remeasure``); a mode
    without time compares the rest (measure/plan.py)."""
    __tracebackhide__ = True
    who = tv.identity()
    if source.record is None:
        return finish(tv, with_change(tv, record, source, no_baseline(record, who), measured, plan))
    session = tv.session
    predates = predates_line(source.record.exact.predates & set(tv.resources))
    if predates:  # one line for the run (not one per test and metric), and a note on this test's message
        session.report.not_measured.add(predates.replace("the baseline predates", "baselines predate", 1))
        notes = [*notes, predates]
    policy = session.time_policy()
    time = peers = None
    if plan.time:
        assert measured is not None
        time = confirm_time(measured, source, tv.thresholds["time"], policy, session.settings.confirm)
        peers = peers_of(tv, time.record, measured)
    decision = decide(
        record,
        source.record,
        time,
        tv.thresholds,
        policy,
        who,
        notes,
        plan,
        peers or (),
        source.ab,
        measured.rounds if measured else None,
        measured.threads_note if measured else "",
        compile_times(tv, prep, source.record),
    )
    return finish(tv, with_change(tv, record, source, with_layer_tables(tv, prep, decision), measured, plan))


def record(
    tv: "Tvmperf",
    record: "Record",
    note: str = "",
    plan: Plan = TIMED,
    measured: Measured | None = None,
    prep: "Prepared | None" = None,
) -> Outcome:
    """``--tvmperf-update``: queue ``record`` as the test's baseline (written at the
    session's end); a gated peer past its limit still fails."""
    __tracebackhide__ = True
    tv.session.store.queue_update(tv.baseline_file, tv.test_id, record)
    peers = peers_of(tv, record, measured) if plan.time else ()
    return finish(tv, with_layer_tables(tv, prep, recorded(record, tv.identity(), peers, note)))
