"""The run's session-level hooks, one plugin object registered by plugin.py for a tvmperf run:
collection, the xdist hand-over, writing baselines and reports, the terminal summary."""

from __future__ import annotations

import pytest

from pytest_tvmperf.report import outputs, workers
from pytest_tvmperf.config.markers import marker_settings
from pytest_tvmperf.result.outcome import producible_ids
from pytest_tvmperf.values.run_notes import Note
from pytest_tvmperf.combos import FIXTURE, Combo, combo_of
from pytest_tvmperf.session import TvmperfSession
from pytest_tvmperf.store.files import baseline_path
from pytest_tvmperf.store.baseline_store import lock_error_text
from pytest_tvmperf.store.locks import LockError
from pytest_tvmperf.values.node_ids import test_id


class TvmperfPlugin:
    """Owns the run's :class:`TvmperfSession` (also in ``config.stash``) and its hooks."""

    def __init__(self, session: TvmperfSession) -> None:
        self.session = session
        self.left_out = None  # never_run.LeftOut of this collection
        #: --tvmperf-baselines-ref: the ref's baseline file -> its entries whose tests did not run (not gated)
        self.not_run_at_ref: dict = {}

    def _quiet_logs(self, item: pytest.Item):
        """Third-party DEBUG/INFO logging kept out of a tvmperf test's captured output
        (report/third_party_logs.py), unless the user set pytest's log level."""
        from pytest_tvmperf.report.third_party_logs import quiet_third_party, user_asked_for_logs

        if FIXTURE not in getattr(item, "fixturenames", ()) or user_asked_for_logs(item.config):
            return (yield)
        with quiet_third_party():
            return (yield)

    # innermost (trylast): pytest's logging plugin has put its capture handlers in place
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        return (yield from self._quiet_logs(item))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item):
        return (yield from self._quiet_logs(item))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item):
        return (yield from self._quiet_logs(item))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        """Leave out the combinations a test can never run (never_run.py)."""
        from pytest_tvmperf.never_run import left_out_items

        if not self.session.settings.update:
            items[:], self.left_out = left_out_items(self.session, items)

    def pytest_collection(self, session: pytest.Session) -> None:
        """Start the child that runs each new build first (sandbox/child.py) now, so it imports
        TVM while this process collects; not in an xdist controller or a collect-only run."""
        self.start_early_child(session.config)

    def start_early_child(self, config: pytest.Config) -> None:
        """:meth:`pytest_collection`'s work, for a plugin registered after collection began."""
        controller = getattr(config, "workerinput", None) is None and bool(getattr(config.option, "numprocesses", None))
        if not (controller or config.option.collectonly):
            self.session.sandbox().start()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the timed tests that will run (for the run-wide false-alarm rate) and note
        which baseline entries they use (for the unused-baseline listing)."""
        config = session.config
        state = self.session
        timed = [item for item in session.items if combo_of(item) is not None]
        # each gated peer (vs_<peer>) is one more comparison that can fail the run by chance
        gated_peers = sum(len(marker_settings(item).peer_limits) for item in timed)
        state.timed_tests = max(1, len(timed) + gated_peers)
        if not timed:  # nothing will run a build: the early child is not needed
            state.close_sandbox()
        for item in session.items:  # the skipped "none" of a test with no combination left counts too
            params = getattr(getattr(item, "callspec", None), "params", {})
            if FIXTURE in params:
                combo_id = params[FIXTURE].id if isinstance(params[FIXTURE], Combo) else "none"
                path = baseline_path(state.settings.baseline_dir, state.rootpath, item.path)
                state.store.collected.setdefault(path, set()).update(producible_ids(test_id(item.nodeid), combo_id))
        if config.option.keyword or config.option.markexpr or any("::" in str(a) for a in config.args):
            state.store.partial_run = True

    def pytest_deselected(self, items: list) -> None:
        if items:
            self.session.store.partial_run = True

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.session
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: hand its run report to the controller, whole
            workeroutput[workers.PAYLOAD_KEY] = workers.hand_over(state.report)
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            state.store.discard_pending()  # an interrupted run leaves every baseline file as it was
        else:
            try:
                if state.store.updates:
                    state.store.flush_updates()
                if workeroutput is None and state.settings.baselines_ref is None:  # not the ref's copy's
                    state.store.unused = state.store.find_unused()
                    try:
                        if state.settings.prune and state.store.unused:
                            state.store.prune(state.store.unused)
                        if state.settings.prune:  # then the files no entry names (a killed update's)
                            state.store.prune_orphans()
                    except LockError as exc:
                        state.write_errors.append(f"unused entries and artifacts not pruned: {lock_error_text(exc)}")
            except KeyboardInterrupt:  # Ctrl-C while writing: each file is whole (old or new); say which
                state.store.stop_writing()
        state.cleanup()
        if workeroutput is not None:
            store = state.store
            workeroutput["tvmperf_write_errors"] = ([str(e) for e in state.write_errors], store.unwritten, store.kept)
        else:
            s, report = state.settings, state.report
            entries = report.result_entries()  # built once, for the report files and the annotations
            for line in outputs.annotations(entries):
                report.note(line, Note.ANNOTATION)
            if s.baselines_ref is not None:  # the ref's entries whose tests did not run: not gated (issue 66)
                self.not_run_at_ref = state.store.not_judged(_judged(entries, s.baseline_dir, state.rootpath))
            ab_off = _ab_off_by_configuration(session.config, s, entries)
            if ab_off:
                report.note(ab_off, Note.CONFIG)
            # each file once, with what other parts of the run add to it (the upgrade summary)
            report_lines, errors = outputs.write_reports(
                entries,
                report.summary_rows(entries),
                json_path=s.json_path,
                html_path=s.html_path,
                history_path=s.history_path,
                history=report.history,
                benchmark_json_path=s.benchmark_json_path,
                sections=report.report_sections(entries),
                notes=list(report.notes(Note.CONFIG)),
                markdown_path=s.changes_md_path,
            )
            for line in report_lines:
                report.note(line, Note.REPORT_FILE)
            state.write_errors.extend(errors)
        if state.write_errors:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if state.store.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        """xdist controller: collect each worker's results entries, for one summary and one
        set of report files; a worker whose results did not arrive fails the run."""
        state = self.session
        output = getattr(node, "workeroutput", None) or {}
        errors, unwritten, kept = output.get("tvmperf_write_errors", ([], 0, 0))
        state.write_errors.extend(errors)
        state.store.unwritten += int(unwritten)
        state.store.kept += int(kept)
        payload, lost = workers.received(node, error)
        if lost is not None:
            state.write_errors.append(lost)
            return
        state.report.merge(payload)

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        """Write the lines report/terminal.py makes of this run."""
        from pytest_tvmperf.report import terminal

        for line in terminal.end_of_run(self.end_of_run(exitstatus)):
            line.write_to(terminalreporter)

    def end_of_run(self, exitstatus: int):
        """The run's values the end-of-run lines are made of (report/terminal.py): its report, whole."""
        from pytest_tvmperf.report.terminal import EndOfRun

        left_out = self.left_out.line() if self.left_out is not None else ""
        return EndOfRun.of(
            self.session,
            left_out,
            run_interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
            not_run=self.not_run_at_ref,
        )


def _judged(entries, baseline_dir, rootpath) -> dict:
    """Baseline file -> the test ids with a result in this run (xdist workers' included)."""
    judged: dict = {}
    for e in entries:
        module = rootpath / e.nodeid.split("::")[0]
        judged.setdefault(baseline_path(baseline_dir, rootpath, module), set()).add(e.test_id or test_id(e.nodeid))
    return judged


def _ab_off_by_configuration(config: pytest.Config, settings, entries) -> str | None:
    """The line saying the configuration switched a/b timing off (``tvmperf_artifacts =
    off``) while tests had no time baseline of this machine: no time gate at all."""
    if settings.artifact_dir is not None:
        return None
    not_gated = sum("no time baseline for this machine" in (e.note or "") for e in entries)
    if not not_gated:
        return None
    from pytest_tvmperf.config.gate_settings import ab_off_line

    if config.getoption("tvmperf_artifacts", None):
        where = f"--tvmperf-artifacts={config.getoption('tvmperf_artifacts')}"
    else:
        inifile = config.inipath.name if config.inipath is not None else "the pytest configuration"
        where = f"tvmperf_artifacts = {config.getini('tvmperf_artifacts')} in {inifile}"
    return ab_off_line(where, not_gated)
