"""A remote device as a target: compiled on the host, run and timed on a device that a
TVM RPC tracker hands out (``--tvmperf-rpc=HOST:PORT``, ``--tvmperf-targets=llvm@rpc:KEY``).

:class:`Farm` (one per pytest process) holds one device per key for the run, this process's
alone, so under ``pytest -n N`` the tracker's queue gives N workers N devices. A device that
goes away fails the test using it, naming the device, and the next test asks the tracker again.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn, Sequence

import numpy as np

from pytest_tvmperf.farm import tracker
from pytest_tvmperf.farm.connection import DeviceHung, deadline, shut_connections_to
from pytest_tvmperf.values.remote_names import RemoteName, format_address, split_remote
from pytest_tvmperf.builder.targets import TargetSpec
from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.values.executor_rows import is_prim

#: how long a test waits for a device of its key to be free (other workers hold them)
DEFAULT_WAIT_S = 600.0
#: copies of an artifact timed in turn on the device (as executors.PLACEMENTS on the host)
PLACEMENTS = 3


def _device_features(session) -> dict[str, bool] | None:
    """What the device's CPU and OS enable, by LLVM's host detection there (its map stays
    on the device, which writes it as JSON); None where it cannot say (a minimal runtime)."""
    try:
        features = session.get_function("tvm.codegen.llvm.GetHostCPUFeatures")()
        text = session.get_function("ffi.json.Stringify")(features, None)
        return {str(k): bool(v) for k, v in json.loads(str(text)).items()}
    except Exception:  # not registered on that device, or not a map
        return None


def _remote_call(session, name: str, default: Any = None) -> Any:
    try:
        return session.get_function(name)()
    except Exception:  # not registered on that device (a minimal runtime)
        return default


@dataclass
class RemoteDevice:
    """One device held for the run: its session and what it reported."""

    name: RemoteName
    tracker: tuple[str, int]
    server: tuple[str, int]
    session: Any
    cpu: str
    triple: str
    threads: int
    llvm: str
    scratch: Path
    #: what the device's CPU and OS enable (its LLVM's detection), None where it cannot say
    features: Mapping[str, bool] | None = None
    alive: bool = True
    #: what happened to it, once it stopped answering or went away ("" while it answers)
    failure: str = ""
    #: the longest one call may take before the device counts as hung (0: unbounded)
    call_timeout_s: float = 0.0
    _files: Any = field(default_factory=itertools.count)
    _in_call: bool = False

    @classmethod
    def open(
        cls, name: RemoteName, tracker_address: tuple[str, int], wait_s: float, call_timeout_s: float = 0.0
    ) -> "RemoteDevice":
        session, server = tracker.request(tracker_address, name.key, wait_s)
        try:
            with deadline(call_timeout_s, "asking the device what it is"):
                asked = dict(
                    cpu=str(_remote_call(session, "target.llvm_get_system_cpu", "generic")),
                    triple=str(_remote_call(session, "target.llvm_get_system_triple", "")),
                    threads=int(_remote_call(session, "runtime.NumThreads", 1)),
                    llvm=str(_remote_call(session, "target.llvm_version_major", "none")),
                    features=_device_features(session),
                )
        except DeviceHung as exc:
            shut_connections_to(server)  # dropping the session must not wait for the device
            raise tracker.TrackerError(
                f"the device the tracker gave for key {name.key!r} (server "
                f"{format_address(server)}) does not answer: {exc}"
            ) from None
        scratch = Path(tempfile.mkdtemp(prefix=f"tvmperf-{os.getpid()}-rpc-"))
        return cls(name, tracker_address, server, session, **asked, call_timeout_s=call_timeout_s, scratch=scratch)

    def describe(self) -> str:
        server, tracker_at = format_address(self.server), format_address(self.tracker)
        return f"RPC device rpc:{self.name.key} (server {server}, tracker {tracker_at})"

    def target_config(self) -> dict[str, Any]:
        """An llvm target for the device's own CPU (its triple where not the host's), less the
        features it does not enable, resolved as the host's is (builder/host_cpu.py)."""
        import tvm

        from pytest_tvmperf.builder import host_cpu

        host_triple = str(tvm.target.codegen.llvm_get_system_triple())
        other_triple = bool(self.triple) and self.triple != host_triple
        cpu = host_cpu.resolve_host_cpu(
            self.cpu,
            host_cpu.model_features(self.cpu, self.triple if other_triple else None),
            host_cpu.HostView(None, self.features),
            x86=host_cpu.is_x86(self.triple or host_triple),
        )
        config: dict[str, Any] = {"kind": "llvm", **cpu.fields(), "num-cores": self.threads}
        if other_triple:
            config["mtriple"] = self.triple
        return config

    @property
    def runs_host_code(self) -> bool:
        """Whether code built for the device also runs on the host (same triple, every feature
        enabled here): then the executed calls (an instrumented VM) are counted on the host."""
        from pytest_tvmperf.builder import host_cpu

        config = self.target_config()
        if "mtriple" in config:
            return False
        features = host_cpu.target_features(config)
        return features is not None and not host_cpu.read_host().missing(features)

    def machine(self, target_json: Any) -> Machine:
        """The device's fingerprint with its key: identical boards under one key share time baselines."""
        import tvm

        return Machine(
            cpu_model=f"{self.cpu} ({self.triple or 'unknown triple'}) via rpc:{self.name.key}",
            logical_cores=self.threads,
            tvm_threads=self.threads,
            tvm_version=str(tvm.__version__),
            llvm_version=self.llvm,
            target=json.dumps(dict(target_json), sort_keys=True),
        )

    def dev(self):
        return self.session.cpu(0)

    def load(self, path: str | Path, what: str) -> Any:
        """Upload the library at ``path`` under a name never used before; load it on the device."""
        remote_name = f"tvmperf-{next(self._files)}-{Path(path).name}"
        return self.guard(
            what, lambda: (self.session.upload(str(path), remote_name), self.session.load_module(remote_name))[1]
        )

    def guard(self, what: str, call: Callable[[], Any]) -> Any:
        """``call()`` within the call deadline; fail the test when the device went away or hangs."""
        if self._in_call:  # a guarded call inside another: the outer deadline bounds both
            return call()
        self._in_call = True
        try:
            with deadline(self.call_timeout_s, what):
                return call()
        except DeviceHung as exc:
            self.alive = False  # never asked again: the next test asks the tracker for another device
            # whatever still holds the session (this device, samplers) must not wait for it when it goes
            shut_connections_to(self.server)
            failure: BaseException = exc
        except Exception as exc:
            if self.alive and self._answers():
                raise
            failure = exc
        finally:
            self._in_call = False
        self.lost(what, failure)  # outside the except: no chained traceback

    def _answers(self) -> bool:
        try:
            with deadline(min(self.call_timeout_s, 30.0), "checking the device answers"):
                self.session.get_function("runtime.NumThreads")()
            return True
        except (Exception, DeviceHung):
            return False

    def lost(self, what: str, exc: BaseException) -> NoReturn:
        import pytest

        from pytest_tvmperf.builder.executors import shorten_tvm_error

        self.alive = False
        why = (
            f"stopped answering while {what} ({exc})"
            if isinstance(exc, DeviceHung)
            else f"went away while {what} ({shorten_tvm_error(exc, 1)})"
        )
        self.failure = f"the {self.describe()} {why}"
        pytest.fail(
            f"tvmperf: the {self.describe()} {why}; "
            f"this test fails and writes no baseline, the others keep theirs; the next test asks the tracker "
            f"for another device with key {self.name.key!r}",
            pytrace=False,
        )

    def close(self) -> None:
        self.alive = False
        self.session = None  # the RPC session closes when its last reference goes
        shutil.rmtree(self.scratch, ignore_errors=True)

    def wrap(self, local: Any, executor: str, entry: str) -> "RemoteCompiled":
        return RemoteCompiled(self, executor, entry, local=local)

    def placed_sampler(self, path: str | Path, executor: str, entry: str, args, out_specs, min_repeat_ms: int):
        """Samples of the artifact at ``path`` (e.g. the baseline's), from :data:`PLACEMENTS` copies
        loaded on the device with own buffers, in turn."""
        what = f"loading {Path(path).name}"
        samplers = [
            RemoteCompiled(self, executor, entry, module=self.load(path, what)).sampler(args, out_specs, min_repeat_ms)
            for _ in range(PLACEMENTS)
        ]
        turn = itertools.cycle(samplers)
        return lambda: next(turn)()


@dataclass
class RemoteCompiled:
    """What the host compiled (``local``: static metrics, bytecode, artifact), run and timed on the device."""

    device: RemoteDevice
    executor: str
    entry: str
    local: Any = None
    module: Any = None
    is_remote: bool = True

    def _module(self):
        if self.module is None:
            path = self.device.scratch / f"build-{next(self.device._files)}-{self.executor}.so"
            self.local.export(str(path))
            self.module = self.device.load(path, f"uploading {self.executor} build")
        return self.module

    def _args(self, args, out_specs):
        import tvm

        dev = self.device.dev()
        inputs = [tvm.runtime.tensor(np.ascontiguousarray(a), dev) for a in args]
        if not is_prim(self.executor):
            return inputs, []
        outs = [tvm.runtime.empty(shape, dtype, dev) for shape, dtype in out_specs]
        return inputs + outs, outs

    def run(self, args, out_specs):
        from pytest_tvmperf.builder.executors import _to_numpy_outputs

        def call():
            module = self._module()
            all_args, outs = self._args(args, out_specs)
            if is_prim(self.executor):
                module[self.entry](*all_args)
                return [o.numpy() for o in outs]
            from tvm import relax

            return _to_numpy_outputs(relax.VirtualMachine(module, self.device.dev())[self.entry](*all_args))

        return self.device.guard("running the workload", call)

    def sampler(self, args, out_specs, min_repeat_ms):
        """Samples from the device's ``time_evaluator`` (the device synchronizes itself)."""

        def build():
            module = self._module()
            all_args, _ = self._args(args, out_specs)
            dev = self.device.dev()
            if is_prim(self.executor):
                evaluator = module.time_evaluator(self.entry, dev, number=1, repeat=1, min_repeat_ms=min_repeat_ms)
                return lambda: float(evaluator(*all_args).results[0])
            from tvm import relax

            vm = relax.VirtualMachine(module, dev)
            vm.set_input(self.entry, *all_args)
            evaluator = vm.time_evaluator("invoke_stateful", dev, number=1, repeat=1, min_repeat_ms=min_repeat_ms)
            return lambda: float(evaluator(self.entry).results[0])

        sample = self.device.guard("preparing to time the workload", build)
        return lambda: self.device.guard("timing the workload", sample)

    def static_metrics(self):
        return self.local.static_metrics()

    def listing(self):
        return self.local.listing() if self.local is not None else None

    def call_times(self, args, runs, clock):
        return None  # VM instrumentation cannot call back over RPC

    def executed_calls(self, args):
        return None if self.local is None or not self.device.runs_host_code else self.local.executed_calls(args)

    def executed_allocations(self, args):
        if self.local is None or not self.device.runs_host_code:
            return "the program runs on a remote device, whose VM calls cannot be instrumented from here"
        return self.local.executed_allocations(args)

    def code_size(self, library=None):
        if self.local is None:
            return "the program was built on the remote device's side only"
        return self.local.code_size(library)

    def export(self, path):
        self.local.export(path)


@dataclass
class Farm:
    """The devices of one tracker this process holds, one per key, for the run."""

    tracker: tuple[str, int]
    wait_s: float = DEFAULT_WAIT_S
    #: the longest one call to a device may take (--tvmperf-rpc-timeout)
    call_timeout_s: float = 0.0
    _held: dict[str, TargetSpec] = field(default_factory=dict)
    #: {key: what happened} for keys whose device hung or went away: later tests wait at most the call timeout
    _failed: dict[str, str] = field(default_factory=dict)
    #: {key: why} for the keys that then had no other device either: later tests fail at once
    _given_up: dict[str, str] = field(default_factory=dict)

    def target(self, name: str) -> TargetSpec:
        """The target of remote name ``name``, on a device held for the run (asked again if it went away)."""
        import pytest

        held = self._held.get(name)
        if held is not None and held.remote.alive:
            return held
        remote = split_remote(name)
        assert remote is not None
        if held is not None:
            failure = held.remote.failure or f"the {held.remote.describe()} stopped answering"
            self._failed.setdefault(remote.key, failure)
            held.remote.close()
            del self._held[name]
        if remote.key in self._given_up:
            pytest.fail(f"tvmperf: target {name}: {self._given_up[remote.key]}", pytrace=False)
        earlier = self._failed.get(remote.key)
        # after a device of this key hung, a free one is not waited for long: the hung one stays
        # registered and busy at the tracker, so the queue may never move
        short = earlier is not None and self.call_timeout_s > 0
        wait_s = min(self.wait_s, self.call_timeout_s) if short else self.wait_s
        try:
            device = RemoteDevice.open(remote, self.tracker, wait_s, self.call_timeout_s)
        except tracker.TrackerError as exc:
            if earlier is None:
                self._failed[remote.key] = str(exc).splitlines()[0]
                pytest.fail(f"tvmperf: target {name}: {exc}", pytrace=False)
            self._given_up[remote.key] = (
                f"no device of key {remote.key!r} after an earlier test of this run: {earlier}; the next request "
                f"waited at most {wait_s:g} s (--tvmperf-rpc-timeout) and got none, so every later test of this "
                f"key fails at once (restart or free the device, then run again)"
            )
            pytest.fail(f"tvmperf: target {name}: {exc}\n{self._given_up[remote.key]}", pytrace=False)
        spec = TargetSpec(name, device.target_config(), remote=device)
        self._held[name] = spec
        return spec

    def release(self, name: str) -> None:
        """Give the device held for ``name`` back to the tracker (MetaSchedule's RPC runner asks
        for the key's devices while tuning); the next :meth:`target` asks for one again."""
        held = self._held.pop(name, None)
        if held is not None:
            held.remote.close()
            del held
            gc.collect()  # the session ends with its last reference

    def close(self) -> None:
        for spec in self._held.values():
            spec.remote.close()
        self._held.clear()
        gc.collect()  # an RPC session ends (its device goes back to the tracker) with its last reference


def check_farm(address: tuple[str, int] | None, keys: Sequence[str]) -> str | None:
    """At start-up: why the remote targets cannot run (no tracker, no device of a key), or None."""
    if address is None:
        return (
            f"targets {', '.join(f'llvm@rpc:{k}' for k in keys)} run on RPC devices: give the tracker with "
            f"--tvmperf-rpc=HOST:PORT (ini tvmperf_rpc)"
        )
    try:
        found = tracker.offers(tracker.summary(address), address)
    except tracker.TrackerError as exc:
        return str(exc)
    missing = [key for key in keys if not any(o.key == key and o.servers for o in found)]
    return tracker.unknown_key_message(missing[0], address, found) if missing else None
