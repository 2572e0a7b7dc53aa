"""What a network's baseline costs in the repository: the IR file of a DLA-34-sized torch
network (16 M float32 parameters, bound as constants) stored whole, as before issue 37,
against the IR without its weights plus the weight files (store/weights.py); and what a
re-record adds, unchanged and with one layer changed (a 3x3 conv made 5x5).

    python benchmarks/baseline_size.py            # ~1 min (lowering only, no code generation)
    python benchmarks/baseline_size.py --dla34    # the bundled workloads.dla34 at full size (224, width 1)
                                                  # instead: its first record and an unchanged re-record
"""

from __future__ import annotations

import time


def net(k_last: int = 3):
    """A DLA-34-sized conv net: residual stages of 64, 128, 256 and 512 channels (16.4 M
    parameters; DLA-34 has 15.7 M), its last stage's second conv ``k_last`` x ``k_last``."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self, cin, cout, stride, k=3):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(cout)
            self.conv2 = torch.nn.Conv2d(cout, cout, k, 1, k // 2, bias=False)
            self.bn2 = torch.nn.BatchNorm2d(cout)
            self.down = (torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else torch.nn.Identity())

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.down(x))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(64),
                                            torch.nn.ReLU())
            blocks, cin = [], 64
            for cout, n in ((64, 2), (128, 2), (256, 2), (512, 3)):
                for i in range(n):
                    last = cout == 512 and i == 1
                    blocks.append(Block(cin, cout, 2 if i == 0 and cout != 64 else 1, k_last if last else 3))
                    cin = cout
            self.blocks = torch.nn.Sequential(*blocks)
            self.fc = torch.nn.Linear(512, 1000)

        def forward(self, x):
            return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))

    torch.manual_seed(0)
    model = Net().eval()
    if k_last != 3:  # the same weights as the 3x3 network's, but the changed layer's
        same = {k: v for k, v in net(3).state_dict().items() if model.state_dict()[k].shape == v.shape}
        model.load_state_dict(same, strict=False)
    return model


def lowered_dla34():
    from pytest_tvmperf.builder.pipelines import lower_relax
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.workloads import dla34, dla34_module

    params = sum(p.numel() for p in dla34_module(1.0).parameters())
    workload = dla34(size=224, width=1.0)
    return lower_relax(workload.program, resolve_target("llvm").tvm_target(), "default"), params


def lowered(k_last: int):
    import torch

    from pytest_tvmperf.builder.pipelines import lower_relax
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.workloads import torch_workload

    module = net(k_last)
    params = sum(p.numel() for p in module.parameters())
    workload = torch_workload(module, (torch.randn(1, 3, 64, 64),))
    return lower_relax(workload.program, resolve_target("llvm").tvm_target(), "default"), params


def main() -> None:
    import sys

    from pytest_tvmperf.store import lowered_ir

    full_dla34 = "--dla34" in sys.argv[1:]
    t0 = time.perf_counter()
    module, params = lowered_dla34() if full_dla34 else lowered(3)
    print(f"network: {params / 1e6:.1f} M parameters ({params * 4 / 1e6:.1f} MB float32), lowered in "
          f"{time.perf_counter() - t0:.0f} s")
    t0 = time.perf_counter()
    whole = lowered_ir.encode(module)
    whole_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ir, weights = lowered_ir.encode_split(module)
    split_s = time.perf_counter() - t0
    weight_bytes = sum(len(w.data) for w in weights)
    print(f"before (IR with its weights, one file per test and re-record): {len(whole) / 1e6:.1f} MB ({whole_s:.1f} s)")
    print(f"after: IR {len(ir) / 1e6:.2f} MB + {len(weights)} weight files {weight_bytes / 1e6:.1f} MB, "
          f"stored once ({split_s:.1f} s)")
    print("re-record, network unchanged: +0 MB (the same IR file and weight files, named by content)")
    if full_dla34:
        return
    changed, _ = lowered(5)
    ir5, weights5 = lowered_ir.encode_split(changed)
    old = {w.sha256 for w in weights}
    new_bytes = sum(len(w.data) for w in weights5 if w.sha256 not in old)
    print(f"re-record, one 3x3 conv made 5x5: +{(len(ir5) + new_bytes) / 1e6:.2f} MB (a new IR file "
          f"{len(ir5) / 1e6:.2f} MB + the changed layer's weights {new_bytes / 1e6:.2f} MB); before: "
          f"+{len(lowered_ir.encode(changed)) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
