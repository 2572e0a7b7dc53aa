"""Makes every Python process of an RPC server look like another machine's CPU: LLVM names
it ``$TVMPERF_FAKE_DEVICE_CPU`` (``znver4``) and its OS enables none of the features whose
names start with one of ``$TVMPERF_FAKE_DEVICE_HIDE`` (``avx512``), as on a Zen 4 VM that
hides AVX-512. tests/rpc_fixtures.py puts this directory first on the ``PYTHONPATH`` of
such a server only (the server serves from fresh worker processes, so each needs it)."""

import os

if os.environ.get("TVMPERF_FAKE_DEVICE_CPU"):
    import tvm  # noqa: F401  (registers the functions replaced below)
    import tvm_ffi

    _model = os.environ["TVMPERF_FAKE_DEVICE_CPU"]
    _hidden = tuple(p for p in os.environ.get("TVMPERF_FAKE_DEVICE_HIDE", "").split(",") if p)
    _real = tvm_ffi.get_global_func("tvm.codegen.llvm.GetHostCPUFeatures")()
    _features = {str(k): bool(v) and not str(k).startswith(_hidden) for k, v in dict(_real).items()}
    tvm_ffi.register_global_func("target.llvm_get_system_cpu", lambda: _model, override=True)
    tvm_ffi.register_global_func("tvm.codegen.llvm.GetHostCPUFeatures", lambda: _features, override=True)
