import os, numpy as np, tvm
from tvm import relax
from tvm.relax.frontend import nn
out = os.path.abspath("art")
class MLP(nn.Module):
    def __init__(self):
        self.l1 = nn.Linear(1024, 512); self.l2 = nn.Linear(512, 256); self.l3 = nn.Linear(256, 128)
    def forward(self, x):
        return self.l3(nn.relu(self.l2(nn.relu(self.l1(x)))))
mod, params = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((1, 1024), "float32")}})
mod = relax.get_pipeline("zero")(mod)
tgt = tvm.target.Target({"kind": "llvm", "mcpu": "haswell"})
ex = relax.build(mod, tgt, exec_mode="bytecode")
ex.export_library(f"{out}/mlp.so")
np.save(f"{out}/mlp_x.npy", np.random.rand(1, 1024).astype("float32"))
for i, (n, p) in enumerate(params):
    np.save(f"{out}/mlp_p{i}.npy", (np.random.rand(*[int(s) for s in p.shape]) * 0.05).astype(p.dtype))
print([ (n, p.shape) for n, p in params])
print([gv.name_hint for gv in mod.get_global_vars()])
# reference via tvm proper
vm = relax.VirtualMachine(tvm.runtime.load_module(f"{out}/mlp.so"), tvm.cpu())
args = [tvm.runtime.tensor(np.load(f"{out}/mlp_x.npy"))] + [tvm.runtime.tensor(np.load(f"{out}/mlp_p{i}.npy")) for i in range(len(params))]
r = vm["forward"](*args); print("ref", r.numpy().sum() if hasattr(r, "numpy") else r)
