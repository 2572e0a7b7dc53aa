"""The run's resources shared by its tests: settings, targets, the reference kernel, the
scratch directory and child process, the machine-wide timing lock; with the run's
:class:`BaselineStore` and :class:`RunReport`."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pytest

from pytest_tvmperf.store import artifacts, sweep
from pytest_tvmperf.config.time_policy import TimePolicy
from pytest_tvmperf.sandbox.child import Sandbox
from pytest_tvmperf.workload import output_specs
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.store.baseline_store import BaselineStore
from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.store.locks import LockError, LockTimeout, file_lock, lock_dir
from pytest_tvmperf.values.node_ids import RefView, display_path
from pytest_tvmperf.values.remote_names import is_remote
from pytest_tvmperf.builder.targets import TargetSpec, resolve_target
from pytest_tvmperf.measure.metric_sources import MetricSource, load_sources
from pytest_tvmperf.measure.threads import POOL_SPIN, POOL_SPIN_ENV

if TYPE_CHECKING:
    from pytest_tvmperf.farm.remote import Farm


def timing_lock_path(where: str) -> Path:
    """The timing lock of ``where`` (a project's absolute path, or ``rpc HOST:PORT``), in
    this user's lock directory (store/locks.py; LockError when it cannot be used)."""
    key = hashlib.sha256(where.encode()).hexdigest()[:12]
    return lock_dir() / f"tvmperf-timing-{key}.lock"


def lock_timeout_message(exc: LockError, where: str) -> str:
    """A test that waited too long for the timing lock (who holds it and what to do), or
    whose timing lock cannot be used (the path and the fix)."""
    if not isinstance(exc, LockTimeout):
        return f"tvmperf: the timing lock of {where} cannot be used: {exc}"
    kill = f"end it (kill {exc.holder.pid}) if it is stopped or hung, " if exc.holder is not None else ""
    return (
        f"tvmperf: waited {exc.timeout_s:g} s (--tvmperf-lock-timeout) for the timing lock of {where}: {exc}. "
        f"Runs of one project (or on one RPC device) time one test at a time; {kill}wait for it to finish, "
        f"or give a larger --tvmperf-lock-timeout"
    )


@dataclass
class TvmperfSession:
    settings: Settings
    rootpath: Path
    _targets: dict[str, TargetSpec] = field(default_factory=dict)
    #: the baseline files of this run: cached, queued updates, unused entries
    store: BaselineStore = field(init=False)  # built from settings, sharing write_errors
    #: what this run measured and decided, and its summary lines
    report: RunReport = field(default_factory=RunReport)
    #: problems writing files (baselines, reports): each fails the run
    write_errors: list[str] = field(default_factory=list)
    exported: list[artifacts.PendingArtifact] = field(default_factory=list)
    timed_tests: int = 1
    _references: dict[str, Callable[[], float]] = field(default_factory=dict)
    _scratch: sweep.OwnedDir | None = None
    #: the private cache of a run whose cache directory cannot be made
    _private_cache: sweep.OwnedDir | None = None
    #: the environment variables this run set (``$TVMPERF_CACHE_DIR`` to that private cache,
    #: ``$TVM_THREAD_POOL_SPIN_COUNT``), put back as they were at its end
    _env: pytest.MonkeyPatch = field(default_factory=pytest.MonkeyPatch)
    _tuning_markers: list[Path] = field(default_factory=list)
    #: this run's id, shared by its xdist workers (their ``testrunuid``)
    run_id: str = ""
    _sandbox: Sandbox | None = None
    #: options of this run that an accept command must repeat (``--tvmperf-baselines=DIR``, ...)
    update_options: tuple[str, ...] = ()
    #: where pytest was started: node ids in printed commands are relative to it
    invocation_dir: Path | None = None
    _metric_sources: tuple[MetricSource, ...] | None = None
    #: the RPC devices this process holds (farm/remote.py), for targets named llvm@rpc:KEY
    _farm: "Farm | None" = None
    #: pytest's -v count: an inconclusive test's details are a warning only from -v on (else
    #: one summary line counts them); None outside a pytest run's configure (the fixture used
    #: directly): each inconclusive test warns
    verbosity: int | None = None
    #: --tvmperf-baselines-ref: how files of the revision's temporary copy are named
    ref_view: RefView | None = None
    #: writes a message to the terminal from any thread, even while a test's output is
    #: captured: the watchdog's last words (sandbox/watchdog.py); None: to stderr
    last_words: Callable[[str], None] | None = None
    #: --tvmperf-baselines-ref: the work tree's baseline files (:attr:`pr_store`)
    _pr_store: BaselineStore | None = field(default=None, init=False)

    @property
    def warns_inconclusive(self) -> bool:
        """Does each inconclusive test warn (``--tvmperf-inconclusive=warn``) on its own?"""
        return self.verbosity is None or self.verbosity > 0

    def __post_init__(self) -> None:
        self.store = BaselineStore(self.settings, self.rootpath, self.write_errors, ref_view=self.ref_view)

    def pr_baseline_file(self, baseline_file: Path) -> Path | None:
        """``--tvmperf-baselines-ref``: the work tree's counterpart of a ref's baseline file."""
        worktree = self.ref_view.worktree if self.ref_view is not None else None
        if worktree is None:
            return None
        return worktree / Path(baseline_file).relative_to(self.settings.baseline_dir)

    @property
    def pr_store(self) -> BaselineStore:
        """The work tree's baseline files under ``--tvmperf-baselines-ref``: read only, to
        show and verify what the pull request changed (never written)."""
        if self._pr_store is None:
            assert self.ref_view is not None and self.ref_view.worktree is not None
            settings = replace(self.settings, baseline_dir=self.ref_view.worktree)
            self._pr_store = BaselineStore(settings, self.rootpath, [])
        return self._pr_store

    def shown(self, path: Path) -> str:
        """How messages name ``path``: relative to the rootdir, a file of the baselines
        ref's copy as that revision's file (``baselines/test_k.json at origin/main``)."""
        return display_path(path, self.rootpath, self.ref_view)

    def accept_command(self, nodeid: str | None, first: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> str:
        """The command that records ``nodeid``'s baseline, runnable from where this run was started."""
        from pytest_tvmperf.result.text import update_command

        if nodeid and self.invocation_dir is not None and self.invocation_dir.resolve() != self.rootpath.resolve():
            file, sep, rest = nodeid.partition("::")
            nodeid = os.path.relpath(self.rootpath / file, self.invocation_dir) + sep + rest
        return update_command(nodeid, (*extra, *self.update_options), first)

    def sandbox(self) -> Sandbox:
        """The child process that runs each artifact once before the session does."""
        if self._sandbox is None:
            self._sandbox = Sandbox(self.scratch_dir(), float(self.settings.child_timeout))
        return self._sandbox

    def close_sandbox(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def private_cache_if_needed(self) -> None:
        """Where the plugin's cache directory cannot be made (a read-only home, as in many CI
        containers), a private temporary one (mode 0700, removed at the run's end) takes its
        place, so a missing cache never turns a gate off; a summary line says so."""
        from pytest_tvmperf.store import user_cache

        problem = user_cache.root_problem()
        if problem is None:
            return
        try:
            self._private_cache = sweep.make_owned("cache")
        except OSError as exc:  # no temporary directory either: said, never silent
            self.report.note(
                f"{problem}, nor a private temporary one ({type(exc).__name__}: {exc.strerror or exc}): the "
                f"baseline's IR cannot be rebuilt here, so a/b timing cannot run; set ${user_cache.ENV_CACHE_DIR} "
                f"to a writable directory of your own"
            )
            return
        self._env.setenv(user_cache.ENV_CACHE_DIR, str(self._private_cache.path))
        self.report.note(
            f"{problem}: this run keeps its builds in a private temporary directory (mode 700), removed at its "
            f"end; set ${user_cache.ENV_CACHE_DIR} to a writable directory of your own to keep them between runs"
        )

    def bound_pool_spin(self) -> None:
        """TVM's pool workers spin a bounded time after each task (measure/threads.py), unless
        the user set how long."""
        if POOL_SPIN_ENV not in os.environ:
            self._env.setenv(POOL_SPIN_ENV, POOL_SPIN)

    def scratch_dir(self) -> Path:
        """A temporary directory for this run's exported artifacts (removed at the end)."""
        if self._scratch is None:
            self._scratch = sweep.make_owned("scratch")
        return self._scratch.path

    def cleanup(self) -> None:
        """Remove the scratch directory and every exported artifact not committed
        (a test that failed after exporting leaves nothing behind)."""
        self.close_sandbox()
        for source in self._metric_sources or ():  # e.g. the simulated cost's measuring process
            close = getattr(source, "close", None)
            if close is not None:
                close()
        if self._farm is not None:
            self._references.clear()  # samplers on the devices hold their RPC sessions
            self._farm.close()
            self._farm = None
        for pending in self.exported:
            artifacts.discard(pending)
        self.exported.clear()
        for marker in self._tuning_markers:
            marker.unlink(missing_ok=True)
        self._tuning_markers.clear()
        if self._scratch is not None:
            self._scratch.remove()
            self._scratch = None
        self._env.undo()
        if self._private_cache is not None:
            self._private_cache.remove()
            self._private_cache = None

    def time_policy(self) -> TimePolicy:
        """The time verdict's policy, the run's false-alarm rate split over its timed tests."""
        return self.settings.time_policy(self.timed_tests)

    def release_device(self, name: str) -> None:
        """Give the RPC device held for target ``name`` back to its tracker (for tuning on
        it), with the reference kernel loaded there: the session ends with its last module."""
        self._references = {k: v for k, v in self._references.items() if not k.startswith(f"{name}@")}
        self.farm().release(name)

    def reference_sampler(self, target: TargetSpec) -> Callable[[], float]:
        """The reference kernel for ``target``, compiled once per run."""
        key = target.name if target.remote is None else f"{target.name}@{target.remote.server}"
        if key not in self._references:
            from pytest_tvmperf.builder.executors import PrimExecutor
            from pytest_tvmperf.measure.reference import reference_workload

            ref = reference_workload()
            inputs = ref.inputs()
            specs = output_specs(ref.expected(inputs))
            compiled = PrimExecutor().compile(ref, target)
            self._references[key] = compiled.sampler(inputs, specs, self.settings.min_repeat_ms)
        return self._references[key]

    @contextlib.contextmanager
    def timing_lock(self, target: str | None = None) -> Iterator[None]:
        """Hold the machine's clock for one measurement: xdist workers (and other runs of this
        project) time one at a time. On an RPC device (llvm@rpc:KEY) the lock is the device's."""
        where = str(self.rootpath.resolve())
        if target is not None and is_remote(target):
            where = f"rpc {self.target(target).remote.server}"
        message = None
        with contextlib.ExitStack() as held:
            try:
                timeout = float(self.settings.lock_timeout)
                held.enter_context(
                    file_lock(timing_lock_path(where), timeout, f"timing lock of {where}", self.store.say)
                )
            except LockError as exc:
                message = lock_timeout_message(exc, where)
            else:  # the test's own errors pass through
                yield
        if message is not None:
            import pytest

            pytest.fail(message, pytrace=False)  # outside the except: no chained traceback

    def claim_tuning(self, key: tuple[str, str, str]) -> bool:
        """True the first time this run (any xdist worker) asks to tune ``key`` (workload,
        target, database): tuned once for all executors. Call with the timing lock held."""
        digest = hashlib.sha256(repr((self.run_id, key)).encode()).hexdigest()[:20]
        marker = Path(tempfile.gettempdir()) / f"tvmperf-tuned-{digest}"
        if marker.exists():
            return False
        marker.touch()
        self._tuning_markers.append(marker)
        return True

    def metric_sources(self) -> tuple[MetricSource, ...]:
        """The registered per-kernel metric sources (``measure/metric_sources.py``)."""
        if self._metric_sources is None:
            self._metric_sources = load_sources()
            for source in self._metric_sources:  # a source that waits long says so on the terminal
                if hasattr(source, "notify") and self.store.notify is not None:
                    source.notify = self.store.notify
        return self._metric_sources

    def target(self, name: str) -> TargetSpec:
        if is_remote(name):  # a device of the tracker, held for the run
            return self.farm().target(name)
        if name not in self._targets:
            self._targets[name] = resolve_target(name, self.settings.llvm_target)
        return self._targets[name]

    def farm(self) -> "Farm":
        """The RPC devices of ``--tvmperf-rpc``'s tracker this process holds."""
        if self._farm is None:
            from pytest_tvmperf.farm.remote import Farm

            if self.settings.rpc is None:
                raise ValueError(
                    "targets named llvm@rpc:KEY need the tracker's address: --tvmperf-rpc=HOST:PORT (ini tvmperf_rpc)"
                )
            self._farm = Farm(self.settings.rpc, call_timeout_s=float(self.settings.rpc_timeout))
        return self._farm
