import sys, os, numpy as np, tvm
from tvm import te
import tvm.tirx as tir
out = os.path.abspath("art")
def mm(n, mcpu, tag):
    A = te.placeholder((n, n), name="A"); B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    f = te.create_prim_func([A, B, C]).with_attr("global_symbol", f"mm{n}")
    tgt = tvm.target.Target({"kind": "llvm", "mcpu": mcpu}) if mcpu else tvm.target.Target({"kind": "llvm", "mcpu": str(tvm.target.codegen.llvm_get_system_cpu())})
    lib = tvm.compile(f, target=tgt)
    p = f"{out}/mm{n}_{tag}.so"; lib.export_library(p)
    np.save(f"{out}/A{n}.npy", np.random.rand(n, n).astype("float32"))
    np.save(f"{out}/B{n}.npy", np.random.rand(n, n).astype("float32"))
    np.save(f"{out}/C{n}.npy", np.zeros((n, n), "float32"))
    return p
def yuv(layout):
    # rgb -> yuv per pixel: planar (3,H,W) contiguous vs reading transposed (W,H,3) layout
    H = W = 1024
    if layout == "contig":
        X = te.placeholder((3, H, W), name="X")
        get = lambda c, i, j: X[c, i, j]
    else:
        X = te.placeholder((W, H, 3), name="X")  # column-major-ish: i stride = 3, j stride = 3*H
        get = lambda c, i, j: X[j, i, c]
    Y = te.compute((3, H, W), lambda c, i, j: tir.Select(c == 0,
            tir.const(0.299, "float32") * get(0, i, j) + tir.const(0.587, "float32") * get(1, i, j) + tir.const(0.114, "float32") * get(2, i, j),
            tir.Select(c == 1, -tir.const(0.169, "float32") * get(0, i, j) - tir.const(0.331, "float32") * get(1, i, j) + tir.const(0.5, "float32") * get(2, i, j),
                                    tir.const(0.5, "float32") * get(0, i, j) - tir.const(0.419, "float32") * get(1, i, j) - tir.const(0.081, "float32") * get(2, i, j))), name="Y")
    f = te.create_prim_func([X, Y]).with_attr("global_symbol", f"yuv_{layout}")
    lib = tvm.compile(f, target=tvm.target.Target({"kind": "llvm", "mcpu": "haswell"}))
    p = f"{out}/yuv_{layout}.so"; lib.export_library(p)
    shape = (3, H, W) if layout == "contig" else (W, H, 3)
    np.save(f"{out}/X_{layout}.npy", np.random.rand(*shape).astype("float32"))
    np.save(f"{out}/Y.npy", np.zeros((3, H, W), "float32"))
yuv("contig"); yuv("transposed")
print(open("/proc/cpuinfo").read().count("avx512f"), tvm.target.Target("llvm").attrs.get("mcpu"))
