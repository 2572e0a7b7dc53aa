"""A network changed by one layer reads as one change (issue 47): a torch net of a stem,
three blocks of two convs and a head, once with one 3x3 conv made 5x5 and once with one
conv added. The failure names the layer by its module path, the bytecode diff is that
layer's few lines, and the re-recorded baseline's git diff is a few lines: the baseline
file keys its kernels by identity (values/kernel_keys.py), so the kernels TVM renumbered
after the changed one keep their lines."""

from __future__ import annotations

import difflib
import json

import pytest
from gitrepo import git

try:  # imported before pytester's in-process runs (see tests/test_torch_workloads.py)
    import torch
    import torch.export  # noqa: F401
    import torch.nn.functional  # noqa: F401
    import tvm.relax.frontend.torch  # noqa: F401
except ImportError:
    torch = None

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch")

NET = """
import os
import zlib
import pytest
import torch
from pytest_tvmperf.workloads import torch_workload


class Block(torch.nn.Module):
    def __init__(self, cin, cout, k=3, extra=False):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(cout, cout, k, padding=k // 2)
        self.extra = torch.nn.Conv2d(cout, cout, 1) if extra else None

    def forward(self, x):
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return x if self.extra is None else torch.relu(self.extra(x))


class Net(torch.nn.Module):
    def __init__(self, change):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.layer1 = Block(4, 8, 5 if "5x5" in change else 3, extra="added" in change)
        self.layer2 = Block(8, 12)
        self.layer3 = Block(12, 16)
        self.head = torch.nn.Conv2d(16, 4, 1)
        for name, param in self.named_parameters():  # an unchanged layer keeps its weights, as trained
            torch.manual_seed(zlib.crc32(name.encode()))
            torch.nn.init.uniform_(param, -0.3, 0.3)

    def forward(self, x):
        return self.head(self.layer3(self.layer2(self.layer1(torch.relu(self.stem(x))))))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_net(tvmperf):
    torch.manual_seed(0)
    tvmperf.check(torch_workload(Net(os.environ.get("NET_CHANGE", "")).eval(), (torch.randn(1, 3, 8, 8),)))
"""


@pytest.fixture(scope="module")
def warm_torch_export():
    """One export before pytester's runs (see tests/test_torch_workloads.py)."""
    from pytest_tvmperf.workloads import torch_workload

    torch_workload(torch.nn.Linear(2, 2), (torch.zeros(2, 2),), dynamic_batch=True)


def diff_lines(cwd) -> tuple[int, int]:
    """Lines added plus removed in the baseline file since the last commit (its line of git
    diff --stat), and those of them outside the entry's ``ir`` reference: that names the
    program's IR file and the weights stored apart (store/weights.py; their graph node
    numbers shift with an added layer), which change with the program whatever it is."""
    (line,) = git(cwd, "diff", "--numstat", "--", "baselines/test_perf.json").splitlines()
    added, removed, _ = line.split("\t")

    def without_ir(text: str) -> list[str]:
        data = json.loads(text)
        for entry in data["tests"].values():
            entry.pop("ir", None)
        return json.dumps(data, indent=2, sort_keys=True).splitlines()

    old = without_ir(git(cwd, "show", "HEAD:baselines/test_perf.json"))
    new = without_ir((cwd / "baselines" / "test_perf.json").read_text())
    rest = sum(
        1
        for x in difflib.unified_diff(old, new, lineterm="", n=0)
        if x[:1] in "+-" and not x.startswith(("+++", "---"))
    )
    return int(added) + int(removed), rest


def bytecode_changes(out: str) -> list[str]:
    """The changed lines of a failure's bytecode diff."""
    diff = out.split("VM bytecode, baseline -> now:")[1].split("tvmperf summary")[0]
    return [
        x.strip() for x in diff.splitlines() if x.strip()[:1] in ("+", "-") and not x.strip().startswith(("+++", "---"))
    ]


def test_a_one_layer_change_reads_as_one_change(project, warm_torch_export):
    from test_torch_workloads import FAKE_KERNEL_TIMES  # per-kernel times that do not flake

    project.pytester.makeconftest(project.pytester.path.joinpath("conftest.py").read_text() + FAKE_KERNEL_TIMES)
    project.pytester.makepyfile(test_perf=NET)
    cwd = project.pytester.path
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    git(cwd, "init", "-q")
    git(cwd, "add", "baselines")
    git(cwd, "commit", "-qm", "baseline")

    # one 3x3 conv made 5x5, 50% slower in all (the injected timer)
    project.set_env("NET_CHANGE", "5x5")
    project.set_env("TVMPERF_FAKE_SCALE", "1.5")
    result = project.run()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    changes = next(line for line in out.splitlines() if "kernels since the baseline" in line)
    assert "layer1.conv2 (Conv2d 5x5) [fused_conv2d" in changes, changes  # the layer, by its module path
    slower = next(line for line in out.splitlines() if "kernels that take longer" in line)
    assert slower.split(": ", 1)[1].startswith("layer1.conv2 (Conv2d 5x5) [fused_conv2d"), slower
    assert len(bytecode_changes(out)) <= 10, bytecode_changes(out)
    project.set_env("TVMPERF_FAKE_SCALE", "1")  # re-recorded: the timings' own lines alike, to count the rest
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    # bound: the changed kernel under its new key in the bytecode, by_callee, calls,
    # kernel_time_s and code_bytes' parts (2 lines each: 10), its kernels entry (6 removed, 6
    # added: 12), code_bytes' total (2), compile_s (2): 26 measured; and up to 4 more where
    # the new key sorts last in a map (a comma) or the kernel layer1.conv2 shared with
    # layer1's 3x3 conv before gets its own layer names. Keyed by TVM name, each kernel
    # renumbered after it changed a line in every map, the bytecode's numbers after it each line there.
    whole, changed = diff_lines(cwd)
    assert 0 < changed <= 30, git(cwd, "diff", "--", "baselines/test_perf.json")
    assert whole - changed <= 30, git(cwd, "diff", "--", "baselines/test_perf.json")  # the IR reference
    git(cwd, "add", "baselines")
    git(cwd, "commit", "-qm", "5x5")

    # one 1x1 conv added after layer1.conv2: every kernel after it renumbered by TVM
    project.set_env("NET_CHANGE", "5x5,added")
    result = project.run()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "regressed" in out and "  kernels 8 -> 9 (+1" in out, out
    changes = next(line for line in out.splitlines() if "kernels since the baseline" in line)
    assert changes.split(": ", 1)[1].startswith("new: layer1.extra (Conv2d 1x1) [fused_conv2d"), changes
    assert "changed" not in changes and "removed" not in changes, changes
    bytecode = bytecode_changes(out)
    assert 0 < len(bytecode) <= 10 and all(line.startswith("+") for line in bytecode), bytecode
    # the new kernel's call, under its TVM name: the baseline, keyed by identity, has no kernel of that name
    assert any(line.startswith("+call fused_conv2d") for line in bytecode), bytecode
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    # bound: the new kernel's lines (3 in the bytecode, 1 in by_callee, calls and
    # kernel_time_s, 6 in kernels: 12); the totals it moves (alloc_tensor and null_value in
    # by_callee, calls and kernel_time_s, instructions, the kernel count: 8 changed, 16
    # lines); compile_s (2); a comma where a key sorts last (4): 34; code_bytes: its total (2)
    # and the new kernel's code (1, with a comma where it sorts last: 3): 39, measured, whatever
    # the network's size. code_bytes' and alloc_bytes' parts are keyed by identity too, so the
    # kernels renumbered after the new one keep their lines (keyed by TVM name: 49); alloc_bytes
    # does not move here (the planner reuses a storage for the new conv's output).
    whole, changed = diff_lines(cwd)
    assert 0 < changed <= 39, git(cwd, "diff", "--", "baselines/test_perf.json")
    assert whole - changed <= 30, git(cwd, "diff", "--", "baselines/test_perf.json")  # the IR reference
    print(f"re-record diffs: {whole} lines, {changed} outside the IR reference")
