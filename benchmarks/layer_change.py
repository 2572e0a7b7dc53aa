"""A one-layer change of the bundled DLA-34 (``workloads.dla34``), as a reviewer reads it
(issue 47): in a fresh project in a temporary git repository, the network is recorded
(``--tvmperf-update``, timing off: exact metrics only) and committed; then one layer is
changed, ``level3.tree1.tree1.conv2`` made 5x5 (``5x5``) or followed by an added 1x1 conv
(``added``), the gate run, the baseline re-recorded. It prints, per change: the failure's
line naming the kernels that changed, the changed lines of its bytecode diff, and the
re-recorded baseline file's ``git diff --stat`` line; with ``--target cuda``, also the
failure's lines of the CUDA kernels that grew and the diff's lines of the GPU per-kernel
metrics (``exact.per_kernel``'s ``..._kernel`` entries).

Three compiles of DLA-34 per change: too slow for the test suite, which shows the same on a
small torch net (tests/test_layer_change.py).

``--net conv5`` takes a user-sized torch net instead (five 3x3 convs, 64 channels at 56x56), timed
(timing on, as a user records it), and one 1x1 conv inserted after the third (``inserted``):
it prints the re-record's ``git diff --numstat`` of ``baselines/`` (issue 59: the entry a
reviewer reads is the change, not its raw samples).

    python benchmarks/layer_change.py                      # size 32, width 0.25 (the CI size)
    python benchmarks/layer_change.py --size 64 --width 0.5
    python benchmarks/layer_change.py --target cuda        # built for cuda (no GPU needed: nvcc, ptxas)
    python benchmarks/layer_change.py --net conv5          # a 5-conv torch net, timed: the numstat
    PYTHONPATH=<another checkout> python benchmarks/layer_change.py   # another version of the plugin
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

LAYER = "level3.tree1.tree1.conv2"

TEST = '''
import os
import pytest
import torch
from pytest_tvmperf.workloads import torch_workload
from pytest_tvmperf.workloads.dla34 import dla34_module


def changed(net, change):
    """``LAYER`` made 5x5, or followed by a 1x1 conv; the other layers' weights as they were."""
    parent_name, _, name = "{layer}".rpartition(".")
    parent, old = net.get_submodule(parent_name), net.get_submodule("{layer}")
    torch.manual_seed(0)
    if change == "5x5":
        new = torch.nn.Conv2d(old.in_channels, old.out_channels, 5, padding=2, bias=False)
    elif change == "added":
        new = torch.nn.Sequential(old, torch.nn.Conv2d(old.out_channels, old.out_channels, 1, bias=False))
    else:
        return net
    setattr(parent, name, new)
    return net.eval()


@pytest.mark.tvmperf(executors=["vm-bytecode"], timing=False)
def test_dla34(tvmperf):
    net = changed(dla34_module(width={width}), os.environ.get("DLA_CHANGE", ""))
    tvmperf.check(torch_workload(net, (torch.zeros(1, 3, {size}, {size}),), name="dla34 (one layer changed)"))
'''

CONV5 = '''
import os
import pytest
import torch
from pytest_tvmperf.workloads import torch_workload


def conv5(inserted):
    """Five 3x3 convs with ReLU (64 channels); ``inserted``: a 1x1 conv after the third."""
    torch.manual_seed(0)
    layers = [torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU()]
    for i in range(4):
        layers += [torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU()]
        if inserted and i == 1:
            layers += [torch.nn.Conv2d(64, 64, 1), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval()


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_dla34(tvmperf):  # the file's name is the DLA one's: one harness
    net = conv5(os.environ.get("DLA_CHANGE") == "inserted")
    tvmperf.check(torch_workload(net, (torch.zeros(1, 3, {size}, {size}),), name="conv5"))
'''

CONFTEST = """
def pytest_configure(config):  # the simulated cost off: exact metrics of the VM only, in seconds
    from pytest_tvmperf.measure import metric_sources
    metric_sources.SOURCES = tuple(s for s in metric_sources.SOURCES if not s.endswith(":SimulatedCost"))
"""


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return done.stdout + done.stderr


def git(cwd: Path, *args: str) -> str:
    return run(cwd, "git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args)


def pytest(cwd: Path, *args: str, change: str = "", target: str = "llvm") -> str:
    return run(
        cwd,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_dla34.py",
        f"--tvmperf-targets={target}",
        *args,
        env={"DLA_CHANGE": change, "TVMPERF_CACHE_DIR": str(cwd / ".cache")},
    )


def bytecode_changes(out: str) -> list[str]:
    if "VM bytecode, baseline -> now:" not in out:
        return []
    diff = out.split("VM bytecode, baseline -> now:")[1].split("tvmperf summary")[0]
    return [
        x.strip() for x in diff.splitlines() if x.strip()[:1] in ("+", "-") and not x.strip().startswith(("+++", "---"))
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--width", type=float, default=0.25)
    parser.add_argument("--target", default="llvm", help="llvm (default) or cuda (built only without a GPU)")
    parser.add_argument("--net", choices=("dla34", "conv5"), default="dla34")
    args = parser.parse_args()
    if args.net == "conv5":
        return conv5_numstat(56 if args.size == 32 else args.size)
    import pytest_tvmperf

    print(
        f"plugin: {Path(pytest_tvmperf.__file__).parent}; dla34 size {args.size}, width {args.width}, "
        f"target {args.target}; {LAYER}"
    )
    for change in ("5x5", "added"):
        with tempfile.TemporaryDirectory(prefix="tvmperf-layer-change-") as tmp:
            cwd = Path(tmp)
            (cwd / "test_dla34.py").write_text(TEST.format(layer=LAYER, size=args.size, width=args.width))
            (cwd / "conftest.py").write_text(CONFTEST)
            (cwd / ".gitignore").write_text(".cache/\n__pycache__/\n")
            out = pytest(cwd, "--tvmperf-update", target=args.target)
            if "1 passed" not in out:
                print(out)
                return 1
            git(cwd, "init", "-q")
            git(cwd, "add", "-A")
            git(cwd, "commit", "-qm", "baseline")
            out = pytest(cwd, change=change, target=args.target)
            verdict = next((x.strip() for x in out.splitlines() if "regressed against" in x or "passed" in x), "?")
            kernels = next((x.strip() for x in out.splitlines() if "kernels since the baseline" in x), "(none)")
            diff = bytecode_changes(out)
            gpu_grew = [x.strip() for x in out.splitlines() if "kernels that grew" in x and "_kernel" in x]
            pytest(cwd, "--tvmperf-update", change=change, target=args.target)
            stat = [x for x in git(cwd, "diff", "--stat", "--", "baselines/test_dla34.json").splitlines() if "|" in x]
            changed = git(cwd, "diff", "-U0", "--", "baselines/test_dla34.json").splitlines()
            gpu_lines = [x for x in changed if x[:1] in "+-" and not x.startswith(("+++", "---")) and "_kernel" in x]
            print(f"\n{change}: gate: {verdict}\n  {kernels}\n  bytecode diff: {len(diff)} changed lines")
            for line in diff:
                print(f"    {line}")
            print(f"  re-recorded baseline: {stat[0].strip() if stat else '(unchanged)'}")
            if args.target == "cuda":
                for line in gpu_grew:
                    print(f"  {line}")
                print(f"  GPU per-kernel lines in the baseline diff: {len(gpu_lines)}")
    return 0


def conv5_numstat(size: int) -> int:
    """The 5-conv net timed: recorded, committed, one conv inserted, re-recorded; the numstat."""
    import pytest_tvmperf

    print(f"plugin: {Path(pytest_tvmperf.__file__).parent}; conv5 at {size}x{size}, timed, one 1x1 conv inserted")
    with tempfile.TemporaryDirectory(prefix="tvmperf-layer-change-") as tmp:
        cwd = Path(tmp)
        (cwd / "test_dla34.py").write_text(CONV5.format(size=size))
        (cwd / "conftest.py").write_text(CONFTEST)
        (cwd / ".gitignore").write_text(".cache/\n__pycache__/\n")
        out = pytest(cwd, "--tvmperf-update")
        if "1 passed" not in out:
            print(out)
            return 1
        git(cwd, "init", "-q")
        git(cwd, "add", "-A")
        git(cwd, "commit", "-qm", "baseline")
        out = pytest(cwd, change="inserted")
        kernels = next((x.strip() for x in out.splitlines() if "kernels since the baseline" in x), "(none)")
        print(f"gate: {kernels}\n  bytecode diff: {len(bytecode_changes(out))} changed lines")
        out = pytest(cwd, "--tvmperf-update", change="inserted")
        summary = next((x.strip() for x in out.splitlines() if x.startswith("baselines written")), "?")
        print(f"  re-record: {summary}")
        git(cwd, "add", "-A")
        numstat = git(cwd, "diff", "--cached", "--numstat", "--", "baselines").splitlines()
        print("  git diff --numstat -- baselines (added, removed, file):")
        for line in numstat:
            print(f"    {line}")
        text = [x for x in numstat if x.split("\t")[-1].endswith(".json") and x[:1] != "-"]
        total = sum(int(a) + int(b) for a, b, _ in (x.split("\t") for x in text))
        print(f"  changed lines in the baseline JSON: {total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
