"""RGB -> YUV colour conversion in TE (seed ``rgb2yuv-te-schedule-tuning``)."""

from __future__ import annotations

import numpy as np

from pytest_tvmperf.workload import Workload

SCHEDULES = ("default", "parallel", "gpu")

#: rgb @ MATRIX gives (y, u, v) per pixel
MATRIX = np.array([[0.257, -0.148, 0.439], [0.504, -0.291, -0.368], [0.098, 0.439, -0.071]], dtype="float32")


def rgb2yuv(schedule: str = "default", width: int = 1920, height: int = 1080) -> Workload:
    """The 1920x1080x3 conversion: ``default`` is the plain loop nest; ``parallel`` (the
    seed's tuned CPU template) splits the height by 8, parallelizes the fused outer loops,
    vectorizes the inner one, unrolls the channels; ``gpu`` (the seed's GPU schedule, for
    ``targets=["cuda"]``): one pixel per thread in blocks of 256, channels unrolled."""
    from tvm import s_tir, te

    if schedule not in SCHEDULES:
        raise ValueError(f"rgb2yuv(schedule={schedule!r}): choose from {', '.join(SCHEDULES)}")
    rgb = te.placeholder((width, height, 3), name="rgb")
    m = MATRIX

    def channel(k: int, i, j):
        return rgb[i, j, 0] * float(m[0, k]) + rgb[i, j, 1] * float(m[1, k]) + rgb[i, j, 2] * float(m[2, k])

    yuv = te.compute(
        (width, height, 3),
        lambda i, j, k: te.if_then_else(
            k == 0, channel(0, i, j), te.if_then_else(k == 1, channel(1, i, j), channel(2, i, j))
        ),
        name="yuv",
    )
    func = te.create_prim_func([rgb, yuv])
    if schedule != "default":
        sch = s_tir.Schedule(func)
        i, j, k = sch.get_loops(sch.get_sblock("yuv"))
        if schedule == "parallel":
            j_outer, j_inner = sch.split(j, factors=[None, 8])
            fused = sch.fuse(i, j_outer)
            sch.reorder(fused, k, j_inner)
            sch.parallel(fused)
            sch.vectorize(j_inner)
        else:  # gpu: one pixel per thread, 256 threads a block
            blocks, thread = sch.split(sch.fuse(i, j), factors=[None, 256])
            sch.bind(blocks, "blockIdx.x")
            sch.bind(thread, "threadIdx.x")
        sch.unroll(k)
        func = sch.mod["main"]

    def make_inputs(rng: np.random.Generator, dims) -> list[np.ndarray]:
        return [rng.uniform(size=(width, height, 3)).astype("float32")]

    def reference(a: np.ndarray) -> np.ndarray:
        return a @ MATRIX

    return Workload(
        name=f"rgb2yuv(schedule={schedule!r})",
        program=func,
        make_inputs=make_inputs,
        reference=reference,
        rtol=1e-4,
        atol=1e-4,
        peers={"numpy": lambda: reference},
    )
