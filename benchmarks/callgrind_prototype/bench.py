"""One measuring session, many kernels.  usage: bench.py OUT.json [--host]"""
import json, sys, time, os
from client import SimSession, by_object
A = os.path.abspath("art")
mm = lambda n, tag: (f"{A}/mm{n}_{tag}.so", f"mm{n}", [f"{A}/A{n}.npy", f"{A}/B{n}.npy", f"{A}/C{n}.npy"])
reqs = [("mm64", mm(64, "haswell"), False), ("mm256", mm(256, "haswell"), False),
        ("mm64_again", mm(64, "haswell"), False), ("mm320", mm(320, "haswell"), False), ("mm256_warm", mm(256, "haswell"), True),
        ("yuv_contig", (f"{A}/yuv_contig.so", "yuv_contig", [f"{A}/X_contig.npy", f"{A}/Y.npy"]), False),
        ("yuv_transposed", (f"{A}/yuv_transposed.so", "yuv_transposed", [f"{A}/X_transposed.npy", f"{A}/Y.npy"]), False)]
reqs.append(("mlp_vm", (f"{A}/mlp.so", "forward", [f"{A}/mlp_x.npy"] + [f"{A}/mlp_p{i}.npy" for i in range(6)]), False))
if "--reverse" in sys.argv:
    reqs = reqs[::-1]
if "--host" in sys.argv:
    reqs = [("mm64_host", mm(64, "host"), False), ("mm256_host", mm(256, "host"), False)]
out = {}
with SimSession() as s:
    out["startup_s"] = s.startup_s
    print("startup %.1f s" % s.startup_s, flush=True)
    for name, (lib, fn, ins), warm in reqs:
        try:
            r = s.measure(lib, fn, ins, warm=warm, vm=name.endswith("_vm"))
        except Exception as e:
            out[name] = {"error": repr(e)}; print(name, "ERROR", e, flush=True); break
        k = {f: v for f, v in r["functions"].items() if fn in f}
        if name.endswith("_vm"):
            k = by_object(r, lib)
            for f, v in k.items(): v["incl_Ir"], v["incl_est_cycles"] = v["Ir"], v["est_cycles"]
        full = {f: {e: v[e] for e in ("Ir", "est_cycles", "object")} for f, v in r["functions"].items()
                if (v.get("object") or "").endswith((".so",)) and ("/art/" in (v.get("object") or "") or "libtvm_runtime" in v["object"])}
        out[name] = {"full": full, "wall_s": r["wall_s"], "t_instr_s": r["harness"]["t_instr_s"], "kernel": k,
                     "total": r["totals"]}
        print(name, "wall %.1f s" % r["wall_s"], {f: (v["Ir"], v["est_cycles"], v["incl_Ir"], v["incl_est_cycles"]) for f, v in k.items()},
              "total", r["totals"]["Ir"], r["totals"]["est_cycles"], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
