import json, sys
rs = [json.load(open(p)) for p in sys.argv[1:]]
for name in rs[0]:
    if name == "startup_s" or "full" not in rs[0][name]: continue
    fs = [r[name]["full"] for r in rs]
    nd = 0
    for f in fs[0]:
        vals = [(x.get(f, {}).get("Ir"), x.get(f, {}).get("est_cycles")) for x in fs]
        if len(set(vals)) > 1:
            nd += 1
            if "compute_" in f or "libtvm_runtime" not in fs[0][f]["object"] and "__tvm_ffi" not in f: print(name, "DIFF", f, vals)
    ir = {f: v["Ir"] for f, v in fs[0].items() if "compute_" in f}
    print(name, "kernel funcs", len(ir), "differing funcs (any)", nd, "kernel Ir identical:", all(x.get(f, {}).get("Ir") == v for x in fs for f, v in ir.items()))
