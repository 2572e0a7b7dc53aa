"""What ``tvmperf.check(workload)`` does for one test id: compile, check against
NumPy (and on Hypothesis-drawn shapes), measure, compare with the baseline, decide."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

import pytest

from pytest_tvmperf.store.artifacts import PendingArtifact, discard
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.judge.compare import MetricVerdict, RatioVerdict, compare, compare_time, peer_verdicts, relation_verdict
from pytest_tvmperf.judge.disturbance import clean, device_disturbance
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.judge.gate import (confirm, confirmation_note, pipeline_notes, sample_in_looks, summary_note,
                   whole_verdict)
from pytest_tvmperf.measure.kernel_identity import kernel_identities
from pytest_tvmperf.measure.kernel_metrics import collect as collect_kernel_metrics
from pytest_tvmperf.measure.simulate import simulated_gate_note
from pytest_tvmperf.measure.machine import current_machine
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.measure.budget import RoundsPlan, plan_rounds, precision
from pytest_tvmperf.measure.timer import Timer, TimingTask, kernel_times
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.config.options import DEFAULT_TIME_BUDGET_S, Limit
from pytest_tvmperf.measure.threads import same_threads, tvm_thread_count, tvm_threads
from pytest_tvmperf.builder.prepare import Prepared, Preparer, ProgressBar, no_progress
from pytest_tvmperf.values.node_ids import display_path
from pytest_tvmperf.values.record import IRRef, Record, Timing
from pytest_tvmperf.measure.plan import UNTIMED_NOTE, Mode, Plan, plan_for, summary_line, with_baseline_calls
from pytest_tvmperf.measure.reference import REFERENCE_NAME
from pytest_tvmperf.report.text import missing_baseline_message, peer_lines, regression_message, relation_message
from pytest_tvmperf.report.layers_text import with_layers
from pytest_tvmperf.report.outcome import Outcome, junit_properties
from pytest_tvmperf.session import TvmperfSession
from pytest_tvmperf.measure.sources import TimingSources
from pytest_tvmperf.store.files import BaselineError
from pytest_tvmperf.combos import Combo, TvmperfInconclusive, Variant
from pytest_tvmperf.report.workers import plain
from pytest_tvmperf.workload import Workload
from pytest_tvmperf.config.parsing import TIME_METRIC

#: the plan of a test that is timed (measure/plan.py)
TIMED = Plan(Mode.TIMED)
#: the verdicts of metrics that were compared with the baseline
_GATED = (Verdict.PASS, Verdict.IMPROVED, Verdict.REGRESSED)


def ir_ref(pending: PendingArtifact, baseline_dir: Path) -> IRRef:
    """The entry's ``ir`` field for a pending IR file (with the weights stored apart from it)."""
    ref = getattr(pending, "ref", None)
    return ref(baseline_dir) if ref is not None else IRRef(str(pending.final.relative_to(baseline_dir)), pending.sha256)


@dataclass(frozen=True)
class Timed:
    """What :meth:`Tvmperf.measure_time` measured: the samples, the record they make, the
    confirmation's re-measure (both programs loaded anew), today's exported build."""

    samples: TimeSamples
    make_record: Callable[..., Record]
    remeasure: Callable[[], TimeSamples]
    pending: PendingArtifact | None


@dataclass
class Tvmperf:
    """The ``tvmperf`` fixture: ``tvmperf.check(workload)`` once per test."""

    session: TvmperfSession
    combo: Combo
    nodeid: str
    test_id: str
    baseline_file: Path
    thresholds: Mapping[str, Limit]
    timer: Timer
    location: tuple[str, int] = ("", 0)
    user_properties: list = field(default_factory=list)
    peer_limits: Mapping[str, float] = field(default_factory=dict)
    progress: ProgressBar = no_progress
    #: False: correctness and exact metrics only (--tvmperf-timing=off, marker timing=False)
    timing: bool = True
    _checked: bool = False
    _ratios: int = 0
    _peers_timed: tuple[str, ...] = ()
    _outcome_id: str = ""  # the summary id of the assert_ratio under way
    _peers_unconfirmed: frozenset[str] = frozenset()
    _threads_note: str = ""  # the summary's word when timing fell back to fewer threads
    #: seconds one test's time measurement may take (--tvmperf-time-budget, marker time_budget=)
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    _rounds: RoundsPlan | None = None  # the rounds of the last measure_time (measure/budget.py)
    _budget_note: str = ""  # the rounds the budget allowed and the precision they reached
    _prep: Preparer | None = None
    _sources: TimingSources | None = None
    simulate: str | None = None  # the test's marker simulate= (measure/simulate.py)
    _layers_prep: Prepared | None = None  # what the per-layer tables time (measure/peer_layers.py)

    @property
    def preparer(self) -> Preparer:
        if self._prep is None:
            self._prep = Preparer(self.session, self.target, self.nodeid, self.fail, self.progress,
                                  baseline_tuning=lambda: getattr(self.stored_baselines().get(self.test_id), "tuning", None))
        return self._prep

    @property
    def sources(self) -> TimingSources:
        if self._sources is None:
            self._sources = TimingSources(self.session, self.nodeid, self.test_id, self.executor, self.target,
                                          self.baseline_file, self.peer_limits, self.fail, self.preparer.exports)
        return self._sources

    def _prepare(self, workload: Workload, executor_name: str, where: str) -> Prepared:
        __tracebackhide__ = True
        return self.preparer.prepare(workload, executor_name, where)

    def variant(self, workload: Workload, executor: str | None = None, label: str | None = None) -> Variant:
        """``workload`` under another executor, for :meth:`assert_ratio`."""
        if executor is not None:
            get_executor(executor)  # an unknown name is an error here, not at timing
        return Variant(workload, executor, label)

    def add_outcome(self, outcome: Outcome) -> Outcome:
        """Keep the outcome for the summary and reports, and put its figures on the
        test's JUnit XML properties."""
        outcome = replace(outcome, location=self.location)
        self.session.report.add(outcome)
        if outcome.comparison is not None:
            self.session.report.not_measured.update(outcome.comparison.held_setups())
        # builtin types only: xdist sends the properties to the controller
        self.user_properties.extend((name, plain(value)) for name, value in junit_properties(outcome))
        return outcome

    @property
    def executor(self) -> str:
        return self.combo.executor

    @property
    def target(self) -> str:
        return self.combo.target

    def fail(self, verdict: str, message: str, **fields) -> None:
        __tracebackhide__ = True
        self.add_outcome(Outcome(self.nodeid, self._outcome_id or self.test_id, self.executor, self.target, verdict,
                                 message=message, **fields))
        pytest.fail(message, pytrace=False)

    def exact_metrics(self, prep: Prepared, runs: bool = True) -> ExactMetrics:
        """The exact metrics of a prepared workload, with the metric sources' per-kernel
        counts; ``runs``: the program runs here, so its executed calls are counted."""
        exact = replace(prep.compiled.static_metrics(), calls=prep.compiled.executed_calls(prep.args) if runs else None)
        settings = self.session.settings
        if self.simulate is not None:  # the test's marker: over the ini, under the command line
            settings = replace(settings, ini_simulate=self.simulate)
        collected = collect_kernel_metrics(self.session.metric_sources(), prep, settings)
        self.session.report.not_measured.update(collected.skipped)
        from pytest_tvmperf.measure.unmeasured import settle  # kept on update, failed when the tool died (issue 23)

        return settle(self, replace(exact, per_kernel=collected.per_kernel, measured_with=collected.measured_with), collected)

    def check(self, workload: Workload) -> Outcome:
        """Compile ``workload`` for this test's executor and target, check its output
        against the NumPy reference, measure it and gate it against the baseline.

        Fails the test on a compile error, a wrong or non-finite output, a missing
        baseline or a regression; skips it when the combination cannot run here."""
        __tracebackhide__ = True
        if self._checked:
            raise RuntimeError("tvmperf.check() was already called in this test: use one check per test (one baseline entry per test id)")
        self._checked = True
        if not isinstance(workload, Workload):
            raise TypeError(f"tvmperf.check() takes a pytest_tvmperf.Workload, got {type(workload).__name__}")
        where = f"{workload.name} on {self.target}/{self.executor}"
        prep = self._prepare(workload, self.executor, where)
        if self.session.against is not None:  # --tvmperf-against-tvm: another TVM version's build in the baseline's place
            return self.session.against.check(self, prep)
        plan = plan_for(prep.target.runnable, prep.target.not_run, self.timing)
        if not plan.time:  # timing off, or a target built but not run here (cuda without a GPU)
            return self._check_untimed(prep, plan)
        peers = self.sources.peer_samplers(prep, where)
        exact = self.exact_metrics(prep)
        baseline = self.stored_baselines().get(self.test_id)
        notes: list[str] = []
        # Time the artifact as a later run will load it (exported and loaded back), so
        # a/b timing compares like with like: a JIT-compiled module in memory runs a few
        # percent apart from the same code loaded from a shared library.
        timed = self.measure_time(
            prep, exact, baseline, lambda machine: (
                None if self.session.settings.update
                else self.sources.baseline_sampler(baseline, machine.fingerprint, prep.target, workload, prep.args,
                                                   prep.out_specs, notes, compiled=prep.compiled)),
            notes, peers)
        samples, make_record, pending = timed.samples, timed.make_record, timed.pending
        samples = self._confirm_peers(samples, timed.remeasure, notes)
        self._layers_prep = prep
        keep = pending is not None and self.sources.keeps_library
        if pending is not None and not keep:
            discard(pending)
        if self.session.settings.update:
            if keep:
                self.session.store.queue_artifact(pending)
            ir = self.sources.save_ir(prep.compiled)  # the ir form (the default): the IR, rebuilt where the gate runs
            if ir is not None:
                self.session.store.queue_artifact(ir)
            kept, screened = clean(samples)  # the baseline keeps the rounds the machine left alone
            busy = (f"recorded on a busy machine ({screened.describe()}): re-record on a quiet one for a "
                    f"trustworthy baseline" if screened is not None and screened.busy else "")
            budget = self._rounds.note() if self._rounds is not None else ""
            return self._record(make_record(kept, pending if keep else None, ir), "; ".join(n for n in (busy, budget) if n))
        return self._decide(make_record(samples), baseline, timed.remeasure, make_record, notes)

    def measure_time(self, prep: Prepared, exact: ExactMetrics, baseline: Record | None,
                     baseline_sampler: Callable, notes: list[str], peers: Mapping | None = None,
                     ab_source: str | None = None) -> "Timed":
        """The time measurement of every timed mode: today's build (exported and loaded
        back), the reference kernel and the program it is judged against
        (``baseline_sampler(machine)``: the baseline's, another TVM version's, or None)
        timed side by side in rounds, in looks that stop at a decisive pass (sequential
        sampling), at fewer threads on a machine too busy for the asked ones. The caller
        judges the samples (``Timed.make_record``, ``Timed.remeasure`` for the
        confirmation)."""
        compiled, target, args, out_specs = prep.compiled, prep.target, prep.args, prep.out_specs
        workload = prep.workload
        listing = compiled.listing()
        kernels = kernel_identities(compiled)
        with self.session.timing_lock(self.target):  # a network of seconds: its per-kernel times from one run
            per_kernel = kernel_times(compiled, args, runs=1 if (prep.run_s or 0) > 0.5 else 5)
        target_json = target.as_json()
        machine = current_machine(target_json) if target.remote is None else target.remote.machine(target_json)

        def make_record(samples: TimeSamples, artifact: PendingArtifact | None = None,
                        ir: PendingArtifact | None = None) -> Record:
            relpath = str(artifact.final.relative_to(self.session.settings.baseline_dir)) if artifact else None
            return Record(
                workload=workload.name,
                executor=self.executor,
                target=target_json,
                tvm_version=machine.tvm_version,
                exact=exact,
                timings={machine.fingerprint: Timing(machine, samples, relpath, artifact.sha256 if artifact else None)},
                compile_s=prep.compile_s,
                bytecode=listing,
                kernel_time_s=per_kernel,
                pipeline=workload.pipeline,
                tuning=prep.tuning.as_json() if prep.tuning else None,
                ir=ir_ref(ir, self.session.settings.baseline_dir) if ir else None,
                kernels=kernels,
            )

        pending = self.sources.export(compiled, machine.fingerprint)
        task = TimingTask(
            workload=(self.sources.placed_sampler(pending.temp, target, workload, self.executor, args, out_specs) if pending
                      else compiled.sampler(args, out_specs, self.session.settings.min_repeat_ms)),
            reference=self.session.reference_sampler(target),
            reference_name=REFERENCE_NAME,
            baseline=baseline_sampler(machine),
            peers=peers or {},
        )
        settings = self.session.settings
        # a network that runs for seconds is timed in fewer rounds, within the test's time budget
        run_s = sum(per_kernel.values()) if per_kernel else None
        heavy = 1 + (task.baseline is not None) + len(task.peers)
        self._rounds = plan_rounds(run_s, heavy, int(task.reference is not None), settings.repeat, self.time_budget_s,
                                   settings.min_repeat_ms / 1000)
        rounds = self._rounds.rounds
        threads: list[int | None] = [None]  # None: TVM's own thread count

        def measure(n: int, fresh: bool = False) -> TimeSamples:
            """``fresh``: a confirming re-measure, with both programs loaded anew (new
            memory placements), so it cannot inherit the first measurement's placement bias."""
            with self.session.timing_lock(self.target), tvm_thread_count(threads[0]), same_threads(tvm_threads()):
                got = self.timer(task.reloaded() if fresh else task, n)
            if target.remote is None:
                return got
            # this process's CPU wait says nothing about an RPC device's: the reference kernel,
            # timed on the device in the same rounds, stands in for it (judge/disturbance.py)
            return replace(got, preempted=device_disturbance(got.reference), screened_by="device")

        settled = self._settled(baseline, make_record, ab_source)
        samples = sample_in_looks(measure, rounds, settled).samples
        fewer = self._fewer_threads(samples, task) if target.remote is None else None  # the device's threads are its own
        if fewer is not None:
            threads[0], note = fewer
            notes.append(note)
            self._threads_note = f"timed at {threads[0]} TVM thread(s): machine busy"
            samples = sample_in_looks(measure, rounds, settled).samples
        self._peers_timed = tuple(sorted(peers or {}))
        return Timed(samples, make_record, lambda: measure(2 * rounds, fresh=True), pending)

    def assert_ratio(self, numerator: "Workload | Variant", denominator: "Workload | Variant", at_most: float) -> RatioVerdict:
        """Assert that ``numerator`` takes at most ``at_most`` times the time of
        ``denominator``, both compiled, checked and timed side by side in this process
        (e.g. dynamic batch vs static batch, compiled vs bytecode, bound vs run-time
        weights). Needs no baseline. Fails when the whole confidence interval of the
        ratio lies above ``at_most``; an interval across it is inconclusive
        (``--tvmperf-inconclusive``)."""
        __tracebackhide__ = True
        if not (isinstance(at_most, (int, float)) and 0 < at_most < float("inf")):
            raise ValueError(f"assert_ratio(at_most={at_most!r}): give the largest allowed time ratio, e.g. at_most=1.5")
        sides = [v if isinstance(v, Variant) else Variant(v) for v in (numerator, denominator)]
        self._ratios += 1  # the summary names it by test id; the message and JSON by its sides
        shown_id = f"{self.test_id} ratio" + (f" {self._ratios}" if self._ratios > 1 else "")
        self._outcome_id = shown_id
        try:
            return self._assert_ratio(sides, float(at_most), shown_id)
        finally:
            self._outcome_id = ""

    def _assert_ratio(self, sides: list["Variant"], at_most: float, shown_id: str) -> RatioVerdict:
        __tracebackhide__ = True
        preps = []
        for side in sides:
            executor = side.executor or self.executor
            preps.append(self._prepare(side.workload, executor, f"{side.workload.name} on {self.target}/{executor}"))
            if not preps[-1].target.runnable:
                pytest.skip(f"target {self.target}: {preps[-1].target.not_run}: a time ratio needs the program run")
        label = f"{sides[0].describe(self.executor)} / {sides[1].describe(self.executor)}"
        if not self.timing:  # both sides compiled and checked; the ratio is a time: not measured
            self.add_outcome(Outcome(self.nodeid, shown_id, self.executor, self.target, "not gated", note=UNTIMED_NOTE))
            return None  # type: ignore[return-value]
        samplers = []
        for i, prep in enumerate(preps):
            pending = self.sources.export(prep.compiled, "relation", side=f"ratio{self._ratios}.{i}")
            if pending is not None:
                samplers.append(self.sources.placed_sampler(pending.temp, prep.target, prep.workload, prep.executor, prep.args, prep.out_specs))
            else:
                samplers.append(prep.compiled.sampler(prep.args, prep.out_specs, self.session.settings.min_repeat_ms))
        task = TimingTask(workload=samplers[0], baseline=samplers[1])
        policy = self.session.time_policy()
        rounds = self.session.settings.repeat

        def judge(samples: TimeSamples) -> RatioVerdict:
            if samples.baseline is None:
                self.fail("error", f"tvmperf: {self.nodeid}: the timer returned no samples of the right side of "
                                   f"{label}: a tvmperf_timer must time TimingTask.baseline too")
            return relation_verdict(label, samples, float(at_most), policy.alpha, policy.noise_ratio)

        def measure(n: int, fresh: bool = False) -> TimeSamples:
            with self.session.timing_lock(self.target):
                return self.timer(task.reloaded() if fresh else task, n)

        checked = confirm(measure(rounds), lambda s: {label: judge(s)}, lambda: measure(2 * rounds, fresh=True),
                          self.session.settings.confirm)
        verdict = checked.verdicts[label]
        notes = [n for n in (confirmation_note(checked, label),) if n is not None]
        exact = [replace(p.compiled.static_metrics(), calls=p.compiled.executed_calls(p.args)) for p in preps]
        message = relation_message(label, verdict, exact[0], exact[1], notes)
        status = {"exceeded": "regressed"}.get(verdict.status, verdict.status)
        self.add_outcome(Outcome(self.nodeid, shown_id, self.executor, self.target, status,
                                 message=message if status != "pass" else "", relation=verdict))
        if verdict.status == "exceeded":
            pytest.fail(message, pytrace=False)
        if verdict.status == "inconclusive":
            self._inconclusive(message)
        return verdict

    def _check_untimed(self, prep: Prepared, plan: Plan) -> Outcome:
        """The rest of :meth:`check` for a mode without time: the same record and the same
        decision, from the measurements the plan takes (measure/plan.py)."""
        __tracebackhide__ = True
        session = self.session
        exact = self.exact_metrics(prep, runs=plan.runs)
        baseline = self.stored_baselines().get(self.test_id)
        if not plan.runs:
            exact = with_baseline_calls(exact, baseline)
            session.report.not_measured.add(summary_line(self.target, plan.why,
                                                         "recorded" if session.settings.update else "gated"))
        target_json = prep.target.as_json()
        record = Record(workload=prep.workload.name, executor=self.executor, target=target_json,
                        tvm_version=current_machine(target_json).tvm_version, exact=exact, timings={},
                        compile_s=prep.compile_s, bytecode=prep.compiled.listing(), kernel_time_s=None,
                        pipeline=prep.workload.pipeline, tuning=prep.tuning.as_json() if prep.tuning else None,
                        kernels=kernel_identities(prep.compiled))
        if session.settings.update:
            return self._record(record, plan.outcome_note(exact, None), plan)
        return self._decide(record, baseline, None, None, [], plan)

    def _confirm_peers(self, samples: TimeSamples, remeasure: Callable[[], TimeSamples], notes: list[str]) -> TimeSamples:
        """A gated peer past its limit (or unclear) is measured again, as a time
        regression is: the pooled samples decide, and a gate fails only when each
        measurement alone is past the limit too."""
        if not self.session.settings.confirm or not self.peer_limits:
            return samples
        policy = self.session.time_policy()

        def gated(s: TimeSamples) -> dict[str, RatioVerdict]:
            try:
                verdicts = peer_verdicts(s, self.peer_limits, policy.alpha, policy.noise_ratio, wanted=self._peers_timed)
            except ValueError:
                return {}  # reported by _peer_verdicts
            return {v.name: v for v in verdicts if v.limit is not None}

        checked = confirm(samples, gated, remeasure)
        if checked.second is None:
            return samples
        self._peers_unconfirmed = checked.disagreed
        for name, v in checked.first.items():
            if v.status != "pass" and name in checked.second:
                notes.append(f"peer {name}: first measurement {v.status} at {v.describe()}, then "
                             f"{checked.second[name].describe()}; the pooled samples decide")
        return checked.samples

    def _settled(self, baseline: Record | None, make_record,
                 ab_source: str | None = None) -> Callable[[TimeSamples], bool] | None:
        """When the time samples so far already decide the test (a pass: a slowdown of the
        threshold is ruled out, or time is not gated), for sequential sampling
        (judge/gate.py :func:`sample_in_looks`); None when every round is needed: a
        recording run, no baseline, or peers to gate (their ratios need every round)."""
        if self.session.settings.update or baseline is None or self.peer_limits:
            return None
        policy, limit = self.session.time_policy(), self.thresholds["time"]

        def settled(samples: TimeSamples) -> bool:
            verdict = compare_time(make_record(samples), baseline, limit, policy, ab_source or self.sources.ab_source)
            return verdict.status in (Verdict.PASS, Verdict.NOT_GATED)
        return settled

    def _fewer_threads(self, samples: TimeSamples, task: TimingTask) -> tuple[int, str] | None:
        """A multi-threaded kernel on a machine too busy to give it its threads (one
        descheduled thread stalls the kernel at its barrier): time at one thread instead,
        both sides of the a/b pair alike. Only for the a/b comparison, whose two sides
        share the thread pool; stored samples of another thread count are not comparable."""
        asked = tvm_threads()
        if asked <= 1 or task.baseline is None or self.session.settings.update:
            return None
        _, screened = clean(samples)
        if screened is None or not screened.busy:
            return None
        return 1, (f"timed at 1 of {asked} TVM threads, both sides alike: the machine could not give {asked} "
                   f"({screened.share_disturbed:.0%} of samples preempted at {asked})")

    def _inconclusive(self, message: str) -> None:
        __tracebackhide__ = True
        policy_name = self.session.settings.inconclusive
        if policy_name == "fail":
            pytest.fail(message + "\n(--tvmperf-inconclusive=fail)", pytrace=False)
        if policy_name == "warn" and self.session.warns_inconclusive:  # else one summary line counts them
            warnings.warn(TvmperfInconclusive(message), stacklevel=2)

    def stored_baselines(self) -> dict[str, Record]:
        __tracebackhide__ = True
        try:  # read even when updating: a broken file is reported, never overwritten
            return self.session.store.baselines(self.baseline_file)
        except BaselineError as exc:
            problem = str(exc)
        self.fail("error", f"tvmperf: {problem}")  # outside the except: no chained traceback
        raise AssertionError("unreachable")  # pragma: no cover

    def _peer_verdicts(self, record: Record) -> tuple[RatioVerdict, ...]:
        policy = self.session.time_policy()
        try:
            verdicts = peer_verdicts(record.timing.samples, self.peer_limits, policy.alpha, policy.noise_ratio,
                                     wanted=self._peers_timed)
        except ValueError as exc:
            self.fail("error", f"tvmperf: {self.nodeid}: {exc}")
        # a gate the confirmation re-measure did not bear out (each measurement alone
        # past the limit) is inconclusive, not failed
        return tuple(v.held() if v.name in self._peers_unconfirmed and v.status == "exceeded" else v
                     for v in verdicts)

    def _layers(self, record: Record, peers: tuple[RatioVerdict, ...]) -> tuple:
        """The per-layer tables against the peers (issue 35): asked for, or a peer limit failed."""
        if self._layers_prep is None or not peers:
            return ()
        from pytest_tvmperf.measure.peer_layers import for_test

        return for_test(self, self._layers_prep, record.timing.samples if record.timing else None, peers)

    def _gate_peers(self, peers: tuple[RatioVerdict, ...], message: str) -> None:
        """Fail when TVM takes more than ``vs_<peer>`` times a peer's time."""
        __tracebackhide__ = True
        if any(p.status == "exceeded" for p in peers):
            pytest.fail(message, pytrace=False)
        if any(p.status == "inconclusive" for p in peers):
            self._inconclusive(message)

    def _record(self, record: Record, note: str = "", plan: Plan = TIMED) -> Outcome:
        __tracebackhide__ = True
        self.session.store.queue_update(self.baseline_file, self.test_id, record)
        peers = self._peer_verdicts(record) if plan.time else ()
        gated = [p for p in peers if p.status in ("exceeded", "inconclusive")]
        message = ""
        if gated:
            message = "\n".join([f"tvmperf: {self.nodeid}: TVM against its peer frameworks (baseline recorded all the same)",
                                  *peer_lines(peers)])
        layers = self._layers(record, peers)
        if message:
            message = with_layers(message, layers)
        outcome = self.add_outcome(Outcome(self.nodeid, self.test_id, self.executor, self.target,
                                           "slower than peer" if any(p.status == "exceeded" for p in peers) else "recorded",
                                           record=record, peers=peers, message=message, note=note, layers=layers))
        if gated:
            self._gate_peers(peers, message)
        return outcome

    def _decide(self, record: Record, baseline: Record | None, remeasure, make_record, notes: list[str],
                plan: Plan = TIMED) -> Outcome:
        """Compare ``record`` with ``baseline`` and decide the test, for every mode: a timed
        record's time is judged (and confirmed by ``remeasure``); a mode without time
        compares the rest (measure/plan.py)."""
        __tracebackhide__ = True
        shown_path = display_path(self.baseline_file, self.session.rootpath)
        if baseline is None:
            self.fail("no baseline", missing_baseline_message(self.nodeid, self.test_id, shown_path,
                                                                  self.session.accept_command(self.nodeid)), record=record,
                      note="no baseline: run pytest --tvmperf-update to create it")
        extra, tuning_note = pipeline_notes(
            baseline.pipeline, record.pipeline, dict(baseline.target) == dict(record.target),
            (baseline.tuning or {}).get("records_hash"), (record.tuning or {}).get("records_hash"),
            (record.tuning or {}).get("source", ""))
        notes.extend(extra)
        policy = self.session.time_policy()
        if plan.time:
            def judge(samples: TimeSamples) -> dict[str, MetricVerdict]:
                return {"time": compare_time(make_record(samples), baseline, self.thresholds["time"], policy,
                                             self.sources.ab_source)}

            checked = confirm(record.timing.samples, judge, remeasure, self.session.settings.confirm)
            record = make_record(checked.samples)
            time_verdict = checked.verdicts["time"]
            if (note := confirmation_note(checked)) is not None:
                notes.append(note)
            if self._rounds is not None and self._rounds.cut:  # a network timed within its budget: how precise
                d = time_verdict.decision
                self._budget_note = self._rounds.note(precision(d.low, d.high, d.ratio) if d is not None else None)
                notes.append(self._budget_note)
        else:
            time_verdict = MetricVerdict(TIME_METRIC, Verdict.NA, None, None,
                                         "timing off" if plan.mode == Mode.UNTIMED else self.thresholds[TIME_METRIC].describe())
        comparison = compare(record, baseline, self.thresholds, policy,
                             self.sources.ab_source if plan.time else "artifact").with_verdict(time_verdict)
        outcome_note = plan.outcome_note(record.exact, sum(v.status in _GATED for v in comparison.verdicts))
        if plan.mode == Mode.UNTIMED:  # and what the simulated cost did in the time's place
            outcome_note = "; ".join(n for n in (outcome_note, simulated_gate_note(Verdict.NOT_GATED, comparison)) if n)
        if not plan.time:
            notes.append(plan.message_note(outcome_note))
        peers = self._peer_verdicts(record) if plan.time else ()
        decided = whole_verdict(comparison.status, bool(comparison.regressions), comparison.inconclusive,
                                [p.status for p in peers])
        if not decided.peers_lead:
            message = regression_message(self.nodeid, shown_path, record, baseline, comparison, notes,
                                         self.session.accept_command(self.nodeid))
            if peers:
                message += "\nagainst peer frameworks, timed side by side:\n" + "\n".join(peer_lines(peers))
        else:
            word = "slower than its limit against" if decided.fails else "not clearly within its limit against"
            message = "\n".join([f"tvmperf: {self.nodeid}: TVM is {word} a peer framework (timed side by side; "
                                  f"the baseline comparison passed)", *peer_lines(peers), *(f"  note: {n}" for n in notes)])
        layers = self._layers(record, peers)
        message = with_layers(message, layers)
        outcome = self.add_outcome(Outcome(
            self.nodeid, self.test_id, self.executor, self.target, decided.verdict, record=record, baseline=baseline,
            comparison=comparison, message=message if decided.shown else "", peers=peers, layers=layers,
            note=outcome_note or "; ".join(n for n in (self._budget_note, summary_note(self._threads_note, time_verdict.status, time_verdict.reason,
                                                                    time_verdict.note, tuning_note),
                                                       simulated_gate_note(time_verdict.status, comparison)) if n)))
        if decided.fails:
            pytest.fail(message, pytrace=False)
        if decided.open:
            self._inconclusive(message)
        return outcome
