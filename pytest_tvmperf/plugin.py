"""The entry point: options, the run's set-up, test generation per executor x target and
the ``tvmperf`` fixture. TVM is imported only when a test runs.

Like pytest's junitxml and stepwise, the session machinery (lifecycle.py's
``TvmperfPlugin`` and its ``TvmperfSession``) is registered only for a tvmperf run: at
``pytest_configure`` when a tvmperf option is set or in an xdist run, else when collection
meets the first tvmperf test. A run without either pays for the options only."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import uuid
from typing import TYPE_CHECKING

import pytest

from pytest_tvmperf.config import options
from pytest_tvmperf.config.markers import MARKER, MarkerError, marker_settings
from pytest_tvmperf.combos import FIXTURE, Combo, combo_of
from pytest_tvmperf.startup import RunSetup, configure
from pytest_tvmperf.values.node_ids import test_id
from pytest_tvmperf.values.remote_names import base_of

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.builder.timer import Timer
    from pytest_tvmperf.builder.tuning_display import TunerChoice, TuningIO
    from pytest_tvmperf.check.fixture import Tvmperf
    from pytest_tvmperf.measure.compile_time import CompileTimer
    from pytest_tvmperf.session import TvmperfSession

SESSION_KEY = pytest.StashKey["TvmperfSession"]()
#: the bad ``@pytest.mark.tvmperf`` markers met while parametrizing, reported when collection is done
MARKER_ERRORS = pytest.StashKey[list]()
#: what ``pytest_configure`` checked, kept for the session made when the run turns out to be a tvmperf run
SETUP_KEY = pytest.StashKey[RunSetup]()
#: ``--tvmperf-against-tvm``'s side of each test (against/gate.py, or against/export.py in the other
#: version's own run), handed to each ``tvmperf`` fixture; absent otherwise
AGAINST_KEY = pytest.StashKey["AgainstSide"]()
PLUGIN_NAME = "tvmperf-run"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(executors=[...], targets=[...], time='25%', instructions=0, vs_torch=1.2, ...): "
        "restrict a tvmperf test's executors/targets, set its thresholds and its limits against peer frameworks",
    )
    config.stash[SETUP_KEY] = configure(config)
    if _configured_for_tvmperf(config):
        activate(config)


def _configured_for_tvmperf(config: pytest.Config) -> bool:
    """A tvmperf option set (command line, ini or environment), the other TVM version's
    child run, or an xdist run: its controller collects no test (it cannot wait for one)
    and expects every worker's results (so a worker registers from the start too)."""
    from pytest_tvmperf.against.export import ENV_EXPORT

    for opt in options.OPTIONS:
        given = config.getoption(opt.dest, None)
        on_command_line = (given is True) if opt.switch else (given is not None)  # a switch is False unless given
        if on_command_line or (opt.ini and config.getini(opt.dest)) or (opt.env and os.environ.get(opt.env)):
            return True
    xdist = getattr(config.option, "numprocesses", None) or getattr(config.option, "tx", None)
    return bool(os.environ.get(ENV_EXPORT) or hasattr(config, "workerinput") or xdist)


def activate(config: pytest.Config, collecting: bool = False) -> "TvmperfSession":
    """Make the run's session and register its plugin object (once); ``collecting``: the
    first tvmperf test was met while collecting, after pytest_collection began."""
    state = config.stash.get(SESSION_KEY, None)  # None while the run is not (yet) a tvmperf run
    if state is not None:
        return state
    from pytest_tvmperf.against.gate import configure as configure_against
    from pytest_tvmperf.lifecycle import TvmperfPlugin
    from pytest_tvmperf.session import TvmperfSession
    from pytest_tvmperf.store import sweep

    setup = config.stash[SETUP_KEY]
    settings, ref_baselines = setup.settings, setup.ref_baselines
    run_id = getattr(config, "workerinput", {}).get("testrunuid") or uuid.uuid4().hex
    state = TvmperfSession(settings, config.rootpath, run_id=run_id, ref_view=setup.ref_view)
    state.report.history = setup.history
    if ref_baselines is not None:
        state.report.note(ref_baselines.summary())  # one summary line
        if not hasattr(config, "workerinput"):  # settings of this change that can loosen its gate: named
            from pytest_tvmperf.report.baseline_changes import section_maker
            from pytest_tvmperf.store.ref_config import loosening_lines
            from pytest_tvmperf.values.run_notes import Note

            for line in loosening_lines(config, ref_baselines):
                state.report.note(line, Note.CONFIG)
            state.report.section_makers.append(
                section_maker(  # the change's re-recorded baselines
                    settings.baseline_dir,
                    setup.ref_view.worktree,
                    config.rootpath,
                    str(settings.baselines_ref),
                    settings.approved_change,
                )
            )
    config.stash[SESSION_KEY] = state
    plugin = TvmperfPlugin(state)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    against = configure_against(config, state)  # --tvmperf-against-tvm=VERSION (and that version's own run)
    if against is not None:
        config.stash[AGAINST_KEY] = against
    sweep.sweep()  # the temporary directories of runs that are over, only those provably made by one (store/sweep.py)
    state.private_cache_if_needed()  # a cache directory that cannot be made: a private one for this run
    state.bound_pool_spin()  # before the first parallel kernel: TVM reads it once
    state.update_options = options.passthrough_args(config.invocation_params.args)
    state.invocation_dir = config.invocation_params.dir
    state.verbosity = int(config.getoption("verbose", 0) or 0)
    state.last_words = functools.partial(_last_words, config)
    state.store.notify = functools.partial(_notice, config)
    if collecting:  # its pytest_collection has passed: start the early child now
        plugin.start_early_child(config)
    return state


def _last_words(config: pytest.Config, message: str) -> None:
    """Write a line to the terminal (pytest's own writer, outside any capture), else stderr."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        os.write(2, ("\n" + message + "\n").encode("utf-8", "replace"))
        return
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:  # the test's output is captured: the terminal is behind it
        capture.suspend_global_capture(in_=False)
    reporter.ensure_newline()
    reporter.write_line(message, red=True)
    reporter.flush()


def _notice(config: pytest.Config, message: str) -> None:
    """Write one line to the terminal now, even while a test's output is captured (the
    capture resumes after it), else to stderr: a wait for a busy lock."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        print(message, file=sys.stderr, flush=True)
        return
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        reporter.ensure_newline()
        reporter.write_line(message, yellow=True)
        reporter.flush()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    settings = activate(metafunc.config, collecting=True).settings
    try:
        marker = marker_settings(metafunc.definition)
    except MarkerError as exc:  # a usage error once collection is done (below): one line, no traceback, exit 4
        metafunc.config.stash.setdefault(MARKER_ERRORS, []).append(str(exc))
        return _skip_all(metafunc, str(exc))
    executors = settings.executors if marker.executors is None else marker.executors
    targets = settings.targets if marker.targets is None else marker.targets
    chosen_executors = [e for e in settings.executors if e in executors]
    chosen_targets = [t for t in settings.targets if t in targets or base_of(t) in targets]  # llvm admits llvm@rpc:KEY
    combos = [Combo(t, e) for t in chosen_targets for e in chosen_executors]
    if combos:
        metafunc.parametrize("tvmperf", combos, ids=[c.id for c in combos], indirect=True)
    else:
        _skip_all(
            metafunc,
            f"no executor x target left: the test allows executors {list(executors)} and targets {list(targets)}, "
            f"the run selects {list(settings.executors)} and {list(settings.targets)}",
        )


def _skip_all(metafunc: pytest.Metafunc, reason: str) -> None:
    """One skipped ``none`` parameter: the test runs under no combination."""
    metafunc.parametrize(
        "tvmperf", [pytest.param(None, marks=pytest.mark.skip(reason=reason))], ids=["none"], indirect=True
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test with the tvmperf marker (or fixture) makes the run a tvmperf run."""
    if SESSION_KEY not in item.config.stash and (
        FIXTURE in getattr(item, "fixturenames", ()) or item.get_closest_marker(MARKER) is not None
    ):
        activate(item.config, collecting=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A bad marker is a usage error naming the test and the keyword (exit 4), not a collection
    error under pytest's and pluggy's traceback: pytest_generate_tests cannot raise one itself
    (an exception there becomes a CollectError of the module)."""
    errors = list(session.config.stash.get(MARKER_ERRORS, []))
    if SESSION_KEY not in session.config.stash:  # no tvmperf test: no tvmperf parameter either
        return
    for item in session.items:  # a parameter's own marker (pytest.param(..., marks=...))
        if combo_of(item) is not None:
            try:
                marker_settings(item)
            except MarkerError as exc:
                errors.append(str(exc))
    if not errors:
        return
    message = "\n".join(dict.fromkeys(errors))
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller shows it as a collection error
        from _pytest.reports import CollectReport

        session.config.hook.pytest_collectreport(report=CollectReport("", "failed", message, []))
        session.items[:] = []
        return
    raise pytest.UsageError(message)


@pytest.fixture
def tvmperf_timer(request: pytest.FixtureRequest) -> "Timer":
    """How the tvmperf fixture times a compiled workload. Override this fixture to
    inject a timer (tests of the gate use one that cannot flake)."""
    from pytest_tvmperf.builder.timer import TvmTimer

    return TvmTimer()


@pytest.fixture
def tvmperf_tuner() -> "TunerChoice":
    """Which tuner and clock ``--tvmperf-tune`` / ``--tvmperf-tune-budget`` use:
    MetaSchedule and the wall clock. Override this fixture to inject others (tests of the
    budget use a fake tuner and a fake clock)."""
    from pytest_tvmperf.builder.tuning_display import TunerChoice

    return TunerChoice()


def _tuning_io(config: pytest.Config, tuner: "TunerChoice") -> "TuningIO":
    """A tuning's display on stderr, through pytest's output capture: progress bars on a
    terminal, plain lines in a log file (builder/tuning_display.py)."""
    from pytest_tvmperf.builder.tuning_display import TuningIO, display_for

    capman = config.pluginmanager.getplugin("capturemanager")
    uncaptured = capman.global_and_fixture_disabled if capman is not None else contextlib.nullcontext
    return TuningIO(
        display=lambda workload: display_for(workload, lambda: sys.stderr, uncaptured),
        tuner=tuner,
        exits=not hasattr(config, "workerinput"),
    )


@pytest.fixture
def tvmperf_compile_timer() -> "CompileTimer":
    """How compile_s times the builds side by side: the wall clock. Override this fixture
    to inject another clock (tests of the gate use a fake one: nothing sleeps)."""
    from pytest_tvmperf.measure.compile_time import CompileTimer

    return CompileTimer()


@pytest.fixture
def tvmperf(
    request: pytest.FixtureRequest,
    tvmperf_timer: "Timer",
    tvmperf_tuner: "TunerChoice",
    tvmperf_compile_timer: "CompileTimer",
) -> "Tvmperf":
    """Compile, check, measure and gate a workload: ``tvmperf.check(workload)``."""
    from pytest_tvmperf.check.context import for_test
    from pytest_tvmperf.check.fixture import Tvmperf
    from pytest_tvmperf.config.per_test import settings_for_test
    from pytest_tvmperf.store.files import baseline_path

    combo = getattr(request, "param", None)
    if not isinstance(combo, Combo):
        raise pytest.UsageError(
            "the tvmperf fixture must be requested by the test function (it is parametrized per executor x target)"
        )
    session = activate(request.config)
    node = request.node
    context = for_test(
        session,
        combo,
        node.nodeid,
        test_id(node.nodeid),
        baseline_path(session.settings.baseline_dir, session.rootpath, node.path),
        settings_for_test(session.settings, marker_settings(node)),  # the marker parsed at collection
        tvmperf_timer,
        tuning_io=_tuning_io(request.config, tvmperf_tuner),
        compile_timer=tvmperf_compile_timer,
        location=(node.location[0], (node.location[1] or 0) + 1),
        user_properties=node.user_properties,
    )
    return Tvmperf(context, request.config.stash.get(AGAINST_KEY, None))
