"""The timed mode (the default): measured by :func:`measure_time` (the time measurement of every
timed mode, against/gate.py's included), then recorded (``--tvmperf-update``) or gated (pipeline.py)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from pytest_tvmperf.check import pipeline
from pytest_tvmperf.check.baseline import BaselineSource
from pytest_tvmperf.check.decide import Measured, confirm_peers
from pytest_tvmperf.judge.compare import AB_SAME
from pytest_tvmperf.judge.confirmation import FIRST_LOOK, sample_in_looks
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.budget import plan_rounds
from pytest_tvmperf.judge.own_time import as_run_times
from pytest_tvmperf.judge.disturbance import clean, device_disturbance
from pytest_tvmperf.measure.host_machine import current_machine
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.measure.reference import REFERENCE_NAME
from pytest_tvmperf.measure.threads import same_threads, tvm_thread_count, tvm_threads
from pytest_tvmperf.builder.timer import TimeSamples, TimingTask, kernel_times
from pytest_tvmperf.store.artifacts import PendingArtifact, discard
from pytest_tvmperf.values.record import IRRef, Record, Timing

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.check.context import CheckContext
    from pytest_tvmperf.result.outcome import Outcome


def ir_ref(pending: PendingArtifact, baseline_dir: Path) -> IRRef:
    """The entry's ``ir`` field for a pending IR file (with the weights stored apart from it)."""
    ref = getattr(pending, "ref", None)
    return ref(baseline_dir) if ref is not None else IRRef(str(pending.final.relative_to(baseline_dir)), pending.sha256)


def check(ctx: "CheckContext", prep: "Prepared", where: str) -> "Outcome":
    """The rest of ``tvmperf.check`` for a timed test: measure, then record or gate."""
    __tracebackhide__ = True
    session = ctx.session
    peers = ctx.sources.peer_samplers(prep, where)
    baseline = ctx.stored_baselines().get(ctx.test_id)
    exact = pipeline.exact_metrics(ctx, prep, baseline=baseline)
    notes: list[str] = []

    # Time the artifact as a later run will load it (exported and loaded back), so
    # a/b timing compares like with like: a JIT-compiled module in memory runs a few
    # percent apart from the same code loaded from a shared library.
    def source_for(machine) -> BaselineSource:
        if session.settings.update:
            return BaselineSource(baseline)
        args = (prep.target, prep.workload, prep.args, prep.out_specs, notes)
        return ctx.sources.baseline_source(baseline, machine.fingerprint, *args, compiled=prep.compiled)

    measured = measure_time(ctx, prep, exact, source_for, notes, peers)
    if session.settings.confirm and ctx.settings.peer_limits:
        measured = confirm_peers(measured, ctx.settings.peer_limits, session.time_policy(), notes)
    pending = measured.pending
    keep = pending is not None and ctx.sources.keeps_library
    if pending is not None and not keep:
        discard(pending)
    if session.settings.update:
        if keep:
            session.store.queue_artifact(pending)
        ir = ctx.sources.save_ir(prep.compiled)  # the ir form (the default): the IR, rebuilt where the gate runs
        if ir is not None:
            session.store.queue_artifact(ir)
        kept, screened = clean(measured.samples)  # the baseline keeps the rounds the machine left alone
        busy = (
            f"recorded on a busy machine ({screened.describe()}): re-record on a quiet one for a trustworthy baseline"
            if screened is not None and screened.busy
            else ""
        )
        run_times = as_run_times(measured.samples) if busy and screened.source == "host" else None
        if run_times is not None:  # no clean rounds to keep: each side's own run time is stored
            kept, busy = run_times, f"{busy}; stored as each side's own run time (wall time less its own CPU wait)"
        budget = measured.rounds.note() if measured.rounds is not None else ""
        record = measured.make_record(kept, pending if keep else None, ir)
        return pipeline.record(ctx, record, "; ".join(n for n in (busy, budget) if n), measured=measured, prep=prep)
    return pipeline.gate(ctx, measured.make_record(measured.samples), measured.source, measured, notes, prep=prep)


def measure_time(
    ctx: "CheckContext",
    prep: "Prepared",
    exact: ExactMetrics,
    source_for: Callable[..., BaselineSource],
    notes: list[str],
    peers: Mapping | None = None,
) -> Measured:
    """Today's build, the reference kernel and the program it is judged against (``source_for(machine)``:
    the baseline's, another TVM version's, or none) timed side by side in rounds, in looks that stop at a
    decisive pass (sequential sampling), at fewer threads on a machine too busy for the asked ones."""
    session, settings = ctx.session, ctx.session.settings
    compiled, target, args = prep.compiled, prep.target, prep.args
    with session.timing_lock(ctx.target):  # a network of seconds: its per-kernel times from one run
        per_kernel = kernel_times(compiled, args, runs=1 if (prep.run_s or 0) > 0.5 else 5)
    target_json = target.as_json()
    machine = current_machine(target_json) if target.remote is None else target.remote.machine(target_json)

    built = pipeline.build_record(ctx.executor, prep, exact, tvm_version=machine.tvm_version, kernel_time_s=per_kernel)

    def make_record(
        samples: TimeSamples, artifact: PendingArtifact | None = None, ir: PendingArtifact | None = None
    ) -> Record:
        relpath = str(artifact.final.relative_to(settings.baseline_dir)) if artifact else None
        timing = Timing(machine, samples, relpath, artifact.sha256 if artifact else None)
        ir_field = ir_ref(ir, settings.baseline_dir) if ir else None
        return replace(built, timings={machine.fingerprint: timing}, ir=ir_field)

    pending, workload_sampler = ctx.sources.exported_sampler(prep, machine.fingerprint)
    source = source_for(machine)
    # the baseline's own program (a same-program pass, judge/compare.py): nothing timed
    # decides the test, so no reference kernel is compiled or timed, and the first look's
    # rounds give the summary its time and the history its point
    unjudged = source.ab == AB_SAME and not peers
    reference = None if unjudged else session.reference_sampler(target)
    task = TimingTask(workload_sampler, reference, REFERENCE_NAME, baseline=source.sampler, peers=peers or {})
    # a network that runs for seconds is timed in fewer rounds, within the test's time budget
    run_s = sum(per_kernel.values()) if per_kernel else None
    heavy = 1 + (task.baseline is not None) + len(task.peers)
    budget_s, min_s = ctx.settings.time_budget_s, settings.min_repeat_ms / 1000
    rounds_plan = plan_rounds(run_s, heavy, int(task.reference is not None), settings.repeat, budget_s, min_s)
    rounds = min(rounds_plan.rounds, FIRST_LOOK) if unjudged else rounds_plan.rounds
    threads: list[int | None] = [None]  # None: TVM's own thread count

    def measure(n: int, fresh: bool = False) -> TimeSamples:
        """``fresh``: a confirming re-measure, with both programs loaded anew (new
        memory placements), so it cannot inherit the first measurement's placement bias."""
        with session.timing_lock(ctx.target), tvm_thread_count(threads[0]), same_threads(tvm_threads()):
            got = ctx.timer(task.reloaded() if fresh else task, n)
        if target.remote is None:
            return got
        # this process's CPU wait says nothing about an RPC device's: the reference kernel,
        # timed on the device in the same rounds, stands in for it (judge/disturbance.py)
        return replace(got, preempted=device_disturbance(got.reference), screened_by="device", waits=())

    settled = None if unjudged else _settled(ctx, source, make_record)
    samples = sample_in_looks(measure, rounds, settled).samples
    fewer = _fewer_threads(ctx, samples, task) if target.remote is None else None  # the device's threads are its own
    threads_note = ""
    if fewer is not None:
        threads[0], note = fewer
        notes.append(note)
        threads_note = f"timed at {threads[0]} TVM thread(s): machine busy"
        samples = sample_in_looks(measure, rounds, settled).samples
    remeasure, peers_timed = partial(measure, 2 * rounds, fresh=True), tuple(sorted(peers or {}))
    return Measured(
        samples,
        make_record,
        remeasure,
        pending,
        rounds_plan,
        threads_note,
        peers_timed,
        source=source,
        measure_batch=None if unjudged else partial(measure, fresh=True),
        batch_rounds=rounds,
        decide_budget=ctx.settings.decide_budget,
    )


def _settled(
    ctx: "CheckContext", source: BaselineSource, make_record: Callable[..., Record]
) -> Callable[[TimeSamples], bool] | None:
    """When the samples so far already decide the test (a pass: a slowdown of the threshold is ruled
    out, or time is not gated), for sequential sampling (judge/confirmation.py :func:`sample_in_looks`);
    None when every round is needed: a recording run, no baseline, or peers to gate (their ratios)."""
    if ctx.session.settings.update or source.record is None or ctx.settings.peer_limits:
        return None
    policy, limit = ctx.session.time_policy(), ctx.settings.thresholds["time"]

    def settled(samples: TimeSamples) -> bool:
        verdict = source.judge_time(make_record(samples), limit, policy)
        return verdict.status in (Verdict.PASS, Verdict.NOT_GATED)

    return settled


def _fewer_threads(ctx: "CheckContext", samples: TimeSamples, task: TimingTask) -> tuple[int, str] | None:
    """A multi-threaded kernel on a machine too busy to give it its threads (one
    descheduled thread stalls the kernel at its barrier): time at one thread instead,
    both sides of the a/b pair alike. Only for the a/b comparison, whose two sides
    share the thread pool; stored samples of another thread count are not comparable."""
    asked = tvm_threads()
    if asked <= 1 or task.baseline is None or ctx.session.settings.update:
        return None
    _, screened = clean(samples)
    if screened is None or not screened.busy:
        return None
    return 1, (
        f"timed at 1 of {asked} TVM threads, both sides alike: the machine could not give {asked} "
        f"({screened.share_disturbed:.0%} of samples preempted at {asked})"
    )
