"""What a network's baseline costs in the repository, in each form the IR can be stored in:
the IR with its weights inline (before issue 37); the IR with its weights as files, stored
once by content (issue 37; ``--tvmperf-baseline-weights=exact`` now); and the IR without
the weights' values, each described by dtype, shape and sha256 in the entry (issue 47, the
default: the gate rebuilds it with seeded values). For each: the first record, and what a
re-record adds, unchanged and with one layer changed (a 3x3 conv of the last stage made 5x5,
the other weights the same).

    python benchmarks/baseline_size.py            # a DLA-34-sized torch net (16.4 M parameters), 64x64
    python benchmarks/baseline_size.py --dla34    # the bundled workloads.dla34 at full size (224, width 1)
    python benchmarks/baseline_size.py --committed  # this repository's baselines/ as a re-record would store
                                                    # them now (reads only; nothing is re-recorded)

Lowering only, no code generation (~1-2 min). "Adds" counts the new files (named by content:
an unchanged file is not stored again) and, for the seeded form, the entry's lines that
changed (its ``ir.seeded`` list in the baseline JSON file).
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
            self.down = (
                torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout))
                if stride != 1 or cin != cout
                else torch.nn.Identity()
            )

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.down(x))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Sequential(
                torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(64), torch.nn.ReLU()
            )
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


def lowered_dla34(changed: bool = False):
    """The bundled DLA-34 lowered; ``changed``: its level 5's last 3x3 conv made 5x5 (its
    weights seeded, every other weight the same)."""
    import torch

    from pytest_tvmperf.builder.pipelines import lower_relax
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.workloads import dla34_module, torch_workload

    net = dla34_module(1.0)
    if changed:
        parent, name, conv = [
            (m, n, c)
            for m in net.level5.modules()
            for n, c in m.named_children()
            if isinstance(c, torch.nn.Conv2d) and c.kernel_size == (3, 3)
        ][-1]
        torch.manual_seed(1)
        setattr(parent, name, torch.nn.Conv2d(conv.in_channels, conv.out_channels, 5, conv.stride, 2, bias=False))
        net.eval()
    params = sum(p.numel() for p in net.parameters())
    workload = torch_workload(net, (torch.zeros(1, 3, 224, 224),), name="dla34", rtol=1e-4, atol=1e-4)
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


def _entry_lines(described, pieces) -> list[str]:
    """The entry's ``ir.seeded`` and ``ir.functions`` lists as the baseline file writes them
    (indent 2 in the entry: one line each)."""
    import hashlib

    return [json_line(w.as_text()) for w in described] + [
        json_line(f"{name} {hashlib.sha256(piece).hexdigest()}") for name, piece in pieces
    ]


def json_line(text: str) -> str:
    import json

    return "        " + json.dumps(text) + ","


def forms(module):
    """(inline IR, (IR, {weight file sha: bytes}), (IR, {file sha: bytes}, entry lines))."""
    import hashlib

    from pytest_tvmperf.store import lowered_ir

    whole = lowered_ir.encode(module)
    ir, files = lowered_ir.encode_split(module)
    sir, sfiles, described, pieces = lowered_ir.encode_stored(module)
    stored = {w.sha256: len(w.data) for w in sfiles} | {hashlib.sha256(p).hexdigest(): len(p) for _, p in pieces}
    return (
        whole,
        (ir, {w.sha256: len(w.data) for w in files}),
        (sir, stored, _entry_lines(described, pieces), len(described), len(pieces)),
    )


def committed(base=None) -> None:
    """What re-recording the baselines in ``base`` (this repository's ``baselines/``) would
    store in the default form: each stored program loaded (its weights put back) and encoded
    as ``--tvmperf-update`` stores it now. Reads only."""
    import hashlib
    import json
    from pathlib import Path

    from pytest_tvmperf.store import lowered_ir
    from pytest_tvmperf.values.record import IRRef

    base = Path(base or Path(__file__).resolve().parents[1] / "baselines")
    refs = {}
    for path in sorted(base.rglob("*.json")):
        if "artifacts" in path.parts or "tuning" in path.parts:
            continue
        for entry in json.loads(path.read_text()).get("tests", {}).values():
            if entry.get("ir"):
                refs[entry["ir"]["path"]] = IRRef.from_json(entry["ir"])
    now = [p for p in (base / "artifacts").rglob("*") if p.is_file()]
    files: dict[str, int] = {}
    lines = 0
    for path, ref in refs.items():
        data, weights, described, pieces = lowered_ir.encode_stored(lowered_ir.load(base / path, ref))
        files[hashlib.sha256(data).hexdigest()] = len(data)
        files.update({w.sha256: len(w.data) for w in weights})
        kernels = {hashlib.sha256(p).hexdigest(): (name, len(p)) for name, p in pieces}
        files.update({sha: n for sha, (_, n) in kernels.items()})
        lines += sum(
            len(json_line(t)) + 1
            for t in [w.as_text() for w in described] + [f"{name} {sha}" for sha, (name, _) in kernels.items()]
        )
    print(
        f"{base}/artifacts now: {sum(p.stat().st_size for p in now) / 1e6:.1f} MB in {len(now)} files; the same "
        f"{len(refs)} programs re-recorded in the default form: {sum(files.values()) / 1e6:.2f} MB in {len(files)} "
        f"files, + {lines / 1e3:.0f} kB of ir.seeded and ir.functions lines in the baseline files"
    )


def main() -> None:
    import difflib
    import sys

    if "--committed" in sys.argv[1:]:
        committed()
        return
    full_dla34 = "--dla34" in sys.argv[1:]
    t0 = time.perf_counter()
    module, params = lowered_dla34() if full_dla34 else lowered(3)
    changed, _ = lowered_dla34(changed=True) if full_dla34 else lowered(5)
    print(
        f"network: {'workloads.dla34(size=224, width=1.0)' if full_dla34 else 'DLA-34-sized net, 64x64'}: "
        f"{params / 1e6:.1f} M parameters ({params * 4 / 1e6:.1f} MB float32), both versions lowered in "
        f"{time.perf_counter() - t0:.0f} s"
    )
    whole, (ir, files), (sir, sfiles, lines, n_weights, n_kernels) = forms(module)
    whole5, (ir5, files5), (sir5, sfiles5, lines5, _, _) = forms(changed)
    mb = lambda n: f"{n / 1e6:.2f} MB"  # noqa: E731
    kb = lambda n: f"{n / 1e3:.0f} kB"  # noqa: E731
    print(
        f"inline (weights in the IR): first record {mb(len(whole))}; re-record, one layer changed: +{mb(len(whole5))}"
    )
    new_files = sum(n for sha, n in files5.items() if sha not in files)
    print(
        f"exact (weights as files): first record {mb(len(ir) + sum(files.values()))} (IR {mb(len(ir))} + "
        f"{len(files)} weight files {mb(sum(files.values()))}); re-record, one layer changed: "
        f"+{mb(len(ir5) + new_files)} (IR {mb(len(ir5))} + changed weights {mb(new_files)})"
    )
    added = [d for d in difflib.unified_diff(lines, lines5, lineterm="", n=0) if d[:1] == "+" and d[:3] != "+++"]
    added_bytes = sum(len(d) for d in added)
    new_sfiles = sum(n for sha, n in sfiles5.items() if sha not in sfiles)
    text = sum(len(line) + 1 for line in lines)
    print(
        f"seeded (the default: no weight values, each kernel a file of its own): first record "
        f"{kb(len(sir) + sum(sfiles.values()) + text)} (IR {kb(len(sir))} + {len(sfiles)} kernel files "
        f"{kb(sum(sfiles.values()))} + the entry's {n_weights} ir.seeded and {n_kernels} ir.functions lines "
        f"{kb(text)}); re-record, one layer changed: +{kb(len(sir5) + new_sfiles + added_bytes)} (IR "
        f"{kb(len(sir5))} + {len([s for s in sfiles5 if s not in sfiles])} new kernel files {kb(new_sfiles)} + "
        f"{len(added)} changed entry lines {kb(added_bytes)})"
    )
    print(
        "re-record, network unchanged: +0 in every form but inline (the same files, named by content; "
        "the same entry lines)"
    )


if __name__ == "__main__":
    main()
