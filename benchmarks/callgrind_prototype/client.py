"""pytest side: start ONE measuring process under callgrind, feed it kernels,
parse callgrind.out dumps into {function: {Ir, ..., est_cycles}}.

    with SimSession() as s:
        costs = s.measure("/abs/k.so", "mm256", ["/abs/A.npy", "/abs/B.npy", "/abs/C.npy"])
        costs["functions"]["__tvm_ffi_mm256"]["est_cycles"]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.environ.get("TVMPERF_PY", "/work/main/.venv/bin/python")
CACHE = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
EVENTS = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]


def valgrind_cmd(outfile, python=PY):
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--cache-sim=yes", *CACHE,
            "--compress-strings=no", "--compress-pos=no", "--dump-instr=no",
            "--callgrind-out-file=" + outfile, python, os.path.join(HERE, "harness.py")]


def est_cycles(c):
    return (c.get("Ir", 0) + 10 * (c.get("I1mr", 0) + c.get("D1mr", 0) + c.get("D1mw", 0))
            + 100 * (c.get("ILmr", 0) + c.get("DLmr", 0) + c.get("DLmw", 0)))


_NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def parse_callgrind(path):
    """Return {"events": [...], "functions": {fn: {event: self, ..., "est_cycles",
    "incl_Ir", "incl_est_cycles"}}, "totals": {...}}.  Handles compressed and
    uncompressed names and positions."""
    events = EVENTS
    names = {}
    self_cost, incl_extra = {}, {}
    fn = None
    ob = None
    obj_of = {}
    pending_call = False
    totals = None

    def name(v):
        m = _NAME.match(v)
        if not m:
            return v
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
            return m.group(2)
        return names.get(m.group(1), v)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c0 = line[0]
            if c0.isdigit() or c0 in "+-*":
                parts = line.split()
                vals = [int(x) for x in parts[1:]]  # parts[0] = position (line)
                target = incl_extra if pending_call else self_cost
                d = target.setdefault(fn, [0] * len(events))
                for i, v in enumerate(vals):
                    d[i] += v
                pending_call = False
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("fn="):
                fn = name(line[3:])
                obj_of.setdefault(fn, ob)
            elif line.startswith("ob="):
                ob = name(line[3:])
            elif line.startswith(("cfn=", "cfi=", "cfl=", "cob=")):
                name(line.split("=", 1)[1])
            elif line.startswith(("fl=", "fi=", "fe=")):
                name(line.split("=", 1)[1])
            elif line.startswith("calls="):
                pending_call = True
            elif line.startswith(("totals:", "summary:")):
                totals = [int(x) for x in line.split()[1:]]
    funcs = {}
    for f_, v in self_cost.items():
        d = dict(zip(events, v))
        d["est_cycles"] = est_cycles(d)
        inc = [a + b for a, b in zip(v, incl_extra.get(f_, [0] * len(events)))]
        di = dict(zip(events, inc))
        d["incl_Ir"] = di.get("Ir", 0)
        d["incl_est_cycles"] = est_cycles(di)
        d["object"] = obj_of.get(f_)
        funcs[f_] = d
    for f_, v in incl_extra.items():  # functions with only call costs (no self lines)
        if f_ not in funcs:
            di = dict(zip(events, v))
            funcs[f_] = {e: 0 for e in events} | {"est_cycles": 0, "incl_Ir": di.get("Ir", 0),
                                                  "incl_est_cycles": est_cycles(di)}
    tot = dict(zip(events, totals or [sum(x) for x in zip(*self_cost.values())]))
    tot["est_cycles"] = est_cycles(tot)
    return {"events": events, "functions": funcs, "totals": tot}


class SimSession:
    def __init__(self, outdir=None, python=PY, log=None):
        self.outdir = outdir or tempfile.mkdtemp(prefix="tvmperf-cg-")
        self.cmd = valgrind_cmd(os.path.join(self.outdir, "cg.out"), python)
        self.log = log or os.path.join(self.outdir, "valgrind.log")
        self.n = 0

    def __enter__(self):
        t0 = time.perf_counter()
        # Deterministic heap layout: fixed hash seed, fixed malloc mmap threshold
        # (glibc's is dynamic), so VM intermediates / workspaces land at the
        # same addresses (callgrind does not replace malloc).
        env = dict(os.environ, TVMPERF_CG_OUT=os.path.join(self.outdir, "cg.out"),
                   PYTHONHASHSEED="0", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=65536")
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.log, "w"), text=True, env=env)
        hello = json.loads(self.p.stdout.readline())
        self.startup_s = time.perf_counter() - t0
        assert hello.get("on_valgrind"), hello
        return self

    def measure(self, lib, func, inputs, vm=False, warm=False):
        self.n += 1
        t0 = time.perf_counter()
        self.p.stdin.write(json.dumps({"id": self.n, "lib": os.path.abspath(lib), "func": func,
                                       "inputs": [os.path.abspath(x) for x in inputs],
                                       "vm": vm, "warm": warm}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("measuring process died; see " + self.log)
        r = json.loads(line)
        if not r["ok"]:
            raise RuntimeError(r["error"])
        res = parse_callgrind(r["dump"][-1])
        res["wall_s"] = time.perf_counter() - t0
        res["harness"] = r
        return res

    def __exit__(self, *a):
        try:
            self.p.stdin.write(json.dumps({"quit": True}) + "\n")
            self.p.stdin.flush()
            self.p.wait(60)
        except Exception:  # noqa: BLE001
            self.p.kill()


def by_object(res, lib):
    """Per-kernel lines for functions of the model library `lib` (self cost:
    __tvm_ffi_<k> wrappers and <k>_compute_ bodies folded into <k>), plus one
    line per other object (libtvm_runtime.so = VM builtins, python, libc...)."""
    lib = os.path.realpath(lib)
    rows = {}
    for f, v in res["functions"].items():
        ob = v.get("object") or "?"
        if os.path.realpath(ob) == lib:
            key = f.removeprefix("__tvm_ffi_").removesuffix("_compute_")
        else:
            key = "[" + os.path.basename(ob) + "]"
        r = rows.setdefault(key, {e: 0 for e in EVENTS})
        for e in EVENTS:
            r[e] += v.get(e, 0)
    for r in rows.values():
        r["est_cycles"] = est_cycles(r)
    return rows


if __name__ == "__main__":
    # usage: client.py LIB FUNC IN1.npy ... [--warm]
    a = [x for x in sys.argv[1:] if not x.startswith("--")]
    with SimSession() as s:
        print("startup_s %.1f" % s.startup_s, file=sys.stderr)
        r = s.measure(a[0], a[1], a[2:], warm="--warm" in sys.argv)
        top = sorted(r["functions"].items(), key=lambda kv: -kv[1]["Ir"])[:8]
        for k, v in top:
            print(k, {e: v[e] for e in ("Ir", "D1mr", "D1mw", "DLmr", "DLmw", "est_cycles")})
        print("wall_s %.1f" % r["wall_s"], file=sys.stderr)
