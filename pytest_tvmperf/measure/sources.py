"""What is timed beside today's program: the baseline's own compiled artifact (a/b),
peer frameworks, and today's program exported and loaded back as a later run will load it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn

import numpy as np
import pytest

from pytest_tvmperf.build import executors
from pytest_tvmperf.store.artifacts import PendingArtifact, artifact_relpath, export_pending, problem as artifact_problem
from pytest_tvmperf.build.correctness import check_outputs
from pytest_tvmperf.build.executors import shorten_tvm_error
from pytest_tvmperf.measure.timer import SampleFn, python_sampler
from pytest_tvmperf.measure.threads import same_threads, tvm_threads
from pytest_tvmperf.build.prepare import FILE_NUMBERS, Prepared, display_path
from pytest_tvmperf.workload import PeerUnavailable, Workload

if TYPE_CHECKING:
    from pytest_tvmperf.session import TvmperfSession


@dataclass
class TimingSources:
    """The samplers one test times side by side."""

    session: "TvmperfSession"
    nodeid: str
    test_id: str
    executor: str
    target_name: str
    baseline_file: Path
    peer_limits: Mapping[str, float]
    #: records the outcome and fails the test: ``fail(verdict, message)``
    fail: Callable[..., NoReturn]
    #: programs already exported to run in the child, by id (reused, not exported again)
    exports: dict[int, tuple[Any, Path]] = field(default_factory=dict)

    def peer_samplers(self, prep: Prepared, where: str) -> dict[str, SampleFn]:
        """Samplers of the peer frameworks asked for (``--tvmperf-peers``, and those
        gated by ``vs_<peer>``), each checked against the NumPy reference first."""
        __tracebackhide__ = True
        workload = prep.workload
        wanted = sorted(set(self.session.settings.peers) | set(self.peer_limits))
        samplers: dict[str, SampleFn] = {}
        for name in wanted:
            factory = workload.peers.get(name)
            if factory is None:
                if name in self.peer_limits:
                    have = ", ".join(sorted(workload.peers)) or "none"
                    self.fail("error", f"tvmperf: {where}: vs_{name} is set but the workload has no {name} peer "
                                        f"(its peers: {have}); add one with Workload(peers={{'{name}': factory}})")
                continue
            try:
                run = factory()
            except (ImportError, PeerUnavailable) as exc:
                if name in self.peer_limits:
                    pytest.skip(f"peer {name} is not available, so vs_{name} cannot be checked: {exc}")
                self.session.report.not_measured.add(f"peer {name} not timed: {exc}")
                continue
            with same_threads(tvm_threads()):
                got = run(*prep.inputs)
            got = [np.asarray(g) for g in got] if isinstance(got, (list, tuple)) else [np.asarray(got)]
            mismatch = check_outputs(got, prep.expected, workload.rtol, workload.atol)
            if mismatch:
                self.fail("wrong", f"tvmperf: peer {name} of {where} does not match the NumPy reference, so their "
                                    f"times are not comparable\n{mismatch.message('')}")
            samplers[name] = python_sampler(run, prep.inputs, self.session.settings.min_repeat_ms)
        return samplers

    def baseline_sampler(self, baseline, fingerprint, target, workload, args, out_specs, notes):
        """A sampler of the baseline's own compiled artifact, when one was saved on this
        machine and still matches; why not goes into ``notes``."""
        timing = baseline.timings.get(fingerprint) if baseline else None
        if timing is None or timing.artifact is None or self.session.settings.artifact_dir is None:
            return None
        path = self.session.settings.baseline_dir / timing.artifact
        shown = display_path(path, self.session.rootpath)
        problem = artifact_problem(path, timing.artifact_sha256, shown)
        copy = self.session.scratch_dir() / f"baseline-{next(FILE_NUMBERS)}-{path.name}"
        if problem is None:  # what runs is a private copy, checked again and run in a child first
            shutil.copyfile(path, copy)
            problem = artifact_problem(copy, timing.artifact_sha256, shown)
        if problem is None and target.remote is None:  # an RPC device runs it in its own process
            crash = self.session.sandbox().run(copy, self.executor, workload.entry, self.target_name, args, out_specs)
            if crash is not None:
                problem = (f"baseline artifact {shown} crashed the child process that loaded it ({crash.how}); "
                           f"ignored, nothing of it was loaded in the session (re-record with --tvmperf-update)")
        if problem is None:
            try:
                sampler = self.placed_sampler(copy, target, workload, self.executor, args, out_specs)
                sampler()  # the old program must accept today's inputs
                return sampler
            except Exception as exc:  # an artifact of another signature or TVM
                problem = f"baseline artifact {shown} cannot time today's inputs ({shorten_tvm_error(exc, 1)})"
        notes.append(problem)
        return None

    def placed_sampler(self, path: Path, target, workload: Workload, executor: str, args, out_specs):
        if target.remote is not None:
            return target.remote.placed_sampler(path, executor, workload.entry, args, out_specs,
                                                self.session.settings.min_repeat_ms)
        return executors.placed_sampler(path, executor, workload.entry, target, args, out_specs,
                              self.session.settings.min_repeat_ms, self.session.scratch_dir())

    def export(self, compiled, fingerprint: str, side: str | None = None) -> PendingArtifact | None:
        """Export the compiled artifact: to its place among the baselines when updating
        (renamed into place at session end), else to the run's scratch directory.
        ``side`` names one side of an ``assert_ratio``: always scratch."""
        settings = self.session.settings
        module_key = str(self.baseline_file.relative_to(settings.baseline_dir).with_suffix(""))
        relpath = artifact_relpath(fingerprint, module_key, self.test_id + (f"::{side}" if side else ""))
        keep = settings.update and settings.artifact_dir is not None and side is None
        root = settings.artifact_dir if keep else self.session.scratch_dir()
        try:
            exported = self.exports.get(id(compiled))
            pending = export_pending(compiled, root / relpath, source=exported[1] if exported else None)
            self.session.exported.append(pending)  # removed at session end unless committed
            return pending
        except Exception as exc:  # no C toolchain to link a shared library: time in memory
            self.session.report.export_problem = f"compiled artifacts cannot be exported here, a/b timing is off ({shorten_tvm_error(exc, 2)})"
            return None
