"""ONNX models as workloads: imported with ``tvm.relax.frontend.onnx.from_onnx``, fed
seeded inputs of the graph's input shapes and dtypes, and checked against onnxruntime,
the ``onnx`` package's NumPy evaluator, or a NumPy callable. Needs the optional ``onnx``
extra (``pip install 'pytest-tvmperf[onnx]'``), imported lazily.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pytest_tvmperf.measure.threads import ort_session
from pytest_tvmperf.workload import PeerFactory, PeerUnavailable, Workload, WorkloadError, random_input
from pytest_tvmperf.workloads.onnx_layers import source_layers

EXTRA_HINT = "pip install 'pytest-tvmperf[onnx]'"

#: the models ``onnx`` ships in ``backend/test/data/light/`` (real architectures, filled weights)
BUNDLED_ONNX = tuple(
    "bvlc_alexnet densenet121 inception_v1 inception_v2 resnet50 shufflenet squeezenet vgg19 zfnet512".split()
)


class MissingDependency(ImportError):
    """An optional package that an ONNX workload needs is not installed."""


def _require(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        raise MissingDependency(
            f"{what} needs the optional package {package!r}, which is not installed: {EXTRA_HINT} "
            f"(or pip install {package})"
        ) from exc


def _load(model: Any):
    onnx = _require("onnx", "an ONNX workload")
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise WorkloadError(f"onnx_workload: no ONNX file at {path}")
        return onnx.load(str(path))
    raise WorkloadError(f"onnx_workload: model must be a path or an onnx.ModelProto, got {type(model).__name__}")


def graph_inputs(model) -> list[tuple[str, list[int | str | None], np.dtype]]:
    """The graph's run-time inputs as ``(name, dims, numpy dtype)``; a dim is an int, a name or None."""
    from onnx import helper

    initializers = {t.name for t in model.graph.initializer}
    out = []
    for value in model.graph.input:
        if value.name in initializers:  # IR < 4 lists the weights among the inputs
            continue
        if not value.type.HasField("tensor_type"):
            raise WorkloadError(
                f"onnx_workload: input {value.name!r} is not a tensor; only tensor inputs are supported"
            )
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
        out.append((value.name, dims, np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))))
    return out


def _resolve_shapes(inputs, shapes: Mapping[str, Sequence[int]] | None) -> dict[str, tuple[int, ...]]:
    shapes = dict(shapes or {})
    unknown = set(shapes) - {name for name, _, _ in inputs}
    if unknown:
        raise WorkloadError(
            f"onnx_workload: shapes names {sorted(unknown)}, not inputs of the model "
            f"(inputs: {', '.join(name for name, _, _ in inputs)})"
        )
    resolved: dict[str, tuple[int, ...]] = {}
    for name, dims, _ in inputs:
        if name in shapes:
            resolved[name] = tuple(int(d) for d in shapes[name])
        elif all(isinstance(d, int) and d > 0 for d in dims):
            resolved[name] = tuple(dims)  # type: ignore[arg-type]
        else:
            raise WorkloadError(
                f"onnx_workload: input {name!r} has dims {dims} that are not all static; "
                f"give them, e.g. shapes={{{name!r}: [...]}}"
            )
    return resolved


def _with_input_shapes(model, shapes: Mapping[str, tuple[int, ...]]):
    """A copy of ``model`` whose inputs declare ``shapes`` (for onnxruntime), inferred shapes dropped."""
    model = copy.deepcopy(model)
    for value in model.graph.input:
        if value.name in shapes:
            shape = value.type.tensor_type.shape
            shape.ClearField("dim")
            for d in shapes[value.name]:
                shape.dim.add().dim_value = int(d)
    del model.graph.value_info[:]
    for value in model.graph.output:
        value.type.tensor_type.ClearField("shape")
    return model


def _onnxruntime_reference(model, names: list[str]) -> Callable[..., list[np.ndarray]]:
    _require("onnxruntime", "reference='onnxruntime'")
    serialized = model.SerializeToString()
    session = None

    def reference(*arrays: np.ndarray) -> list[np.ndarray]:
        nonlocal session
        if session is None:  # made on first use: building a Workload stays cheap
            session = ort_session(serialized)  # as many threads as TVM (measure/threads.py)
        return list(session.run(None, dict(zip(names, arrays))))

    return reference


def _onnxruntime_peer(model, names: list[str], what: str) -> PeerFactory:
    """``peers["onnxruntime"]``: opens a CPU ``InferenceSession`` over the model, returns ``run(*inputs)``."""

    def factory() -> Callable[..., list[np.ndarray]]:
        _require("onnxruntime", "the onnxruntime peer")
        serialized = model.SerializeToString()
        try:
            session = ort_session(serialized)
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise PeerUnavailable(f"onnxruntime cannot load {what}: {str(exc).strip().splitlines()[0]}") from exc

        def run(*arrays: np.ndarray) -> list[np.ndarray]:
            return session.run(None, dict(zip(names, arrays)))

        run.onnx_model, run.onnx_inputs = serialized, list(names)  # type: ignore[attr-defined]  # measure/peer_layers.py
        return run

    return factory


def _numpy_reference(model, names: list[str]) -> Callable[..., list[np.ndarray]]:
    """The ``onnx`` package's pure-NumPy evaluator (``onnx.reference.ReferenceEvaluator``)."""
    onnx_reference = _require("onnx.reference", "reference='numpy'")
    evaluator = onnx_reference.ReferenceEvaluator(model)

    def reference(*arrays: np.ndarray) -> list[np.ndarray]:
        return [np.asarray(o) for o in evaluator.run(None, dict(zip(names, arrays)))]

    return reference


def onnx_workload(
    model: Any,
    shapes: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
    reference: str | Callable[..., Any] = "onnxruntime",
    *,
    bind_params: bool = True,
    make_inputs: Callable[[np.random.Generator, Mapping[str, int]], Sequence[np.ndarray]] | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-4,
    seed: int = 0,
    peers: Mapping[str, PeerFactory] | None = None,
) -> Workload:
    """An ONNX model (a path or an ``onnx.ModelProto``) as a Relax workload.

    name
        shown in reports, compared with the baseline's; by default
        ``onnx_workload('<file stem or graph name>', <overridden shapes>)``.
    shapes
        ``{input name: shape}`` overriding the graph's (needed for symbolic dims);
        onnxruntime is given a copy of the model declaring them.
    reference
        ``"onnxruntime"`` (the default), ``"numpy"`` (``onnx.reference.ReferenceEvaluator``),
        or a callable ``reference(*inputs)`` in graph input order.
    bind_params
        True: initializers become constants (``from_onnx``'s default); False: they are
        passed at run time as the workload's ``params``.
    make_inputs
        ``make_inputs(rng, dims) -> [arrays]`` in graph input order; by default standard
        normal floats, integers in [0, 10), random booleans.
    rtol, atol
        the check's tolerance, ``|got - expected| <= atol + rtol * |expected|``: 1e-4 each
        as ``torch_workload``'s (a deep float32 network differs from onnxruntime by several 1e-5).
    peers
        extra peers by name, beside (or replacing) ``"onnxruntime"``, every ONNX
        workload's ``InferenceSession`` over the model. The ``"numpy"`` reference is no
        peer: an interpreter is nothing to time against.
    """
    source = model
    model = _load(model)
    inputs = graph_inputs(model)
    if not inputs:
        raise WorkloadError("onnx_workload: the model has no run-time inputs")
    resolved = _resolve_shapes(inputs, shapes)
    names = [n for n, _, _ in inputs]
    overridden = {n: s for n, s in resolved.items() if shapes and n in shapes}
    checked_model = _with_input_shapes(model, overridden) if overridden else model

    if callable(reference):
        ref, reference_name = reference, "given"
    elif reference == "onnxruntime":
        ref, reference_name = _onnxruntime_reference(checked_model, names), "onnxruntime"
    elif reference == "numpy":
        ref, reference_name = _numpy_reference(checked_model, names), "onnx NumPy evaluator (onnx.reference)"
    else:
        raise WorkloadError(f"onnx_workload: reference must be 'onnxruntime', 'numpy' or a callable, got {reference!r}")

    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.onnx import from_onnx

    shape_dict, dtype_dict = {n: list(s) for n, s in resolved.items()}, {n: str(dt) for n, _, dt in inputs}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Renaming name ")
        mod = from_onnx(model, shape_dict=shape_dict, dtype_dict=dtype_dict, keep_params_in_input=not bind_params)
    params: tuple[tuple[str, np.ndarray], ...] = ()
    if not bind_params:
        mod, detached = detach_params(mod)
        values = detached.get("main", [])
        param_vars = list(mod["main"].params)[len(inputs) :]
        params = tuple((str(v.name), t.numpy()) for v, t in zip(param_vars, values))

    def seeded_inputs(rng: np.random.Generator, dims) -> list[np.ndarray]:
        return [random_input(rng, resolved[n], dtype, f"onnx_workload input {n!r}") for n, _, dtype in inputs]

    if name is None:
        details = [repr(Path(source).stem if isinstance(source, (str, os.PathLike)) else model.graph.name or "model")]
        details += [f"{n}={list(s)}" for n, s in overridden.items()]
        details += [] if bind_params else ["bind_params=False"]
        name = f"onnx_workload({', '.join(details)})"
    return Workload(
        name=name,
        program=mod,
        make_inputs=make_inputs or seeded_inputs,
        reference=ref,
        params=params,
        rtol=rtol,
        atol=atol,
        seed=seed,
        peers={"onnxruntime": _onnxruntime_peer(checked_model, names, name), **(peers or {})},
        reference_name=reference_name,
        made_by="onnx_workload",
        layers=source_layers(checked_model),
    )


def small_mlp_model(batch: int = 4, features: Sequence[int] = (64, 32, 16), seed: int = 0):
    """Gemm+Relu+Gemm as an ``onnx.ModelProto`` (opset 13, IR 8 for onnxruntime) and its weights."""
    onnx = _require("onnx", "small_mlp_onnx()")
    from onnx import TensorProto, helper, numpy_helper

    n_in, n_hidden, n_out = features
    rng = np.random.default_rng(seed + 1)
    weights = {
        "w0": (rng.standard_normal((n_hidden, n_in)) / np.sqrt(n_in)).astype("float32"),
        "b0": (rng.standard_normal(n_hidden) * 0.1).astype("float32"),
        "w1": (rng.standard_normal((n_out, n_hidden)) / np.sqrt(n_hidden)).astype("float32"),
        "b1": (rng.standard_normal(n_out) * 0.1).astype("float32"),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w0", "b0"], ["h"], transB=1),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Gemm", ["r", "w1", "b1"], ["y"], transB=1),
        ],
        "small_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, n_out])],
        initializer=[numpy_helper.from_array(a, name) for name, a in weights.items()],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8, producer_name="pytest-tvmperf"
    )
    onnx.checker.check_model(model)
    return model, weights


def small_mlp_onnx(
    batch: int = 4,
    features: Sequence[int] = (64, 32, 16),
    reference: str | None = None,
    bind_params: bool = True,
    seed: int = 0,
) -> Workload:
    """A small Gemm+Relu+Gemm ONNX model, checked against ``reference`` (None: a NumPy function
    of the weights, also the ``"numpy"`` peer; else as for :func:`onnx_workload`)."""
    model, w = small_mlp_model(batch, features, seed)

    def numpy_reference(x: np.ndarray) -> np.ndarray:
        h = np.maximum(x @ w["w0"].T + w["b0"], 0)
        return h @ w["w1"].T + w["b1"]

    workload = onnx_workload(
        model,
        name=f"small_mlp_onnx(batch={batch}, features={tuple(features)}"
        f"{'' if reference is None else f', reference={reference!r}'}{'' if bind_params else ', bind_params=False'})",
        reference=reference or numpy_reference,
        bind_params=bind_params,
        seed=seed,
        peers={"numpy": lambda: numpy_reference},
    )
    return workload if reference is not None else dataclasses.replace(workload, reference_name="NumPy")


def _randomize_fills(model, seed: int):
    """Each ``ConstantOfShape`` fill of a weight (2-D or more) as a seeded He-normal
    ``Constant``, so the output depends on every layer; 1-D fills (biases, batch norm) kept."""
    from onnx import helper, numpy_helper

    model = copy.deepcopy(model)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    rng = np.random.default_rng(seed + 1)
    nodes = []
    for node in model.graph.node:
        shape = shapes.get(node.input[0]) if node.op_type == "ConstantOfShape" and node.input else None
        if shape is None or shape.size < 2:
            nodes.append(node)
            continue
        dims = tuple(int(d) for d in shape)
        fan_in = int(np.prod(dims[1:])) or 1
        value = (rng.standard_normal(dims) * np.sqrt(2.0 / fan_in)).astype("float32")
        nodes.append(helper.make_node("Constant", [], list(node.output), value=numpy_helper.from_array(value)))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def bundled_onnx(
    name: str = "squeezenet",
    shapes: Mapping[str, Sequence[int]] | None = None,
    random_weights: bool = False,
    reference: str | Callable[..., Any] = "onnxruntime",
    rtol: float = 1e-4,
    atol: float = 1e-4,
    seed: int = 0,
) -> Workload:
    """A model the ``onnx`` package ships in ``onnx/backend/test/data/light/`` (see
    :data:`BUNDLED_ONNX`), checked against onnxruntime by default.

    Their weights are constant fills (every output the same whatever the input);
    ``random_weights=True`` makes them seeded He-normal constants so the check covers
    every layer. ``shapes`` overrides the input shape, e.g. ``{"data_0": [1, 3, 64, 64]}``
    (``gpu_0/data_0`` for resnet50, shufflenet and zfnet512).
    """
    onnx = _require("onnx", f"bundled_onnx({name!r})")
    stem = name.removeprefix("light_").removesuffix(".onnx")
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{stem}.onnx"
    if not path.is_file():
        raise WorkloadError(
            f"bundled_onnx({name!r}): the installed onnx has no {path.name}; choose one of {', '.join(BUNDLED_ONNX)}"
        )
    model = onnx.load(str(path))
    if random_weights:
        model = _randomize_fills(model, seed)
    details = [repr(stem)] + [f"{n}={list(s)}" for n, s in (shapes or {}).items()]
    details += ["random_weights=True"] if random_weights else []
    return onnx_workload(
        model, shapes, f"bundled_onnx({', '.join(details)})", reference, rtol=rtol, atol=atol, seed=seed
    )
