"""Run a compiled artifact once in a child process before the session runs it.

A user's kernel can crash the process running it (an unresolved extern symbol, an
out-of-bounds store), and so can a damaged artifact (a truncated library whose sha256
was edited to match: SIGBUS), losing every other test's result. So each fresh or stored
artifact first runs in a sacrificial child, one per session (per xdist worker). When it
dies, the test fails (or the stored artifact is ignored) with the signal and the child's
last words, and the next request starts a new child.

Protocol: one JSON line per request on the child's stdin, one per reply on a copy of its
stdout (its fd 1 points at stderr: native prints cannot break the protocol). The parent
side is :class:`Sandbox`, the child ``python -m pytest_tvmperf.sandbox.child``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pytest_tvmperf.values.peak_memory import MMAP_THRESHOLD
from pytest_tvmperf.values.executor_rows import is_prim

#: the child's stderr, last lines kept in a crash message
STDERR_LINES = 6


@dataclass(frozen=True)
class ChildCrash:
    """How the child died running an artifact: ``how`` is ``SIGSEGV`` or ``exit status 127``."""

    how: str
    stderr: str

    def describe(self) -> str:
        return self.how + (f"; its last words:\n{self.stderr}" if self.stderr else "")

    @property
    def what(self) -> str:
        """``crashed`` or, for a kernel that never returned, ``did not return``."""
        return "did not return" if self.how.startswith("hung") else "crashed"


def death(returncode: int) -> str:
    """``SIGSEGV`` for a child killed by a signal, ``exit status N`` otherwise."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class Sandbox:
    """The sacrificial child of one session; started on first use, restarted after a crash."""

    def __init__(self, scratch: Path, timeout_s: float = 0.0) -> None:
        self.scratch = scratch
        #: the longest one run may take before the child counts as hung (0: unbounded)
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen | None = None
        self._log: Path = scratch / f"sandbox-{os.getpid()}.log"
        self._requests = 0
        #: (child pid, artifact) run by this child: a peak read after it needs no warm call
        self._ran: set[tuple[int, str]] = set()
        self._ready = False

    def start(self) -> None:
        """Start the child now, not waiting for it: it imports TVM while the session collects
        its tests, so the first test does not wait for it. Idempotent; :meth:`_call` waits."""
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
            self._ready = False

    def _start(self) -> subprocess.Popen:
        package_root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([package_root, *[p for p in sys.path if p], env.get("PYTHONPATH", "")])
        # freed 64 KiB+ blocks go back to the system (a peak shows as resident growth); a user's setting stands
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(MMAP_THRESHOLD))
        with open(self._log, "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "pytest_tvmperf.sandbox.child"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=str(self.scratch),
            )

    def run(self, artifact: Path, executor: str, entry: str, device_type: str, args, out_specs) -> ChildCrash | None:
        """Run ``entry`` of ``artifact`` once on ``args`` on a ``device_type`` device in the child;
        None when it survived (a Python error is no crash: the session's run reports it), else how it died."""
        _, crash = self._call_on({}, artifact, executor, entry, device_type, args, out_specs)
        if crash is None and self._proc is not None:
            self._ran.add((self._proc.pid, str(artifact)))
        return crash

    def peak(self, artifact: Path, executor: str, entry: str, device_type: str, args, out_specs) -> dict:
        """The peak memory of one call of ``entry`` (sandbox/peak.py), read in the child:
        ``{"host": {"samples": [...]} or {"na": why}, "device": ... (not on the host)}``,
        or ``{"na": why}`` where the child could not run it (it died: the reason says how)."""
        ran = self._proc is not None and self._proc.poll() is None and (self._proc.pid, str(artifact)) in self._ran
        op = {"op": "peak", "warm": not ran}  # the crash check's call in this child warmed it
        reply, crash = self._call_on(op, artifact, executor, entry, device_type, args, out_specs)
        if crash is not None:
            return {"na": f"the isolation child {crash.what} ({crash.how}) measuring it"}
        return reply if isinstance(reply, dict) else {"na": "the isolation child gave no answer"}

    def build(
        self, ir_path: Path, executor: str, target_config: dict, device_type: str, out: Path, ref: dict | None = None
    ) -> dict:
        """Rebuild the stored IR at ``ir_path`` for the target and export it to ``out`` in the
        child, so a build past :attr:`timeout_s` (an IR unrolling a loop 200000 times) or one
        that crashes is killed and the session goes on. ``{"ok": True}``, ``{"load_error":
        why}`` (this TVM cannot read the IR), ``{"error": why}`` (code generation failed) or
        ``{"crash": how}``. ``ref``: the entry's ``ir`` field, naming the weights stored apart."""
        request = {"op": "build", "path": str(ir_path), "executor": executor, "target": target_config}
        reply, crash = self._call({**request, "device_type": device_type, "out": str(out), "ref": ref})
        if crash is not None:
            hung = f"took longer than {self.timeout_s:g} s (--tvmperf-child-timeout)"
            return {
                "crash": hung if crash.how.startswith("hung") else f"crashed the child process ({crash.describe()})"
            }
        return reply or {"error": "no answer"}

    def signature(self, ir_path: Path, executor: str, entry: str, ref: dict | None = None) -> dict:
        """``{"params": [{"name", "shape", "dtype"}, ...]}`` of ``entry`` of the IR at ``ir_path``, read
        in the child, or ``{"load_error": why}``, ``{"error": why}``, ``{"crash": how}``."""
        reply, crash = self._call(
            {"op": "signature", "path": str(ir_path), "executor": executor, "entry": entry, "ref": ref}
        )
        if crash is not None:
            return {"crash": f"{crash.what} in the child process ({crash.describe()})"}
        return reply or {"error": "no answer"}

    def _call_on(
        self, op: dict, artifact: Path, executor: str, entry: str, device_type: str, args: Sequence[Any], out_specs
    ) -> tuple[dict | None, ChildCrash | None]:
        """:meth:`_call` of ``op`` plus a call of ``entry`` of ``artifact`` on ``args`` (a scratch file)."""
        import numpy as np

        self._requests += 1
        inputs = self.scratch / f"sandbox-inputs-{self._requests}.npz"
        np.savez(inputs, *[np.asarray(a) for a in args])
        request = {**op, "path": str(artifact), "executor": executor, "entry": entry, "device_type": device_type}
        try:
            return self._call({**request, "args": str(inputs), "out_specs": [[list(s), str(d)] for s, d in out_specs]})
        finally:
            inputs.unlink(missing_ok=True)

    def _call(self, request: dict) -> tuple[dict | None, ChildCrash | None]:
        """One request's reply, or how the child died (killed past :attr:`timeout_s`)."""
        self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        if not self._ready:
            proc.stdout.readline()  # "ready": imports done (start-up is not the kernel's time)
            self._ready = True
        offset = self._log.stat().st_size if self._log.exists() else 0
        try:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            reply = self._reply(proc)
        except (BrokenPipeError, OSError):
            reply = b""
        if reply is None:  # no answer in time: a kernel that never returns
            proc.kill()
            proc.wait()
            self._proc = None
            return None, ChildCrash(f"hung: no answer within {self.timeout_s:g} s (--tvmperf-child-timeout)", "")
        if reply:
            try:
                return json.loads(reply), None
            except ValueError:
                return {"error": reply.decode("utf-8", "replace")[:300]}, None
        returncode = proc.wait()
        self._proc = None
        with open(self._log, "rb") as f:
            f.seek(offset)
            kept = [line for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return None, ChildCrash(death(returncode), "\n".join(f"    {line[:300]}" for line in kept[-STDERR_LINES:]))

    def _reply(self, proc: subprocess.Popen) -> bytes | None:
        """The child's reply (written as one line, then flushed); None when none came within :attr:`timeout_s`."""
        assert proc.stdout is not None
        if self.timeout_s > 0:
            import selectors

            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                if not sel.select(self.timeout_s):
                    return None
        return proc.stdout.readline()

    def close(self) -> None:
        """Kill the child (it holds nothing to save), sparing the run TVM's teardown (~0.5 s)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
            proc.wait()
        finally:
            for stream in (proc.stdin, proc.stdout):
                if stream:
                    with contextlib.suppress(OSError):
                        stream.close()


def _serve() -> None:
    reply_to = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what native code prints goes to stderr, not into the replies
    # `import tvm` imports torch through tvm_ffi when installed (DLPack interop): ~1.9 s of
    # CPU, two thirds of the child's start. The child never sees a torch tensor, so block it
    # (an ImportError tvm_ffi handles), as measure/sim_harness.py does (TVMPERF_ALLOW_TORCH=1: both let it in).
    if os.environ.get("TVMPERF_ALLOW_TORCH") != "1":
        sys.modules.setdefault("torch", None)
    import numpy as np

    from pytest_tvmperf.builder.executors import load_artifact
    from pytest_tvmperf.builder.targets import TargetSpec

    import tvm  # noqa: F401  (imported before "ready": the session started this child early for it)
    from tvm import relax  # noqa: F401

    def send(reply: dict) -> None:
        reply_to.write(json.dumps(reply) + "\n")
        reply_to.flush()

    send({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") in ("build", "signature"):
            send(_on_ir(request))
            continue
        try:
            target = TargetSpec("isolated", {}, device_type=request["device_type"])
            compiled = load_artifact(request["path"], request["executor"], request["entry"], target)
            with np.load(request["args"]) as data:
                args = [data[f"arr_{i}"] for i in range(len(data.files))]
            out_specs = [(tuple(s), d) for s, d in request["out_specs"]]
            if request.get("op") == "peak":
                from pytest_tvmperf.sandbox.peak import measure

                reply: dict[str, Any] = measure(
                    compiled, args, out_specs, compiled.dev, request["device_type"], bool(request.get("warm", True))
                )
            else:
                compiled.run(args, out_specs)
                reply = {"ok": True}
        except Exception as exc:  # a Python-level error: the session's own run will report it
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
            if request.get("op") == "peak":
                reply["na"] = f"measuring it failed in the isolation child ({reply['error'][:300]})"
        send(reply)


def _on_ir(request: dict) -> dict:
    """The child's side of :meth:`Sandbox.build` and :meth:`Sandbox.signature`: the stored IR the
    request names, checked against its reference (else ``load_error``), rebuilt or read."""
    from pytest_tvmperf.builder.executors import shorten_tvm_error
    from pytest_tvmperf.store import lowered_ir
    from pytest_tvmperf.values.record import IRRef

    try:
        module = lowered_ir.load(Path(request["path"]), IRRef.from_json(request.get("ref")))
    except lowered_ir.IRLoadError as exc:
        return {"load_error": str(exc)}
    if request["op"] == "build":
        from pytest_tvmperf.builder.rebuild import build_library
        from pytest_tvmperf.builder.targets import TargetSpec

        try:
            target = TargetSpec("rebuilt", request["target"], device_type=request["device_type"])
            build_library(module, request["executor"], target, Path(request["out"]))
        except Exception as exc:  # code generation failed: TVM's own error, shortened
            return {"error": shorten_tvm_error(exc, 2)}
        return {"ok": True}
    from pytest_tvmperf.builder.own_inputs import params_as_json, relax_params
    from pytest_tvmperf.builder.signature import prim_signature

    try:
        entry = request["entry"]
        params = prim_signature(module, entry) if is_prim(request["executor"]) else relax_params(module, entry)
    except Exception as exc:  # no such entry, or not a function of the executor's kind
        return {"error": shorten_tvm_error(exc, 1)}
    return {"params": params_as_json(params)}


if __name__ == "__main__":
    _serve()
