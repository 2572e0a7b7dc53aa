"""What each kernel of a build is (values/kernel_id.py's :class:`KernelId`), read from a
lowered module. A ``layers`` mapping (kernel name -> source layer) fills
:attr:`KernelId.layer`; by default it is made from the workload's source layers
(``torch.export`` module paths, ONNX node names) by judge/source_layers.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from pytest_tvmperf.judge.source_layers import call_order, kernel_layers
from pytest_tvmperf.values.kernel_id import KernelId, op_of
from pytest_tvmperf.values.source_layer import SourceLayer


def _dims(shape: Any) -> str:
    return "x".join(str(int(d)) if hasattr(d, "value") or isinstance(d, int) else str(d) for d in shape) or "scalar"


def kernel_identities(
    compiled: Any, layers: Mapping[str, str] | None = None, sources: Sequence[SourceLayer] = ()
) -> dict[str, KernelId] | None:
    """The identities of a program's kernels, one per TIR PrimFunc of its lowered module (None
    for a loaded library), named by ``layers`` ({kernel: source layer}) or else by the
    ``sources`` each computes (``Workload.layers``)."""
    from pytest_tvmperf.builder.rebuild import lowered_module

    lowered = lowered_module(compiled)
    if lowered is None:
        return None
    from tvm import tirx
    from tvm_ffi.structural import structural_hash

    found: dict[str, KernelId] = {}
    for gv, func in lowered.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        name = gv.name_hint
        bare = func.without_attr("global_symbol") if func.attrs and "global_symbol" in func.attrs else func
        shapes = ",".join(_dims(p.shape) for p in func.params if hasattr(p, "shape"))
        digest = f"{structural_hash(bare) & (2**64 - 1):016x}"
        found[name] = KernelId(digest, op_of(name), shapes, (layers or {}).get(name, ""))
    if found and sources and layers is None:
        named = kernel_layers(found, sources, call_order(compiled.listing()))
        found = {name: replace(ident, layer=named.get(name, "")) for name, ident in found.items()}
    return found or None
