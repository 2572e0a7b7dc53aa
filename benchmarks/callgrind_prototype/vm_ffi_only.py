import ctypes, os, sys, time, numpy as np, tvm_ffi
A = os.path.abspath("art")
try:
    lib = tvm_ffi.load_module(f"{A}/mlp.so"); print("load ok without runtime lib")
except Exception as e:
    print("load without libtvm_runtime:", repr(e)[:200])
    import importlib.util
    d = os.path.join(os.path.dirname(importlib.util.find_spec("tvm").origin), "lib")  # find_spec does not import tvm
    ctypes.CDLL(os.path.join(d, "libtvm_runtime.so"), ctypes.RTLD_GLOBAL)
    lib = tvm_ffi.load_module(f"{A}/mlp.so"); print("load ok with libtvm_runtime.so")
print("tvm imported?", "tvm" in sys.modules)
exe = lib["vm_load_executable"]()
exe["vm_initialization"](1, 0, 2)
from harness import arena
_k, arrs = arena([np.load(f"{A}/mlp_x.npy")] + [np.load(f"{A}/mlp_p{i}.npy") for i in range(6)])
args = [tvm_ffi.from_dlpack(a) for a in arrs]
r = exe["forward"](*args)
print(type(r), np.from_dlpack(r).sum())
