"""Shared fixtures for the plugin's own tests: a pytester project whose timer is
injected, so the time gate is tested with slowdowns that cannot flake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# pytester's in-process runs drop modules first imported during a run, and TVM cannot be
# imported twice into one process (its global functions register again and fail): import
# every part of TVM the plugin uses before any run, so they survive every snapshot.
import tvm  # noqa: F401,E402
import tvm.relax  # noqa: F401,E402
import tvm.relax.frontend.nn  # noqa: F401,E402
import tvm.s_tir  # noqa: F401,E402
import tvm.s_tir.dlight  # noqa: F401,E402
import tvm.te  # noqa: F401,E402
import tvm.tirx  # noqa: F401,E402
from pytest_tvmperf.builder import tuning_db  # noqa: E402

# MetaSchedule tuning imports tvm.s_tir.tensor_intrin, which cannot be imported twice
tuning_db.load_tensor_intrinsics()

# The same snapshots make a test's patch of a plugin module miss: a module the plugin imports
# lazily during a run (metric_sources.load_sources imports the simulated-cost source) is
# dropped from sys.modules when that run's test ends, but stays an attribute of its package,
# so a later test's ``from pytest_tvmperf.measure import simulate`` patches that stale module
# while its own run imports a fresh one (tests/test_simulate.py's up-front skip then started
# valgrind and counted, in whatever order followed another simulated run). Imported here,
# before any snapshot, the module a test patches is the module its runs use (the same for the
# other lazily imported modules that tests patch: check.timed, builder.cuda_toolchain).
from pytest_tvmperf.builder import cuda_toolchain  # noqa: F401,E402
from pytest_tvmperf.check import timed  # noqa: F401,E402
from pytest_tvmperf.measure import sim_cache, simulate  # noqa: F401,E402

# The same holds for every other module a run imports lazily, and there it is a matter of
# time: Hypothesis (the symbolic-shape check) and the plugin are pytest plugins, whose
# modules pytest rewrites on import, so each pytester run parsed, rewrote and compiled
# some 80 Hypothesis and 35 plugin modules again (with PYTHONDONTWRITEBYTECODE, no cache),
# about a second of CPU per run. Imported once here, every run finds them: all of the
# plugin but the measuring process's harness (run as a script under valgrind, never imported).
import filelock  # noqa: F401,E402
import hypothesis  # noqa: F401,E402
import hypothesis.strategies  # noqa: F401,E402


def _import_the_plugin() -> None:
    import importlib
    import pkgutil

    import pytest_tvmperf

    for info in pkgutil.walk_packages(pytest_tvmperf.__path__, "pytest_tvmperf."):
        if info.name not in ("pytest_tvmperf.__main__", "pytest_tvmperf.measure.sim_harness"):
            importlib.import_module(info.name)


_import_the_plugin()

FAKE_TIMER_CONFTEST = '''
import os
import pytest
from pytest_tvmperf.values.samples import TimeSamples


def pytest_configure(config):
    """No measuring process under callgrind in these projects (seconds per run), also in
    subprocess runs and xdist workers, unless a test asks (TVMPERF_TEST_SIMULATE=1)."""
    if os.environ.get("TVMPERF_TEST_SIMULATE") != "1":
        from pytest_tvmperf.measure import metric_sources
        metric_sources.SOURCES = tuple(s for s in metric_sources.SOURCES if not s.endswith(":SimulatedCost"))


@pytest.fixture
def tvmperf_timer():
    """1 ms per call times TVMPERF_FAKE_SCALE, with a little fixed spread; the
    reference kernel and the baseline's artifact take 1 ms with the same spread."""
    def timer(task, rounds):
        scale = float(os.environ.get("TVMPERF_FAKE_SCALE", "1"))
        spread = float(os.environ.get("TVMPERF_FAKE_SPREAD", "0"))  # -spread, 0, +spread in turn
        if rounds > 15 and "TVMPERF_FAKE_CONFIRM_SCALE" in os.environ:  # the confirmation re-measure
            scale, spread = float(os.environ["TVMPERF_FAKE_CONFIRM_SCALE"]), 0.0
        base = [1e-3 * (1 + 0.01 * (i % 3)) for i in range(rounds)]
        peer = float(os.environ.get("TVMPERF_FAKE_PEER_SCALE", "1"))  # peers take peer x 1 ms
        # an emulated busy machine: every sample waited this share of its wall time for a CPU
        wait = os.environ.get("TVMPERF_FAKE_PREEMPTED")
        # TVMPERF_FAKE_WAITS: every side's own threads waited this share of each sample for a CPU, so
        # the verdict judges each side's own run time (wall time less that wait), as on a busy runner
        own = os.environ.get("TVMPERF_FAKE_WAITS")
        sides = ["time", *(s for s, on in (("reference", task.reference), ("baseline", task.baseline)) if on is not None)]
        sides += [f"peer:{name}" for name in sorted(task.peers)]
        if own is not None:
            wait = wait or own
        return TimeSamples(
            tuple(scale * b * (1 + spread * ((i % 3) - 1)) for i, b in enumerate(base)),
            tuple(base) if task.reference is not None else None,
            task.reference_name,
            tuple(base) if task.baseline is not None else None,
            tuple((name, tuple(peer * b for b in base)) for name in sorted(task.peers)),
            preempted=None if wait is None else (float(wait),) * rounds,
            waits=() if own is None else tuple((side, (float(own),) * rounds) for side in sides),
        )
    return timer


@pytest.fixture
def tvmperf_compile_timer():
    """compile_s side by side on a fake clock: a baseline build takes 1 s, today's
    TVMPERF_FAKE_COMPILE_SCALE s (default 1), spread by TVMPERF_FAKE_COMPILE_SPREAD. The builds themselves run only under
    TVMPERF_FAKE_COMPILE_BUILD=1 (each one then logged, side by side, to the file
    TVMPERF_COMPILE_LOG names): the other tests pay for no builds."""
    from pytest_tvmperf.measure.compile_time import CompileTimer

    class FakeCompileTimer(CompileTimer):
        def time(self, side, build):
            if os.environ.get("TVMPERF_FAKE_COMPILE_BUILD") == "1":
                build()
                log = os.environ.get("TVMPERF_COMPILE_LOG")
                if log:
                    with open(log, "a") as f:
                        f.write(side + "\\n")
            self.builds.append(side)
            if side != "current":
                return 1.0
            # TVMPERF_FAKE_COMPILE_SPREAD: today's builds -spread, 0, +spread in turn around the scale
            spread = float(os.environ.get("TVMPERF_FAKE_COMPILE_SPREAD", "0"))
            turn = (self.builds.count("current") - 1) % 3 - 1
            return float(os.environ.get("TVMPERF_FAKE_COMPILE_SCALE", "1")) * (1 + spread * turn)

    return FakeCompileTimer()
'''


class Project:
    """A user's project inside pytester, with helpers to run it and read its baselines."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.monkeypatch = monkeypatch
        pytester.makeconftest(FAKE_TIMER_CONFTEST)

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest("-p", "no:cacheprovider", *args)

    def set_env(self, name: str, value: str) -> None:
        self.monkeypatch.setenv(name, value)

    def baseline_file(self, module: str = "test_perf") -> Path:
        return self.pytester.path / "baselines" / f"{module}.json"

    def baselines(self, module: str = "test_perf") -> dict:
        return json.loads(self.baseline_file(module).read_text())


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    for name in (
        "TVMPERF_FAKE_SCALE",
        "TVMPERF_FAKE_SPREAD",
        "TVMPERF_FAKE_CONFIRM_SCALE",
        "TVMPERF_FAKE_PEER_SCALE",
        "TVMPERF_FAKE_PREEMPTED",
        "TVMPERF_FAKE_WAITS",
        "TVMPERF_FAKE_COMPILE_SCALE",
        "TVMPERF_FAKE_COMPILE_BUILD",
        "TVMPERF_COMPILE_LOG",
        "TVMPERF_TRUST_ARTIFACTS",
        "TVMPERF_BASELINES_REF",
    ):
        monkeypatch.delenv(name, raising=False)
    # each project its own build cache (store/user_cache.py), so a test that damages a cached
    # build never touches another's; a test that wants the machine's cache sets it back
    monkeypatch.setenv("TVMPERF_CACHE_DIR", str(pytester.path / ".tvmperf-cache"))
    return Project(pytester, monkeypatch)


@pytest.fixture(autouse=True)
def _no_simulated_cost(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's own pytester runs do not start callgrind (a measuring process costs
    seconds per run); tests/test_simulate.py switches it back on with ``simulated_cost``.
    tests/perf (the plugin gating this project's workloads) keeps it, as a user would."""
    from pytest_tvmperf.measure import metric_sources

    if "perf" not in request.node.path.relative_to(Path(__file__).parent).parts[:1]:
        monkeypatch.setattr(
            metric_sources, "SOURCES", tuple(s for s in metric_sources.SOURCES if not s.endswith(":SimulatedCost"))
        )


@pytest.fixture(autouse=True)
def _time_the_same_program(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's own tests emulate a slowdown of an unchanged program (an injected
    timer, TVMPERF_FAKE_SCALE), which the default --tvmperf-same-program=skip would pass
    untimed: they time it (tests/test_same_program.py unsets this to test the default).
    tests/perf keeps the default, as a user would; so do the unit tests of the options."""
    if request.node.path.relative_to(Path(__file__).parent).parts[0] not in ("perf", "unit"):
        monkeypatch.setenv("TVMPERF_SAME_PROGRAM", "time")


@pytest.fixture
def simulated_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the simulated-cost source again (measure/simulate.py), also for the
    projects' conftest (FAKE_TIMER_CONFTEST)."""
    from pytest_tvmperf.measure import metric_sources

    monkeypatch.setattr(
        metric_sources, "SOURCES", (*metric_sources.SOURCES, "pytest_tvmperf.measure.simulate:SimulatedCost")
    )
    monkeypatch.setenv("TVMPERF_TEST_SIMULATE", "1")
    # these tests are about the measurement: each run counts (tests/test_sim_cache.py turns
    # the stored counts of measure/sim_cache.py back on)
    monkeypatch.setenv("TVMPERF_SIMULATE_CACHE", "off")
