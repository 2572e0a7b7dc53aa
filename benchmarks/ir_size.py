"""Size and cost of the IR form of a baseline: the lowered module of each workload as
``tvm.ir.save_json`` text and gzip-compressed (what ``--tvmperf-update`` stored before its
large tensors were stored apart: see benchmarks/baseline_size.py), against TVMScript, with
the round trip's structural equality and the time to rebuild it.

    python benchmarks/ir_size.py
"""

from __future__ import annotations

import gzip
import time

import tvm
from tvm_ffi.structural import structural_equal

from pytest_tvmperf import workloads
from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.builder.rebuild import build_library, lowered_module
from pytest_tvmperf.builder.targets import resolve_target
from pytest_tvmperf.store import lowered_ir

CASES = [
    ("mlp(batch=1) bound weights", lambda: workloads.mlp(batch=1), "vm-bytecode"),
    ("mlp(batch=1) run-time weights", lambda: workloads.mlp(batch=1, bind_params=False), "vm-bytecode"),
    ("mlp(batch='n') bound weights", lambda: workloads.mlp(batch="n"), "vm-bytecode"),
    ("rgb2yuv(parallel)", lambda: workloads.rgb2yuv(schedule="parallel"), "prim"),
    ("dla_conv(stem, scale=0.25)", lambda: workloads.dla_conv("stem", scale=0.25), "vm-bytecode"),
]


def main() -> None:
    import tempfile
    from pathlib import Path

    target = resolve_target("llvm")
    print(f"{'workload':32} {'json':>9} {'json.gz':>9} {'TVMScript.gz':>13} {'equal':>6} {'load':>7} {'rebuild':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, executor in CASES:
            module = lowered_module(get_executor(executor).compile(make(), target))
            text = tvm.ir.save_json(module)
            data = lowered_ir.encode(module)
            script = len(gzip.compress(module.script(show_meta=True).encode(), 6, mtime=0))
            t0 = time.perf_counter()
            back = lowered_ir.decode(data)
            load_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            build_library(back, executor, target, Path(tmp) / f"{len(name)}.so")
            build_s = time.perf_counter() - t0
            print(
                f"{name:32} {len(text) / 1e6:8.2f}M {len(data) / 1e6:8.3f}M {script / 1e6:12.3f}M "
                f"{str(structural_equal(module, back, map_free_vars=True)):>6} {load_s:6.2f}s {build_s:7.2f}s"
            )


if __name__ == "__main__":
    main()
