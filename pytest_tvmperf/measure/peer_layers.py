"""Per-layer time of both sides of a peer comparison (issue 35): TVM's kernel calls, each
timed by the VM's instrument with its argument shapes, and the peer's layers (torch: a
forward pre/post hook on each leaf module; onnxruntime: its own per-node profile). The
matching and the table are pure (``judge/layers.py``).

What it costs: a few instrumented runs of each side (:data:`RUNS`) after the test's
timing, paid only when asked for (``--tvmperf-layers=on``) or when a ``vs_<peer>`` limit
fails. TVM, torch and onnxruntime are imported lazily.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pytest_tvmperf.measure.relax_anchors import RelaxAnchor, relax_anchors, window
from pytest_tvmperf.judge.layers import (PEER_ANCHORS, LayerCall, LayerTable, SideProfile, conv_flops, fused_ops,
                                          match, matmul_flops, tvm_anchor)

#: instrumented runs of each side (after one warm-up run); each call's time is its median
RUNS = 5

Clock = Callable[[], float]


class NoLayers(Exception):
    """This side cannot be timed layer by layer here; the message says why."""


# ---------------------------------------------------------------- TVM


def _describe_kernel(name: str, inputs: tuple, output: tuple, anchors: Sequence[RelaxAnchor]) -> LayerCall:
    kind = tvm_anchor(name)
    attrs, flops = "", None
    if kind:
        have = set(inputs)
        for anchor in anchors:  # the Relax op this kernel computes: same output, its inputs among the kernel's
            if tvm_anchor(anchor.op) == kind and anchor.output == output and all(s in have for s in anchor.inputs[:2]):
                attrs, flops = anchor.attrs, anchor.flops
                break
    return LayerCall(name=name, op="+".join(fused_ops(name)), kind=kind, time_s=0.0, inputs=inputs, output=output,
                     attrs=attrs, flops=flops)


def _shape_of(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    if shape is None or not hasattr(value, "dtype"):
        return None
    try:
        return tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        return None


def tvm_profile(compiled: Any, args: Sequence[np.ndarray], program: Any, runs: int = RUNS,
                clock: Clock = time.perf_counter, target: Any = None) -> SideProfile:
    """Each kernel call of one run, in order, with its median time over ``runs``
    instrumented runs and its argument shapes (the last argument is its output:
    destination passing); VM builtins are left out of the calls (their time is the
    table's "outside kernels" row). The whole run's time is the median of ``runs``
    runs without the instrument."""
    from tvm import relax

    executable, note = getattr(compiled, "executable", None), ""
    if executable is not None and getattr(compiled, "exec_mode", "") == "compiled" and target is not None:
        # the compiled mode has no instrument: the same lowered module (the same kernels) as bytecode
        executable = relax.build(compiled.lowered, target, relax_pipeline=None, exec_mode="bytecode")
        note = ("TVM's kernels timed under vm-bytecode, built from this test's lowered module (vm-compiled has no "
                "instrument); the time outside kernels is vm-bytecode's")
    elif executable is None or getattr(compiled, "exec_mode", "") != "bytecode":
        raise NoLayers("per-layer time needs a Relax VM run here (the VM's instrument times each kernel call); "
                       "this test runs under another executor or on a remote device")

    kernels = {gv.name_hint for gv in compiled.lowered.get_global_vars()}
    vm = relax.VirtualMachine(executable, compiled.dev)
    device_args = [__import__("tvm").runtime.tensor(np.ascontiguousarray(a), compiled.dev) for a in args]
    seen: list[tuple[str, tuple]] = []
    times: list[list[float]] = []
    started: list[float] = []
    first = [True]

    def instrument(func, func_symbol, before_run, ret_value, *call_args):
        name = str(func_symbol)
        if name not in kernels:
            return 0
        if before_run:
            if first[0]:
                seen.append((name, tuple(s for s in (_shape_of(a) for a in call_args) if s is not None)))
            started.append(clock())
        else:
            times[-1].append(clock() - started.pop())
        return 0

    entry = compiled.entry
    vm[entry](*device_args)  # warm-up
    totals = []
    for _ in range(runs):  # the whole run without the instrument, whose Python calls cost more than a small kernel
        start = clock()
        vm[entry](*device_args)
        totals.append(clock() - start)
    vm.set_instrument(instrument)
    for i in range(runs):
        times.append([])
        vm[entry](*device_args)
        first[0] = False
    counts = {len(t) for t in times}
    if counts != {len(seen)}:
        raise NoLayers(f"the VM called a different number of kernels in each run ({sorted(counts)}): the program's "
                       f"control flow depends on its inputs")
    anchors = relax_anchors(program, entry)
    calls = []
    for i, (name, shapes) in enumerate(seen):
        described = _describe_kernel(name, shapes[:-1], shapes[-1] if shapes else (), anchors)
        calls.append(_with_time(described, statistics.median(t[i] for t in times)))
    return SideProfile("TVM", tuple(calls), float(statistics.median(totals)), note)


def _with_time(call: LayerCall, seconds: float) -> LayerCall:
    from dataclasses import replace

    return replace(call, time_s=float(seconds))


# ---------------------------------------------------------------- torch


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
        attrs = window(w[2:], list(module.stride), list(module.padding) if not isinstance(module.padding, str) else [],
                        int(module.groups), list(module.dilation))
        flops = conv_flops(out_shape, w)
    elif kind == "matmul" and weight is not None and in_shapes:
        in_shapes = in_shapes + (tuple(int(d) for d in weight.shape),)
        flops = matmul_flops(in_shapes[0], out_shape)
    elif kind in ("max_pool", "avg_pool") and hasattr(module, "kernel_size"):
        k = module.kernel_size if isinstance(module.kernel_size, (tuple, list)) else (module.kernel_size,) * 2
        s = module.stride if isinstance(module.stride, (tuple, list)) else (module.stride,) * 2
        p = module.padding if isinstance(module.padding, (tuple, list)) else (module.padding,) * 2
        attrs = window(list(k), list(s), list(p))
    return LayerCall(name=path or op, op=op, kind=kind, time_s=0.0, inputs=in_shapes, output=out_shape,
                     attrs=attrs, flops=flops)


def torch_profile(module: Any, inputs: Sequence[np.ndarray], runs: int = RUNS,
                  clock: Clock = time.perf_counter) -> SideProfile:
    """Each leaf module call of one forward, in order (a module called twice is two
    calls), with its median time over ``runs`` runs, timed by a forward pre-hook and a
    forward hook; its module path, shapes and attributes."""
    torch = __import__("torch")
    from pytest_tvmperf.measure.peer_tensors import tensor_from_numpy

    leaves = [(path, m) for path, m in module.named_modules() if not any(True for _ in m.children())]
    seen: list[LayerCall] = []
    times: list[list[float]] = []
    started: list[float] = []
    first = [True]
    handles = []

    def make_hooks(path: str):
        def pre(mod, args):
            started.append(clock())

        def post(mod, args, output):
            elapsed = clock() - started.pop()
            times[-1].append(elapsed)
            if first[0]:
                seen.append(_torch_call(path, mod, args, output))

        return pre, post

    tensors = [tensor_from_numpy(torch, a) for a in inputs]
    totals = []
    with torch.inference_mode():
        module(*tensors)  # warm-up, not hooked
        for _ in range(runs):  # the whole run without hooks
            start = clock()
            module(*tensors)
            totals.append(clock() - start)
    try:
        for path, leaf in leaves:
            pre, post = make_hooks(path)
            handles.append(leaf.register_forward_pre_hook(pre))
            handles.append(leaf.register_forward_hook(post))
        for _ in range(runs):
            times.append([])
            with torch.inference_mode():
                module(*tensors)
            first[0] = False
    finally:
        for h in handles:
            h.remove()
    if {len(t) for t in times} != {len(seen)}:
        raise NoLayers("torch called a different number of leaf modules in each run")
    calls = tuple(_with_time(c, statistics.median(t[i] for t in times)) for i, c in enumerate(seen))
    return SideProfile("torch", calls, float(statistics.median(totals)))


# ---------------------------------------------------------------- onnxruntime


def _ort_shapes(entries: Any) -> tuple[tuple[int, ...], ...]:
    out = []
    for entry in entries or ():
        for dims in (entry.values() if isinstance(entry, Mapping) else ()):
            out.append(tuple(int(d) for d in dims))
    return tuple(out)


def ort_events_profile(events: Sequence[Mapping[str, Any]], warmup_runs: int = 1) -> SideProfile:
    """Pure: onnxruntime's profile (its JSON list of trace events) as one run's node
    calls, in order, each with its median time over the runs after ``warmup_runs``."""
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
                  key=lambda e: e["ts"])
    if len(runs) <= warmup_runs:
        raise NoLayers("onnxruntime's profile has no timed run")
    timed = runs[warmup_runs:]
    nodes = sorted((e for e in events if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time")),
                   key=lambda e: e["ts"])
    per_run: list[list[Mapping[str, Any]]] = []
    for run in timed:
        lo, hi = run["ts"], run["ts"] + run["dur"]
        per_run.append([e for e in nodes if lo <= e["ts"] <= hi])
    if len({len(r) for r in per_run}) != 1 or not per_run[0]:
        raise NoLayers("onnxruntime ran a different number of nodes in each run")
    calls = []
    for i, event in enumerate(per_run[0]):
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
        calls.append(LayerCall(name=name, op=op, kind=kind,
                               time_s=statistics.median(r[i]["dur"] for r in per_run) / 1e6,
                               inputs=inputs, output=outputs[0] if outputs else (), flops=flops))
    return SideProfile("onnxruntime", tuple(calls), statistics.median(r["dur"] for r in timed) / 1e6)


def ort_profile(model: bytes, names: Sequence[str], inputs: Sequence[np.ndarray], runs: int = RUNS) -> SideProfile:
    """onnxruntime's per-node profile (``SessionOptions.enable_profiling``) of ``runs``
    runs after a warm-up, in a session like the peer's (CPU, TVM's thread count)."""
    ort = __import__("onnxruntime")
    from pytest_tvmperf.measure.threads import tvm_threads

    with tempfile.TemporaryDirectory(prefix="tvmperf-ort-profile-") as scratch:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = tvm_threads()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(scratch, "profile")
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        feed = dict(zip(names, inputs))
        for _ in range(runs + 1):
            session.run(None, feed)
        path = session.end_profiling()
        with open(path, encoding="utf-8") as f:
            events = json.load(f)
    return ort_events_profile(events)


# ---------------------------------------------------------------- both


def peer_profile(name: str, run: Any, inputs: Sequence[np.ndarray], runs: int = RUNS) -> SideProfile:
    """The peer ``name``'s layers, from what its ``run`` callable carries: a torch module
    (``run.torch_module``) or an ONNX model (``run.onnx_model``, ``run.onnx_inputs``)."""
    module = getattr(run, "torch_module", None)
    if module is not None:
        return torch_profile(module, inputs, runs)
    model = getattr(run, "onnx_model", None)
    if model is not None:
        return ort_profile(model, getattr(run, "onnx_inputs"), inputs, runs)
    raise NoLayers(f"peer {name} of this workload has no layers to time (a torch module or an ONNX model): "
                   f"it is a plain function")


def layer_tables(compiled: Any, args: Sequence[np.ndarray], program: Any, inputs: Sequence[np.ndarray],
                 peers: Mapping[str, Callable[[], Any]], runs: int = RUNS,
                 target: Any = None) -> tuple[tuple[LayerTable, ...], list[str]]:
    """The layer table of TVM against each peer in ``peers`` (name -> factory), and why
    a table could not be made (one line each). ``target``: the TVM target, to time a
    ``vm-compiled`` build's kernels under ``vm-bytecode``."""
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
                tables.append(match(tvm_side, peer_profile(name, factory(), inputs, runs)))
        except (NoLayers, ImportError) as exc:
            problems.append(f"no per-layer table against {name}: {exc}")
    return tuple(tables), problems


def for_test(tv: Any, prep: Any, samples: Any, verdicts: Sequence[Any]) -> tuple[LayerTable, ...]:
    """The tables of one test (``tv``: its ``Tvmperf``): against every peer timed when
    ``--tvmperf-layers=on``, else against the peers whose ``vs_<peer>`` limit failed,
    else none (nothing is paid). The whole-run medians of the test's own samples are the
    tables' totals (the instrumented runs are slower by the instrument's own calls)."""
    session = tv.session
    timed = dict(samples.peers) if samples is not None else {}
    failed = {v.name for v in verdicts if str(v.status) == "exceeded"}
    wanted = set(timed) if session.settings.layers else failed
    factories = {name: prep.workload.peers[name] for name in sorted(wanted) if name in prep.workload.peers}
    if not factories:
        return ()
    with session.timing_lock(tv.target):
        tables, problems = layer_tables(prep.compiled, prep.args, prep.workload.program, prep.inputs, factories,
                                        target=prep.target.tvm_target() if prep.target.remote is None else None)
    session.report.not_measured.update(problems)
    out = []
    for table in tables:
        peer_samples = timed.get(table.peer)
        out.append(with_totals(table, statistics.median(samples.samples) if samples is not None else None,
                               statistics.median(peer_samples) if peer_samples else None))
    return tuple(out)


def with_totals(table: LayerTable, tvm_total_s: float | None, peer_total_s: float | None) -> LayerTable:
    """``table`` with the whole-run times of the test's own (uninstrumented) samples: the
    rows of time outside every call are recomputed from them."""
    from dataclasses import replace

    tvm_total = table.tvm_total_s if tvm_total_s is None else tvm_total_s
    peer_total = table.peer_total_s if peer_total_s is None else peer_total_s
    rows = []
    for row in table.rows:
        if row.outside == "tvm":
            inside = sum(r.tvm_s for r in table.rows if not r.outside)
            row = replace(row, tvm_outside_s=max(0.0, tvm_total - inside))
        elif row.outside == "peer":
            inside = sum(r.peer_s for r in table.rows if not r.outside)
            row = replace(row, peer_outside_s=max(0.0, peer_total - inside))
        rows.append(row)
    return replace(table, rows=tuple(rows), tvm_total_s=tvm_total, peer_total_s=peer_total)
