"""The measuring process of the simulated cost: a script run UNDER callgrind by
``simulate.py`` (never imported by the plugin), once per session::

  valgrind --tool=callgrind --instr-atstart=no --cache-sim=yes <cache model> \
      --callgrind-out-file=DIR/cg.out  python sim_harness.py

It imports only tvm_ffi and NumPy (``import tvm`` costs minutes under valgrind) and
reads JSON lines on stdin::

  {"id": 1, "lib": "/abs/k.so", "func": "mm", "inputs": ["/abs/A.npy", ...], "vm": false}

Per request it loads the library and the arrays (uninstrumented), calls the function once
uninstrumented (binds PLT slots, touches lazily loaded code), then switches callgrind's
instrumentation on, calls it once, dumps the counts and switches instrumentation off.
Switching instrumentation on resets the simulated caches, so a request's counts do not
depend on the requests before it. It answers one JSON line, ``{"id", "ok", "dump"}``, and
exits at end of input (the session closes it, or dies and its pipe closes).

Valgrind client requests go through a 40-byte machine-code stub (the amd64 "special
instruction" sequence from valgrind.h): no C compiler or valgrind headers needed.
"""

import ctypes
import gc
import json
import mmap
import os
import sys
import threading
import time

# --- valgrind client requests without a compiler -------------------------
# uint64 req(uint64 *args): rax=args, rdx=default(0), magic preamble, xchg rbx,rbx
_CODE = bytes.fromhex(
    "4889f8"  # mov rax, rdi
    "31d2"  # xor edx, edx
    "48c1c703"  # rol rdi, 3
    "48c1c70d"  # rol rdi, 13
    "48c1c73d"  # rol rdi, 61
    "48c1c733"  # rol rdi, 51
    "4887db"  # xchg rbx, rbx
    "4889d0"  # mov rax, rdx
    "c3"  # ret
)
_buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
_buf.write(_CODE)
_addr = ctypes.addressof(ctypes.c_char.from_buffer(_buf))
_req = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64))(_addr)

_CT = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS, ZERO_STATS, TOGGLE_COLLECT, DUMP_STATS_AT, START_INSTR, STOP_INSTR = range(_CT, _CT + 6)
RUNNING_ON_VALGRIND = 0x1001


def vg(code, arg1=0):
    args = (ctypes.c_uint64 * 6)(code, arg1, 0, 0, 0, 0)
    return _req(args)


# --------------------------------------------------------------------------
# `import tvm_ffi` imports torch when it is installed (DLPack interop): 1.9 s
# native, ~20 s under valgrind.  The measuring process never sees a torch
# tensor, so block it (an ImportError that tvm_ffi handles).
if os.environ.get("TVMPERF_ALLOW_TORCH") != "1":
    sys.modules.setdefault("torch", None)
import numpy as np  # noqa: E402
import tvm_ffi  # noqa: E402

_libs = {}


def arena(arrays, base_align=1 << 21, align=4096):
    """Copy the inputs into ONE buffer whose base is 2 MiB aligned, each array
    at a 4 KiB aligned offset.  TVM's codegen assumes 64-byte aligned data
    (aligned vector moves: a plain np.load array, 16-byte aligned, segfaults a
    vectorized mcpu=haswell kernel), and fixing every address bit below 2^21
    makes the simulated set conflicts (L1 way = 4 KiB, LL way = 512 KiB)
    independent of where the heap happens to put things."""
    offs, total = [], 0
    for a in arrays:
        offs.append(total)
        total += -(-a.nbytes // align) * align
    buf = np.empty(total + base_align, np.uint8)
    base = (-buf.ctypes.data) % base_align
    out = []
    for a, o in zip(arrays, offs):
        v = buf[base + o : base + o + a.nbytes].view(a.dtype).reshape(a.shape)
        v[...] = a
        out.append(v)
    return buf, out


def _load(path):
    if path not in _libs:
        _libs[path] = tvm_ffi.load_module(path)
    return _libs[path]


_rt = []


def _tvm_runtime():
    """Relax VM support without `import tvm`: libtvm_runtime.so (3 MB; registers
    ffi.Module.load_from_bytes.relax.VMExecutable and the VM builtins) loaded
    RTLD_GLOBAL next to tvm_ffi.  find_spec locates the package, imports nothing."""
    if not _rt:
        import importlib.util

        p = os.environ.get("TVMPERF_TVM_RUNTIME") or os.path.join(
            os.path.dirname(importlib.util.find_spec("tvm").origin), "lib", "libtvm_runtime.so"
        )
        _rt.append(ctypes.CDLL(p, ctypes.RTLD_GLOBAL))


def _vm_func(lib_path, func):
    """Relax VM executable (exported .so) run with tvm_ffi + libtvm_runtime.so."""
    key = ("vm", lib_path)
    if key not in _libs:
        _tvm_runtime()
        exe = _load(lib_path)["vm_load_executable"]()
        # device type 1 = kDLCPU, id 0, allocator 2 = pooled (as relax.VirtualMachine)
        exe["vm_initialization"](1, 0, 2)
        _libs[key] = exe
    return _libs[key][func]


def read_line(fd=0):
    """One request line read a byte at a time (no read-ahead: the next child reads the
    next line), as bytes, b"" at end of input."""
    chunks = []
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return b"".join(chunks)
        chunks.append(byte)
        if byte == b"\n":
            return b"".join(chunks)


def _write(line, fd=1):
    data = (line + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _die_with_parent():
    """A child the parent's death (the session killed the measuring process) ends too."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def measure(r, outdir):
    """Load, warm, count one call (in a fresh child); the answer as a dict."""
    rid = str(r.get("id", ""))
    fn = _vm_func(r["lib"], r["func"]) if r.get("vm") else _load(r["lib"])[r["func"]]
    _keep, arrs = arena([np.load(p) for p in r["inputs"]])
    args = [tvm_ffi.from_dlpack(a) for a in arrs]
    t0 = time.perf_counter()
    fn(*args)  # uninstrumented warm-up (PLT binding, lazy init, the pool's buffers)
    t_uninstr = time.perf_counter() - t0
    t0 = time.perf_counter()
    vg(START_INSTR)  # resets cache sim + costs
    if r.get("warm"):
        fn(*args)
        vg(ZERO_STATS)
    fn(*args)
    tag = ctypes.create_string_buffer(("req-" + rid).encode())
    vg(DUMP_STATS_AT, ctypes.addressof(tag))
    vg(STOP_INSTR)
    t_instr = time.perf_counter() - t0
    # this child's dumps: <out>.<pid>.1 (the out file names %p; the exit dump, <out>.<pid>, is the parent's to remove)
    mine = os.path.basename(os.environ.get("TVMPERF_CG_OUT", "cg.out")).replace("%p", str(os.getpid())) + "."
    dumps = sorted(n for n in os.listdir(outdir) if n.startswith(mine))
    return {
        "id": rid,
        "ok": True,
        "dump": [os.path.join(outdir, n) for n in dumps],
        "t_uninstr_s": t_uninstr,
        "t_instr_s": t_instr,
        "pid": os.getpid(),
    }


#: the stack of the thread a request runs on (a fresh mapping: see :func:`on_fresh_thread`)
THREAD_STACK = 16 << 20  # twice the main thread's usual 8 MiB (kernels keep local buffers on the stack)


def on_fresh_thread(fn, *args):
    """fn(*args) on a new thread, its result or its exception. The thread's stack is a new
    mapping and glibc gives it a new malloc arena (a new mapping too): the stack frames and
    the heap blocks of the load, the warm-up and the counted call lie at the same offsets
    whatever the process's environment, argv and start-up put on the main stack and heap
    (the simulated cache misses of small kernels moved with the length of $HOME)."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    threading.stack_size(THREAD_STACK)
    thread = threading.Thread(target=run, name="measure")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


EOF_EXIT = 3  # a child's exit status at end of input (or a "quit" request)
DRY_EXIT = 4  # a dry run's child: exits at once
#: forks with no request before the first real one: the parent's own first pass through its
#: loop allocates what later passes reuse, so the first child would start from another heap
DRY_FORKS = 2


def child(outdir):
    """Read one request, answer it, exit: never returns."""
    status = 1
    try:
        _die_with_parent()
        line = read_line()
        r = json.loads(line) if line.strip() else {}
        if not line or r.get("quit"):
            status = EOF_EXIT
        else:
            try:
                answer = on_fresh_thread(measure, r, outdir)
            except Exception as e:  # noqa: BLE001
                vg(STOP_INSTR)
                answer = {"id": str(r.get("id", "")), "ok": False, "error": repr(e)}
            _write(json.dumps(answer))
            status = 0
    finally:
        os._exit(status)


def serve():
    """Answer requests, each in a child forked from this same state: a request's counts do
    not depend on the requests before it (the VM's pooled allocator, the heap, lazily built
    tables and caches of the runtime all start where they started for every other request).
    The parent reads nothing and runs nothing between forks."""
    on_vg = vg(RUNNING_ON_VALGRIND) > 0
    if os.environ.get("TVMPERF_PRELOAD_RUNTIME", "1") == "1":
        _tvm_runtime()
    out_file = os.environ.get("TVMPERF_CG_OUT", "")
    outdir = os.path.dirname(out_file) or os.getcwd()
    _write(json.dumps({"ready": True, "on_valgrind": on_vg, "pid": os.getpid()}))
    sys.stdout.flush()
    sys.stderr.flush()
    gc.collect()
    gc.freeze()  # the parent's objects never move into a child's collections
    dry = DRY_FORKS
    while True:
        pid = os.fork()
        if pid == 0:
            if dry:
                os._exit(DRY_EXIT)
            child(outdir)
        dry = max(dry - 1, 0)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        exit_dump = os.path.join(outdir, os.path.basename(out_file).replace("%p", str(pid)))
        if "%p" in out_file and os.path.exists(exit_dump):
            os.unlink(exit_dump)  # the child's dump at its exit (nothing counted since the request's dump)
        if code == EOF_EXIT:
            return
        if code not in (
            0,
            DRY_EXIT,
        ):  # died before answering (a crashing kernel): say so; the next request gets a fresh child
            _write(json.dumps({"id": "", "ok": False, "error": f"the measuring child ended with status {code}"}))


if __name__ == "__main__":
    serve()
