"""Per-layer time of both sides of a peer comparison: TVM's kernel calls, each timed by
the VM's instrument with its argument shapes, and the peer's layers (torch: forward
pre/post hooks on each leaf module; onnxruntime: its per-node profile). Each side's
calls, whole run and time outside every call come from the same rounds
(judge/layer_rounds.py), so the rows add up to the whole run shown with them; the
matching and the table are judge/layer_match.py's. It costs a few instrumented runs of
each side (:data:`RUNS`), paid only when asked for (``--tvmperf-layers=on``) or when a
``vs_<peer>`` limit fails.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from pytest_tvmperf.judge.layer_rounds import Round, apportion
from pytest_tvmperf.measure.relax_anchors import RelaxAnchor, relax_anchors, static_shape, window
from pytest_tvmperf.measure.peer_device import peer_for_device
from pytest_tvmperf.measure.peer_tensors import tensor_from_numpy
from pytest_tvmperf.workload import PeerUnavailable
from pytest_tvmperf.judge.layer_match import PEER_ANCHORS, LayerCall, LayerTable, SideProfile, conv_flops, fused_ops
from pytest_tvmperf.judge.layer_match import match, matmul_flops, tvm_anchor

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.builder.timer import TimeSamples
    from pytest_tvmperf.judge.ratios import RatioVerdict

#: rounds of each side (after one warm-up); each call's time is its median over them
RUNS = 5

Clock = Callable[[], float]


class NoLayers(Exception):
    """This side cannot be timed layer by layer here; the message says why."""


def _describe_kernel(name: str, inputs: tuple, output: tuple, anchors: Sequence[RelaxAnchor]) -> LayerCall:
    kind = tvm_anchor(name)
    attrs, flops = "", None
    if kind:
        have = set(inputs)
        for anchor in anchors:  # the Relax op this kernel computes: same output, its inputs among the kernel's
            if tvm_anchor(anchor.op) == kind and anchor.output == output and all(s in have for s in anchor.inputs[:2]):
                attrs, flops = anchor.attrs, anchor.flops
                break
    return LayerCall(name, "+".join(fused_ops(name)), kind, 0.0, inputs, output, attrs, flops)


def on_device(dev: Any) -> bool:
    """Whether ``dev``'s DLPack device type (``dlpack_device_type()`` since TVM 0.27) is not 1, kDLCPU."""
    kind = getattr(dev, "dlpack_device_type", None)
    code = kind() if callable(kind) else getattr(dev, "device_type", 1)
    return int(code) != 1


def tvm_profile(
    compiled: Any,
    args: Sequence[np.ndarray],
    program: Any,
    runs: int = RUNS,
    clock: Clock = time.perf_counter,
    target: Any = None,
    sync: Callable[[], None] | None = None,
) -> SideProfile:
    """Each kernel call of one run, in order, with its argument shapes (the last is its
    output: destination passing) and time, the whole run's and the time outside kernels,
    from the same ``runs`` instrumented runs. The instrument times every call, kernels and
    VM builtins (the time outside kernels) alike; its own time is read from the gaps
    between calls. On a GPU the device is waited for (``sync``) before each clock read."""
    from tvm import relax

    executable, note = getattr(compiled, "executable", None), ""
    if executable is not None and getattr(compiled, "exec_mode", "") == "compiled" and target is not None:
        # the compiled mode has no instrument: the same lowered module (the same kernels) as bytecode
        executable = relax.build(compiled.lowered, target, relax_pipeline=None, exec_mode="bytecode")
        note = (
            "TVM's kernels timed under vm-bytecode, built from this test's lowered module (vm-compiled has no "
            "instrument); the time outside kernels is vm-bytecode's"
        )
    elif executable is None or getattr(compiled, "exec_mode", "") != "bytecode":
        raise NoLayers(
            "per-layer time needs a Relax VM run here (the VM's instrument times each kernel call); "
            "this test runs under another executor or on a remote device"
        )

    kernels = {gv.name_hint for gv, f in compiled.lowered.functions.items() if not isinstance(f, relax.Function)}
    vm = relax.VirtualMachine(executable, compiled.dev)
    device_args = [__import__("tvm").runtime.tensor(np.ascontiguousarray(a), compiled.dev) for a in args]
    seen: list[tuple[str, tuple] | None] = []  # each call of a run: (kernel, shapes), or None for a builtin
    spans: list[list[float]] = []  # each call of a run: [start, end]
    open_calls: list[int] = []
    learning = [True]
    # a GPU runs a kernel after its launch returns: wait for it at each clock read (spans on the device)
    if sync is None:  # (tests inject one)
        sync = compiled.dev.sync if on_device(compiled.dev) else (lambda: None)

    def instrument(func, func_symbol, before_run, ret_value, *call_args):
        sync()
        if before_run:
            if learning[0]:
                name = str(func_symbol)
                shapes = (static_shape(a) if hasattr(a, "dtype") else None for a in call_args)
                seen.append((name, tuple(s for s in shapes if s is not None)) if name in kernels else None)
            open_calls.append(len(spans))
            spans.append([clock(), 0.0])
        else:
            spans[open_calls.pop()][1] = clock()
        return 0

    entry = compiled.entry
    vm.set_instrument(instrument)
    vm[entry](*device_args)  # warm-up, learning the calls
    learning[0] = False
    kernel = [call is not None for call in seen]
    rounds = []
    for _ in range(runs):
        spans.clear()
        sync()
        start = clock()
        vm[entry](*device_args)
        sync()
        end = clock()
        if len(spans) != len(seen):
            raise NoLayers(
                f"the VM made {len(spans)} calls in one run and {len(seen)} in another: the program's "
                f"control flow depends on its inputs"
            )
        rounds.append(Round.of_vm(start, end, [(a, b) for a, b in spans], kernel))
    anchors = relax_anchors(program, entry)
    calls = [_describe_kernel(n, s[:-1], s[-1] if s else (), anchors) for n, s in filter(None, seen)]
    return _side("TVM", calls, rounds, note)


def _side(label: str, calls: Sequence[LayerCall], rounds: Sequence[Round], note: str = "") -> SideProfile:
    """``calls`` with their times, the whole run and the time outside them, from ``rounds``."""
    parts = apportion(rounds)
    calls = tuple(replace(c, time_s=float(t)) for c, t in zip(calls, parts.calls_s))
    return SideProfile(label, calls, parts.total_s, note, parts.outside_s, parts.outside_noise_s)


def _torch_call(path: str, module: Any, inputs: Sequence[Any], output: Any) -> LayerCall:
    torch = __import__("torch")
    op = type(module).__name__
    in_shapes = tuple(tuple(int(d) for d in x.shape) for x in inputs if isinstance(x, torch.Tensor))
    outs = [o for o in (output if isinstance(output, (tuple, list)) else (output,)) if isinstance(o, torch.Tensor)]
    out_shape = tuple(int(d) for d in outs[0].shape) if outs else ()
    kind = PEER_ANCHORS.get(op, "")
    attrs, flops = "", None
    weight = getattr(module, "weight", None)
    if kind == "conv" and weight is not None:
        w = tuple(int(d) for d in weight.shape)
        in_shapes = in_shapes + (w,)
        padding = list(module.padding) if not isinstance(module.padding, str) else []
        attrs = window(w[2:], list(module.stride), padding, int(module.groups), list(module.dilation))
        flops = conv_flops(out_shape, w)
    elif kind == "matmul" and weight is not None and in_shapes:
        in_shapes = in_shapes + (tuple(int(d) for d in weight.shape),)
        flops = matmul_flops(in_shapes[0], out_shape)
    elif kind in ("max_pool", "avg_pool") and hasattr(module, "kernel_size"):
        two = lambda v: list(v) if isinstance(v, (tuple, list)) else [v] * 2  # noqa: E731
        attrs = window(two(module.kernel_size), two(module.stride), two(module.padding))
    return LayerCall(path or op, op, kind, 0.0, in_shapes, out_shape, attrs, flops)


#: calls of an empty module per measurement of the hooks' own time (the least of three is taken)
EMPTY_CALLS = 8


def _hook_time(module: Any, bare: Any, x: Any, windows: list[tuple[float, float]], clock: Clock) -> tuple[float, float]:
    """The hooks' own time per call, inside a window and outside it: ``module`` is an empty
    module with the hooks (appending to ``windows``), ``bare`` one without them."""
    hooked_s, bare_s = [], []
    for _ in range(3):
        windows.clear()
        for called, into in ((module, hooked_s), (bare, bare_s)):
            start = clock()
            for _ in range(EMPTY_CALLS):
                called(x)
            into.append((clock() - start) / EMPTY_CALLS)
    inside = min((end - start for start, end in windows), default=0.0)
    windows.clear()
    return inside, max(0.0, min(hooked_s) - min(bare_s) - inside)


def torch_profile(
    module: Any, inputs: Sequence[np.ndarray], runs: int = RUNS, clock: Clock = time.perf_counter, device: str = "cpu"
) -> SideProfile:
    """Each leaf module call of one forward, in order (a module called twice is two
    calls), timed by a forward pre-hook and hook, with its module path, shapes and
    attributes; the times from the same ``runs`` hooked forwards, less the hooks' own time
    (an empty module with and without them, each round). On ``device="cuda"`` the inputs
    are uploaded once and the GPU waited for at each clock read."""
    torch = __import__("torch")
    gpu = device != "cpu"

    def now() -> float:
        if gpu:
            torch.cuda.synchronize()
        return clock()

    leaves = [(path, m) for path, m in module.named_modules() if not any(True for _ in m.children())]
    seen: list[LayerCall] = []
    windows: list[tuple[float, float]] = []  # each hooked call of a run: (start, end)
    started: list[float] = []
    learning = [True]

    def hook(leaf: Any, path: str | None) -> list[Any]:
        def pre(mod, args):
            started.append(now())

        def post(mod, args, output):
            windows.append((started.pop(), now()))
            if learning[0] and path is not None:
                seen.append(_torch_call(path, mod, args, output))

        return [leaf.register_forward_pre_hook(pre), leaf.register_forward_hook(post)]

    tensors = [tensor_from_numpy(torch, a).to(device) if gpu else tensor_from_numpy(torch, a) for a in inputs]
    empty, bare = torch.nn.Identity(), torch.nn.Identity()
    hook(empty, None)
    handles = [h for path, leaf in leaves for h in hook(leaf, path)]
    rounds = []
    try:
        with torch.inference_mode():
            module(*tensors)  # warm-up, learning the calls
            learning[0] = False
            for _ in range(runs):
                windows.clear()
                start = now()
                module(*tensors)
                end = now()
                if len(windows) != len(seen):
                    raise NoLayers("torch called a different number of leaf modules in each run")
                spans = tuple(windows)
                inside, between = _hook_time(empty, bare, tensors[0], windows, now)
                rounds.append(Round.of_hooks(start, end, spans, inside, between))
    finally:
        for h in handles:
            h.remove()
    note = "torch timed on the GPU (inputs uploaded once, the GPU waited for at each clock read)" if gpu else ""
    return _side("torch", seen, rounds, note)


def _ort_shapes(entries: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(d) for d in dims) for e in entries or () if isinstance(e, Mapping) for dims in e.values())


def ort_events_profile(events: Sequence[Mapping[str, Any]], warmup_runs: int = 1) -> SideProfile:
    """Pure: onnxruntime's profile (its JSON trace events) as one run's node calls, in
    order, timed by the runs after ``warmup_runs`` (each run's ``model_run``)."""
    by_time = lambda keep: sorted(filter(keep, events), key=lambda e: e["ts"])  # noqa: E731
    runs = by_time(lambda e: e.get("cat") == "Session" and e.get("name") == "model_run")
    if len(runs) <= warmup_runs:
        raise NoLayers("onnxruntime's profile has no timed run")
    timed = runs[warmup_runs:]
    nodes = by_time(lambda e: e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time"))
    per_run = [[e for e in nodes if run["ts"] <= e["ts"] <= run["ts"] + run["dur"]] for run in timed]
    if len({len(r) for r in per_run}) != 1 or not per_run[0]:
        raise NoLayers("onnxruntime ran a different number of nodes in each run")
    calls = []
    for event in per_run[0]:
        args = event.get("args", {})
        op = str(args.get("op_name", ""))
        inputs, outputs = _ort_shapes(args.get("input_type_shape")), _ort_shapes(args.get("output_type_shape"))
        kind = PEER_ANCHORS.get(op, "")
        flops = None
        if kind == "conv" and len(inputs) >= 2 and outputs:
            flops = conv_flops(outputs[0], inputs[1])
        elif kind == "matmul" and inputs and outputs:
            flops = matmul_flops(inputs[0], outputs[0])
        name = str(event["name"]).removesuffix("_kernel_time")
        calls.append(LayerCall(name, op, kind, 0.0, inputs, outputs[0] if outputs else (), flops=flops))
    span = lambda e: (e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6)  # noqa: E731
    # the profiler's own time is inside the runs it times: nothing to remove
    rounds = [Round.of_hooks(*span(run), [span(e) for e in nodes_of]) for run, nodes_of in zip(timed, per_run)]
    return _side("onnxruntime", calls, rounds)


def peer_profile(name: str, run: Any, inputs: Sequence[np.ndarray], runs: int = RUNS) -> SideProfile:
    """The peer's layers, from what ``run`` carries: ``torch_module``, or ``onnx_model`` and ``onnx_inputs``
    (onnxruntime's per-node profile of ``runs`` runs after a warm-up, in a session like the peer's)."""
    module = getattr(run, "torch_module", None)
    if module is not None:
        return torch_profile(module, inputs, runs, device=getattr(run, "device", "cpu"))
    model = getattr(run, "onnx_model", None)
    if model is None:
        raise NoLayers(
            f"peer {name} of this workload has no layers to time (a torch module or an ONNX model): "
            "it is a plain function"
        )
    feed = dict(zip(run.onnx_inputs, inputs))
    from pytest_tvmperf.measure.threads import ort_session

    with tempfile.TemporaryDirectory(prefix="tvmperf-ort-profile-") as scratch:
        prefix = os.path.join(scratch, "profile")
        session = ort_session(model, enable_profiling=True, profile_file_prefix=prefix)
        for _ in range(runs + 1):
            session.run(None, feed)
        path = session.end_profiling()
        with open(path, encoding="utf-8") as f:
            events = json.load(f)
    return ort_events_profile(events)


def layer_tables(
    compiled: Any,
    args: Sequence[np.ndarray],
    program: Any,
    inputs: Sequence[np.ndarray],
    peers: Mapping[str, Callable[[], Any]],
    runs: int = RUNS,
    target: Any = None,
    device_type: str = "cpu",
) -> tuple[tuple[LayerTable, ...], list[str]]:
    """TVM's layer table against each of ``peers`` (name -> factory), and why one could not be
    made. ``target``: to time ``vm-compiled`` kernels under ``vm-bytecode``; ``device_type``: the test's."""
    from pytest_tvmperf.measure.threads import same_threads, tvm_threads

    problems: list[str] = []
    try:
        tvm_side = tvm_profile(compiled, args, program, runs, target=target)
    except NoLayers as exc:
        return (), [str(exc)]
    tables = []
    for name, factory in sorted(peers.items()):
        try:
            with same_threads(tvm_threads()):
                run = peer_for_device(factory(), device_type)
                tables.append(match(tvm_side, peer_profile(name, run, inputs, runs)))
        except (NoLayers, ImportError, PeerUnavailable) as exc:
            problems.append(f"no per-layer table against {name}: {exc}")
    return tuple(tables), problems


def for_test(
    prep: "Prepared",
    samples: "TimeSamples | None",
    verdicts: Sequence["RatioVerdict"],
    every_peer: bool,
    timing_lock: Callable[[], AbstractContextManager[object]],
    note: Callable[[str], None],
) -> tuple[LayerTable, ...]:
    """One test's tables, under its ``timing_lock``: against every peer timed when ``every_peer``
    (``--tvmperf-layers=on``), else those whose ``vs_<peer>`` limit failed. Problems go to ``note``."""
    timed = dict(samples.peers) if samples is not None else {}
    wanted = set(timed) if every_peer else {v.name for v in verdicts if str(v.status) == "exceeded"}
    factories = {name: prep.workload.peers[name] for name in sorted(wanted) if name in prep.workload.peers}
    if not factories:
        return ()
    local = prep.target.remote is None
    with timing_lock():
        target, device_type = (prep.target.tvm_target(), prep.target.device_type) if local else (None, "cpu")
        tables, problems = layer_tables(
            prep.compiled, prep.args, prep.workload.program, prep.inputs, factories, RUNS, target, device_type
        )
    for problem in problems:
        note(problem)
    tvm_s = statistics.median(samples.samples) if samples is not None else None
    return tuple(
        with_test_medians(table, tvm_s, statistics.median(timed[table.peer]) if timed.get(table.peer) else None)
        for table in tables
    )


def with_test_medians(table: LayerTable, tvm_s: float | None, peer_s: float | None) -> LayerTable:
    """``table`` noting the test's own medians (timed before its rows, maybe under another load)."""
    shown = [f"{side} {s * 1e3:.3f} ms" for side, s in (("TVM", tvm_s), (table.peer, peer_s)) if s is not None]
    if not shown:
        return table
    note = (
        "whole runs timed in the same rounds as the rows (each row and the time outside from the same runs); "
        f"the test's own medians, timed before them: {', '.join(shown)}"
    )
    return replace(table, notes=table.notes + (note,))
