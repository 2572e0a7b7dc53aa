"""Fair conditions for peer frameworks timed next to TVM in one process.

Eager PyTorch with its default thread count, in a process whose TVM thread pool has run,
was measured 100x slower than with one thread (23.9 ms against 0.22 ms, the MLP at batch
4 on the 2-core CI machine): the two pools fight over the cores. So a peer runs with as
many threads as TVM (``tvm.runtime.num_threads()``), also the fair comparison:
onnxruntime sessions are made with that many (:func:`ort_session`); NumPy's BLAS and any
OpenMP runtime are held at it by threadpoolctl (uncontrolled, NumPy's BLAS threads made
the NumPy peer ratio swing from 0.54x to 15x between two runs of the same test).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator

#: after each parallel task, a TVM pool worker calls sched_yield this many times before it
#: sleeps, read once per process (TVM's default: 300,000). On a busy machine each yield waits
#: for the CPU-bound jobs' time slices (4.4 ms each, measured beside 4 jobs on 2 cores), so a
#: worker spins for 20 minutes after its last task and the process's exit waits for it (TVM
#: joins its workers); idle, the spinning worker is counted among the next sample's threads
#: and its waits flag the machine busy. 1,000 yields keep the workers awake between
#: back-to-back calls (the times are TVM's default's: ``benchmarks/pool_spin.py``)
POOL_SPIN_ENV, POOL_SPIN = "TVM_THREAD_POOL_SPIN_COUNT", "1000"


def tvm_threads() -> int:
    import tvm

    return int(tvm.runtime.num_threads())


def ort_session(model: bytes, **options):
    """An onnxruntime CPU session over ``model``, as many threads as TVM, ``options`` set on top."""
    import onnxruntime as ort

    settings = ort.SessionOptions()
    settings.log_severity_level = 3
    settings.intra_op_num_threads = tvm_threads()
    for name, value in options.items():
        setattr(settings, name, value)
    return ort.InferenceSession(model, settings, providers=["CPUExecutionProvider"])


@contextlib.contextmanager
def same_threads(threads: int) -> Iterator[None]:
    """PyTorch's intra-op threads and every BLAS and OpenMP pool threadpoolctl finds
    (NumPy's OpenBLAS among them) set to ``threads`` for the duration, then restored."""
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    if torch is not None:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)


@contextlib.contextmanager
def tvm_thread_count(threads: int | None) -> Iterator[None]:
    """TVM's thread pool resized to ``threads`` for the duration (None: left as it is),
    then restored (``runtime.config_threadpool``, mode 1: the pool's default, all big cores)."""
    if threads is None:
        yield
        return
    import tvm_ffi

    config = tvm_ffi.get_global_func("runtime.config_threadpool")
    before = tvm_threads()
    config(1, threads)
    try:
        yield
    finally:
        config(1, before)
