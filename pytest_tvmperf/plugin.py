"""pytest hooks and the ``tvmperf`` fixture. TVM is imported only when a test runs."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import uuid
from typing import Callable, Iterator

import pytest

from . import options, outputs, workers
from .markers import MARKER, MARKER_KEYS, marker_settings  # noqa: F401  (MARKER_KEYS: kept importable here)
from .measure import Timer, TvmTimer
from .report import SummaryRow
from .results import ResultsError
from .runner import Combo, Tvmperf
from .outcome import producible_ids
from .session import TvmperfSession
from .store import baseline_path

SESSION_KEY = pytest.StashKey[TvmperfSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    options.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(executors=[...], targets=[...], time='25%', instructions=0, vs_torch=1.2, ...): "
        "restrict a tvmperf test's executors/targets, set its thresholds and its limits against peer frameworks",
    )
    try:
        settings = options.Settings.from_config(config)
        for path, option in ((settings.json_path, "--tvmperf-json"), (settings.html_path, "--tvmperf-html"),
                             (settings.history_path, "--tvmperf-history")):
            if path is not None:
                outputs.check_writable(path, option)
        history = outputs.read_history(settings.history_path) if settings.history_path else []
    except (ValueError, ResultsError) as exc:
        raise pytest.UsageError(f"pytest-tvmperf: {exc}") from None
    if settings.prune and not settings.update:
        raise pytest.UsageError("pytest-tvmperf: --tvmperf-prune removes baselines while updating: use it with --tvmperf-update")
    run_id = getattr(config, "workerinput", {}).get("testrunuid") or uuid.uuid4().hex
    config.stash[SESSION_KEY] = state = TvmperfSession(settings, config.rootpath, history=history, run_id=run_id)
    state.remove_leftovers()  # temporary files of crashed or killed runs
    state.update_options = options.passthrough_args(config.invocation_params.args)
    state.invocation_dir = config.invocation_params.dir


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tvmperf" not in metafunc.fixturenames:
        return
    settings = metafunc.config.stash[SESSION_KEY].settings
    marker = marker_settings(metafunc.definition)  # a bad marker is an error at collection
    executors = settings.executors if marker.executors is None else marker.executors
    targets = settings.targets if marker.targets is None else marker.targets
    chosen_executors = [e for e in settings.executors if e in executors]
    chosen_targets = [t for t in settings.targets if t in targets]
    combos = [Combo(t, e) for t in chosen_targets for e in chosen_executors]
    if combos:
        metafunc.parametrize("tvmperf", combos, ids=[c.id for c in combos], indirect=True)
    else:
        reason = (f"no executor x target left: the test allows executors {list(executors)} and targets {list(targets)}, "
                  f"the run selects {list(settings.executors)} and {list(settings.targets)}")
        metafunc.parametrize("tvmperf", [pytest.param(None, marks=pytest.mark.skip(reason=reason))],
                             ids=["none"], indirect=True)


@pytest.fixture
def tvmperf_timer(request: pytest.FixtureRequest) -> Timer:
    """How the tvmperf fixture times a compiled workload. Override this fixture to
    inject a timer (tests of the gate use one that cannot flake)."""
    return TvmTimer()


def _progress_bars(config: pytest.Config):
    """A tqdm progress bar on the terminal (through pytest's output capture) for long
    steps inside a test, such as tuning."""
    capman = config.pluginmanager.getplugin("capturemanager")

    def uncaptured():
        return capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()

    @contextlib.contextmanager
    def bar(desc: str) -> Iterator[Callable[[int, int], None]]:
        from tqdm import tqdm

        box: list = []

        def update(done: int, total: int) -> None:
            with uncaptured():
                if not box:
                    sys.stderr.write("\n")
                    box.append(tqdm(total=total, desc=desc, unit="trial", file=sys.stderr, dynamic_ncols=True))
                box[0].update(max(0, done - box[0].n))

        try:
            yield update
        finally:
            if box:
                with uncaptured():
                    box[0].close()

    return bar


@pytest.fixture
def tvmperf(request: pytest.FixtureRequest, tvmperf_timer: Timer) -> Tvmperf:
    """Compile, check, measure and gate a workload: ``tvmperf.check(workload)``."""
    combo = getattr(request, "param", None)
    if not isinstance(combo, Combo):
        raise pytest.UsageError("the tvmperf fixture must be requested by the test function (it is parametrized per executor x target)")
    session = request.config.stash[SESSION_KEY]
    node = request.node
    marker = marker_settings(node)  # parsed at collection (pytest_collection_finish)
    return Tvmperf(
        session=session,
        combo=combo,
        nodeid=node.nodeid,
        test_id="::".join(node.nodeid.split("::")[1:]),
        baseline_file=baseline_path(session.settings.baseline_dir, session.rootpath, node.path),
        thresholds=session.settings.thresholds(marker.thresholds),
        peer_limits=dict(marker.peer_limits),
        progress=_progress_bars(request.config),
        timer=tvmperf_timer,
        location=(node.location[0], (node.location[1] or 0) + 1),
        user_properties=node.user_properties,
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """Count the timed tests that will run (for the run-wide false-alarm rate) and note
    which baseline entries they use (for the unused-baseline listing)."""
    config = session.config
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    timed = [item for item in session.items
             if isinstance(getattr(getattr(item, "callspec", None), "params", {}).get("tvmperf"), Combo)]
    # each gated peer (vs_<peer>) is one more comparison that can fail the run by chance
    gated_peers = sum(len(marker_settings(item).peer_limits) for item in timed)
    state.timed_tests = max(1, len(timed) + gated_peers)
    for item in session.items:  # the skipped "none" of a test with no combination left counts too
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "tvmperf" in params:
            combo = params["tvmperf"]
            path = baseline_path(state.settings.baseline_dir, state.rootpath, item.path)
            state.collected.setdefault(path, set()).update(producible_ids(
                "::".join(item.nodeid.split("::")[1:]), combo.id if isinstance(combo, Combo) else "none"))
    if config.option.keyword or config.option.markexpr or any("::" in str(a) for a in config.args):
        state.partial_run = True


def pytest_deselected(items: list) -> None:
    if items:
        config = items[0].config
        state = config.stash.get(SESSION_KEY, None)
        if state is not None:
            state.partial_run = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the summary to the controller
        try:
            payload = workers.worker_payload([dataclasses.asdict(o.summary_row()) for o in state.outcomes.values()],
                                             state.result_entries(), sorted(state.peer_problems))
        except workers.PayloadError as exc:  # a bug: say so on the controller rather than crash the worker
            payload = {"error": f"its results could not be sent ({exc})"}
        workeroutput[workers.PAYLOAD_KEY] = payload
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.discard_pending()  # an interrupted run leaves every baseline file as it was
    else:
        if state.updates:
            state.flush_updates()
        if workeroutput is None:
            state.unused = state.find_unused()
            if state.settings.prune and state.unused:
                state.prune(state.unused)
    state.cleanup()
    if workeroutput is not None:
        workeroutput["tvmperf_write_errors"] = ([str(e) for e in state.write_errors], int(state.unwritten))
    if workeroutput is None:
        s = state.settings
        entries = state.result_entries()  # built once, for the report files and the annotations
        state.annotation_lines = outputs.annotations(entries)
        try:
            state.report_lines = outputs.write_reports(
                entries, state.summary_rows(), json_path=s.json_path, html_path=s.html_path,
                history_path=s.history_path, history=state.history)
        except OSError as exc:
            state.write_errors.append(f"reports not written: {exc}")
    if state.write_errors:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist controller: collect the rows each worker measured, for one summary; a
    worker whose results did not arrive fails the run."""
    state = node.config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    output = getattr(node, "workeroutput", None) or {}
    errors, unwritten = output.get("tvmperf_write_errors", ([], 0))
    state.write_errors.extend(errors)
    state.unwritten += unwritten
    payload, lost = workers.received(node, error)
    if lost is not None:
        state.write_errors.append(lost)
        return
    state.worker_rows.extend(SummaryRow(**row) for row in payload["rows"])
    state.worker_entries.extend(payload["results"])
    state.peer_problems.update(payload["peer_problems"])


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from .report import peer_table, summary_notes, summary_table

    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    for error in state.write_errors:
        terminalreporter.write_line(f"tvmperf: {error}", red=True)
    rows = state.summary_rows()
    if not rows:
        return
    if state.export_problem:
        terminalreporter.write_line(f"tvmperf: {state.export_problem}", yellow=True)
    for line in state.annotation_lines:
        terminalreporter.write_line(line)
    tr = terminalreporter
    tr.write_sep("-", "tvmperf summary")
    for line in summary_table(rows):
        tr.write_line(line)
    for line in summary_notes(rows):
        tr.write_line(line)
    peers = peer_table(rows)
    if peers:
        tr.write_sep("-", "tvmperf: TVM time / peer framework time, side by side (below 1: TVM is faster)")
        for line in peers:
            tr.write_line(line)
    for problem in sorted(state.peer_problems):
        tr.write_line(f"tvmperf: {problem}", yellow=True)
    for line in state.report_lines:
        tr.write_line(f"tvmperf {line}")
    if state.pruned:
        tr.write_line(f"tvmperf: pruned {len(state.pruned)} unused baseline(s): {', '.join(state.pruned)}")
    elif state.unused:
        count = sum(len(v) for v in state.unused.values())
        tr.write_line(f"tvmperf: {count} baseline(s) no test used (remove them with "
                      f"{state.accept_command(None, extra=('--tvmperf-prune',))}):")
        for path, names in state.unused.items():
            shown = path.relative_to(state.rootpath) if path.is_relative_to(state.rootpath) else path
            tr.write_line(f"  {shown}: {', '.join(names)}")
    if state.settings.update:
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            tr.write_line("run interrupted: no baseline file was changed")
        else:
            recorded = sum(r.verdict == "recorded" for r in rows) - state.unwritten
            tr.write_line(f"baselines written for {recorded} test(s) under {state.settings.baseline_dir}"
                          + (f"; NOT written for {state.unwritten} test(s) (see above)" if state.unwritten else ""),
                          red=bool(state.unwritten))
