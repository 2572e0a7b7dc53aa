"""Today's side of ``--tvmperf-against-tvm=VERSION``: each test's build by today's TVM
timed side by side with the other version's build, which stands where a baseline would
(the same thresholds, confirmation, ``inconclusive`` and simulated-cost gate), every
exact and simulated metric compared, and the verdict worded as an upgrade;
``--tvmperf-against-tvm-report-only`` reports without failing. :class:`AgainstPlugin` is
registered in ``pytest_configure`` only with the option: the other environment is made
(or found) at the start, a bad version being one usage error; its pass runs at the first
test (run.py); the upgrade summary goes to the terminal and, once at the end, into the
report files (reports.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pytest

from pytest_tvmperf.against import upgrade as words
from pytest_tvmperf.against.env import OtherEnv
from pytest_tvmperf.against.run import OtherBuilds, pass_bound_s, read_pass, run_dir, run_pass
from pytest_tvmperf.store.sweep import claim
from pytest_tvmperf.values.remote_names import is_remote

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.result.run_report import ReportSection
    from pytest_tvmperf.result.entry import ResultEntry
    from pytest_tvmperf.check.context import AgainstSide, CheckContext
    from pytest_tvmperf.session import TvmperfSession

_LLVM = re.compile(r"LLVM \d+")
#: the xdist worker input that names the controller's pass directory
RUN_KEY = "tvmperf_against_run"


def same_setup(now: dict[str, str], then: dict[str, str]) -> dict[str, str]:
    """The other build's ``measured_with`` where it differs from today's only in LLVM's
    version: each TVM version brings its own LLVM, and what that does to the generated
    code is part of the upgrade, so those counts are compared, not held."""
    out = dict(then)
    for metric, setup in then.items():
        if metric in now and _LLVM.sub("LLVM", setup) == _LLVM.sub("LLVM", now[metric]):
            out[metric] = now[metric]
    return out


def child_options(settings, config: pytest.Config) -> list[str]:
    """The options today's run was given that decide what the child builds and how."""
    opts = [
        f"--tvmperf-targets={','.join(settings.targets)}",
        f"--tvmperf-executors={','.join(settings.executors)}",
        f"--tvmperf-hypothesis-examples={settings.hypothesis_examples}",
        f"--tvmperf-baselines={settings.baseline_dir}",
        f"--tvmperf-tuning-db={settings.tuning_db}",
        f"--tvmperf-child-timeout={settings.child_timeout}",
    ]
    if "simulate" in settings.pinned:  # the child reads the same ini itself
        opts.append(f"--tvmperf-simulate={settings.simulate}")
    if settings.llvm_target is not None:
        opts.append(f"--tvmperf-llvm-target={json.dumps(dict(settings.llvm_target))}")
    if config.option.keyword:
        opts += ["-k", config.option.keyword]
    if config.option.markexpr:
        opts += ["-m", config.option.markexpr]
    return opts


class AgainstPlugin:
    """Today's side: owns the other environment, its pass, and the upgrade summary."""

    def __init__(self, config: pytest.Config, session: "TvmperfSession", env: OtherEnv, report_only: bool) -> None:
        self.config, self.session, self.env, self.report_only = config, session, env, report_only
        self.nodeids: list[str] = []
        self._builds: OtherBuilds | None = None
        self.worker = hasattr(config, "workerinput")
        #: names the directory of the other version's pass: the controller's run id, handed to
        #: its xdist workers (pytest_configure_node), so they share one pass and it removes it
        self.run_key = getattr(config, "workerinput", {}).get(RUN_KEY) or session.run_id
        #: the controller holds the pass's directory for the run (a later run's sweep keeps it)
        self._pass_dir = None if self.worker else claim("against", self.run_key)

    @property
    def other(self) -> str:
        return self.env.tvm_version

    @property
    def today(self) -> str:
        import tvm

        return str(tvm.__version__)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from pytest_tvmperf.combos import combo_of

        self.nodeids = [item.nodeid for item in session.items if combo_of(item) is not None]

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        node.workerinput[RUN_KEY] = self.run_key

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker:
            return
        if self._pass_dir is not None:
            self._pass_dir.remove()
            self._pass_dir = None
        Path(str(run_dir(self.run_key)) + ".lock").unlink(missing_ok=True)

    def report_section(self, entries: Sequence["ResultEntry"]) -> "ReportSection | None":
        """The upgrade summary's part of the report files (``RunReport.section_makers``)."""
        from pytest_tvmperf.against.reports import upgrade_section

        return upgrade_section(upgrade_summary(entries, self.today, self.other), entries)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.worker:
            return
        from pytest_tvmperf.report.terminal import upgrade_lines

        summary = upgrade_summary(self.session.report.result_entries(), self.today, self.other)
        lines = summary.lines() if summary.rows else ()
        for line in upgrade_lines(summary.today, summary.other, lines, self.report_only):
            line.write_to(terminalreporter)

    def builds(self) -> OtherBuilds:
        if self._builds is None:
            session, out = self.session, run_dir(self.run_key)
            if (out / "results.json").exists():
                self._builds = read_pass(out, self.other)
            else:
                self._builds = run_pass(
                    self.env,
                    self.nodeids,
                    session.rootpath,
                    self.config.inipath,
                    child_options(session.settings, self.config),
                    out,
                    bound_s=pass_bound_s(len(self.nodeids), session.settings.lock_timeout),
                    on_wait=session.store.say,
                )
        return self._builds

    def check(self, ctx: "CheckContext", prep: "Prepared"):
        """Time today's build of ``prep`` against the other version's (the :class:`BaselineSource`),
        compare every metric, and decide by the check pipeline's conclusion (check/decide.py)."""
        __tracebackhide__ = True
        from pytest_tvmperf.builder.timer import TimeSamples
        from pytest_tvmperf.check import pipeline
        from pytest_tvmperf.check.baseline import BaselineSource
        from pytest_tvmperf.check.decide import Decision, conclude, confirm_time
        from pytest_tvmperf.check.timed import measure_time
        from pytest_tvmperf.store.artifacts import discard
        from pytest_tvmperf.judge.metric_verdict import Comparison
        from pytest_tvmperf.judge.compile_verdict import versions_verdict
        from pytest_tvmperf.judge.confirmation import whole_verdict
        from pytest_tvmperf.values.resources import COMPILE_S
        from pytest_tvmperf.measure.host_machine import current_machine
        from pytest_tvmperf.values.record import Record, Timing

        session, other = ctx.session, self.other
        if not prep.target.runnable or prep.target.remote is not None:
            pytest.skip(f"--tvmperf-against-tvm times both builds on this machine's CPU; target {ctx.target} is not")
        build = self.builds().get(ctx.nodeid)
        if build.status != "built":
            self._not_compared(ctx, f"TVM {other} could not build it ({build.status})", build.error)
        then = Record.from_json(build.record)
        exact = pipeline.exact_metrics(ctx, prep)
        measured_with = same_setup(dict(exact.measured_with), dict(then.exact.measured_with))
        then = replace(then, exact=replace(then.exact, measured_with=measured_with))
        # the other build: run once in the child first (a crash there is not this session's), then loaded here
        copy = session.scratch_dir() / f"tvm-{other}-{build.library.name}"
        shutil.copyfile(build.library, copy)
        got: list = []
        problem = ctx.sources.try_library(
            copy, prep.target, prep.workload, prep.args, prep.out_specs, f"the build of TVM {other}", got
        )
        machine = current_machine(prep.target.as_json())
        policy = session.time_policy()
        notes: list[str] = []
        note = f"a/b: today's build and TVM {other}'s build timed side by side in this process"
        source = BaselineSource(then, got[0] if got else None, "rebuilt", mode=words.mode(other), note=note)
        if problem is not None:  # e.g. a vm-compiled build of 0.25.0 dies loading in 0.27: its counts still compare
            problem = problem.replace(" (re-record with --tvmperf-update)", "")  # a baseline's fix, not this mode's
            record = pipeline.build_record(ctx.executor, prep, exact)  # the record of a mode without time
            comparison = source.compare(record, ctx.settings.thresholds, policy)
            time_verdict = comparison.get("time")
            notes.append(f"time not compared: {problem}")
        else:
            # timed side by side, confirmed and compared as every timed mode does (check/timed.py, check/decide.py)
            measured = measure_time(ctx, prep, exact, lambda _machine: source, notes)
            if measured.pending is not None:
                discard(measured.pending)
            judged = confirm_time(measured, source, ctx.settings.thresholds["time"], policy, session.settings.confirm)
            record, time_verdict = judged.record, judged.verdict
            comparison = source.compare(record, ctx.settings.thresholds, policy).with_verdict(time_verdict)
            notes.extend(n for n in (judged.note,) if n)
            then = replace(then, kernel_time_s=self._kernel_times(ctx, prep, copy))
        moved = words.changes(comparison.verdicts, record.exact.per_kernel, then.exact.per_kernel)
        ratio = time_verdict.decision.ratio if time_verdict.decision is not None else None
        compared = [v.metric for v in comparison.verdicts if v.metric != "time" and None not in (v.current, v.baseline)]
        moving = str(time_verdict.status) in ("regressed", "improved")
        time_kernel = words.kernel_time_moved(record.kernel_time_s, then.kernel_time_s) if moving else ""
        line = words.upgrade_line(self.today, other, str(time_verdict.status), ratio, moved, compared, time_kernel)
        if problem is not None:
            line = line.replace("time not compared", f"time not compared ({problem.split(';')[0]})", 1)
        if time_verdict.reason:
            notes.append(time_verdict.reason)
        # both versions' build times side by side in the reports (after the upgrade line: not one of its changes)
        if COMPILE_S in ctx.settings.resources:
            built = versions_verdict(then.compile_s, record.compile_s, other, self.today)
            comparison = Comparison((*comparison.verdicts, built))
            notes.append(built.note)
        message = self.message(ctx, record, then, comparison, line, notes)
        if record.timing is not None and record.timing.samples.baseline:  # the other build's samples, for the reports
            s = record.timing.samples
            theirs = TimeSamples(tuple(s.baseline), s.reference, s.reference_name)
            # under this run's machine (the record's tvm_version names the other version)
            then = replace(then, timings={machine.fingerprint: Timing(machine, theirs)})
        decided = whole_verdict(comparison.status, bool(comparison.regressions), comparison.inconclusive, ())
        decision = Decision.judged(
            decided, record=record, baseline=then, comparison=comparison, message=message, note=line
        )
        if self.report_only:
            decision = replace(decision, fails=False, open=False)
        return conclude(decision, ctx.identity, ctx.add_outcome, ctx.inconclusive)

    @staticmethod
    def _kernel_times(ctx: "CheckContext", prep: "Prepared", library: Path) -> dict[str, float] | None:
        """Seconds a run in each kernel of the other version's build (``library``, already
        run in the isolation child and loaded here), measured in this process like today's
        (``vm-bytecode``: the VM's instrument; None where the executor has no per-call hook)."""
        from pytest_tvmperf.builder.executors import load_artifact
        from pytest_tvmperf.builder.timer import kernel_times

        try:
            with ctx.session.timing_lock(ctx.target):
                program = load_artifact(str(library), ctx.executor, prep.workload.entry, prep.target)
                return kernel_times(program, prep.args)
        except Exception:  # the diagnosis is a help, never the failure
            return None

    def message(self, ctx: "CheckContext", record, then, comparison, line: str, notes: Sequence[str]) -> str:
        """The test's upgrade verdict, then each metric that moved, as a baseline's
        regression message shows it (the other version in the baseline's place)."""
        from pytest_tvmperf.result.regression import verdict_lines

        lines = [
            f"tvmperf: {ctx.nodeid}: {line}",
            f"  (TVM {self.other}'s build stands where the baseline would: left of each arrow)",
        ]
        for v in comparison.verdicts:
            moved = v.metric == "time" or (v.current is not None and v.baseline is not None and v.current != v.baseline)
            if moved and v.status != "n/a":
                try:
                    lines += verdict_lines(v, record, then)
                except Exception:  # the diagnosis is a help, never the failure
                    lines.append(f"  {v.metric} {v.baseline} -> {v.current} ({v.status})")
        lines += [f"  note: {n}" for n in notes]
        if not self.report_only:
            lines.append("  to report the upgrade without failing: --tvmperf-against-tvm-report-only")
        return "\n".join(lines)

    def _not_compared(self, ctx: "CheckContext", what: str, error: str) -> None:
        __tracebackhide__ = True
        from pytest_tvmperf.result.outcome import Outcome

        first = error_line(error)
        note = f"not compared: {what}" + (f": {first}" if first else "")
        message = f"tvmperf: {ctx.nodeid}: {what}; its error there:\n{error}" if error else ""
        ctx.add_outcome(
            Outcome(ctx.nodeid, ctx.test_id, ctx.executor, ctx.target, "not gated", note=note[:500], message=message)
        )
        pytest.skip(note[:2000])


def error_line(error: str) -> str:
    """The line of a test report that says what went wrong: pytest's last ``E`` line
    (``AttributeError: module 'tvm' has no attribute 's_tir'``), else the last line."""
    lines = [line.rstrip() for line in error.splitlines() if line.strip()]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (marked[-1] if marked else lines[-1].strip() if lines else "")[:300]


def upgrade_summary(entries: Sequence["ResultEntry"], today: str, other: str) -> words.UpgradeSummary:
    """The suite's upgrade summary from the run's result entries (its xdist workers' too)."""
    rows = []
    for e in entries:
        if e.relation is not None:
            continue
        time = next((m for m in e.metrics if m.metric == "time"), None)
        counts = any(m.status == "regressed" for m in e.metrics if m.metric != "time")
        timed = time is not None and e.time is not None and e.time.ratio
        cls = words.classify(time.status if timed else None, counts)
        if not timed and cls == "not compared" and any(m.metric != "time" for m in e.metrics):
            cls = "exact only"  # the other build was made but cannot run here: its counts were compared
        ratio, low, high = (e.time.ratio, e.time.low, e.time.high) if e.time is not None else (None, None, None)
        past = any(m.status == "regressed" for m in e.metrics)
        rows.append(words.UpgradeRow(e.test_id or e.nodeid, cls, e.note or str(e.verdict), ratio, low, high, past))
    return words.UpgradeSummary(today, other, tuple(rows))


def configure(config: pytest.Config, session: "TvmperfSession") -> "AgainstSide | None":
    """``pytest_configure``: the export side in the other version's child run; with
    ``--tvmperf-against-tvm=VERSION``, that version's environment (a version that cannot be
    installed is one usage error) and today's side. Returns the side that takes each test
    over after compiling (None: neither)."""
    import sys

    from pytest_tvmperf.against import export
    from pytest_tvmperf.against.env import EnvError, ensure_env

    if os.environ.get(export.ENV_EXPORT):  # the other version's child run: the export side
        exporter = export.Exporter(Path(os.environ[export.ENV_EXPORT]))
        config.pluginmanager.register(exporter, "tvmperf-against-export")
        return exporter
    settings = session.settings
    version = settings.against_tvm
    if version is None:
        return None
    if settings.update:
        raise pytest.UsageError(
            "pytest-tvmperf: --tvmperf-against-tvm compares today's TVM with another version and "
            "records no baseline: drop --tvmperf-update"
        )
    if any(is_remote(t) or t != "llvm" and not t.startswith("llvm") for t in settings.targets):
        raise pytest.UsageError(
            f"pytest-tvmperf: --tvmperf-against-tvm times both builds on this machine's CPU: "
            f"select llvm targets only (--tvmperf-targets={','.join(settings.targets)})"
        )
    log = lambda line: print(line, file=sys.stderr, flush=True)
    try:
        env = ensure_env(version, log=log, packages=tuple(settings.against_tvm_packages or ()))
    except EnvError as exc:
        raise pytest.UsageError(
            f"pytest-tvmperf: --tvmperf-against-tvm={version}: the environment of apache-tvm "
            f"{version} cannot be made: {exc}"
        ) from None
    plugin = AgainstPlugin(config, session, env, bool(settings.against_tvm_report_only))
    session.report.section_makers.append(plugin.report_section)
    config.pluginmanager.register(plugin, "tvmperf-against")
    return plugin
