"""What each kernel of a build is, read from a lowered module (TVM); the value,
:class:`KernelId`, is in values/kernel_id.py. Naming is pluggable: a
``layers`` mapping (kernel name -> source layer, e.g. from ``torch.export``'s module
stack) fills :attr:`KernelId.layer`.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_tvmperf.values.kernel_id import KernelId, op_of


def _dims(shape: Any) -> str:
    return "x".join(str(int(d)) if hasattr(d, "value") or isinstance(d, int) else str(d) for d in shape) or "scalar"


def identify(lowered: Any, layers: Mapping[str, str] | None = None) -> dict[str, KernelId]:
    """{kernel name: KernelId} for every TIR PrimFunc of a lowered module (empty for None)."""
    if lowered is None:
        return {}
    from tvm import tirx
    from tvm_ffi.structural import structural_hash

    out: dict[str, KernelId] = {}
    for gv, func in lowered.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        name = gv.name_hint
        bare = func.without_attr("global_symbol") if func.attrs and "global_symbol" in func.attrs else func
        shapes = ",".join(_dims(p.shape) for p in func.params if hasattr(p, "shape"))
        out[name] = KernelId(f"{structural_hash(bare) & (2**64 - 1):016x}", op_of(name), shapes,
                             (layers or {}).get(name, ""))
    return out


def kernel_identities(compiled: Any, layers: Mapping[str, str] | None = None) -> dict[str, KernelId] | None:
    """The identities of a compiled program's kernels (None where it keeps no module: a
    loaded library); ``layers``: {kernel name: source layer} where a mapping knows them
    (the plug-in point for naming kernels by the layer they compute)."""
    from pytest_tvmperf.builder.rebuild import lowered_module

    return identify(lowered_module(compiled), layers) or None
