"""Fair conditions for peer frameworks timed next to TVM in one process.

Eager PyTorch with its default thread count, in a process whose TVM thread pool has
run, was measured 100x slower than with one thread (23.9 ms against 0.22 ms for the
MLP at batch 4 on the 2-core CI machine): the two pools fight over the cores. So a
peer runs with as many threads as TVM uses (``tvm.runtime.num_threads()``), which is
also the fair comparison. onnxruntime sessions get ``intra_op_num_threads`` from
:func:`tvm_threads` when they are made; NumPy's BLAS keeps its own setting.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator


def tvm_threads() -> int:
    import tvm

    return int(tvm.runtime.num_threads())


@contextlib.contextmanager
def same_threads(threads: int) -> Iterator[None]:
    """PyTorch's intra-op thread count set to ``threads`` for the duration (when torch
    is imported), then restored."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch is not None and before is not None:
            torch.set_num_threads(before)
