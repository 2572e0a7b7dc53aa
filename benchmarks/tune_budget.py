"""Does ``tvmperf tune --budget`` keep its budget on a ResNet-sized network (issue 47)?

A fresh project holds one test: ResNet-18 (torchvision's layout, built here in torch:
torchvision is not a dependency; random weights, eval mode) on a 1x3xSIZExSIZE image
through ``workloads.torch_workload``, ``pipeline="tuned"``. The script runs, in a fresh
process with its output to a pipe (as a log file or CI log gets it: plain lines)::

    python -m pytest_tvmperf tune --budget BUDGET test_resnet.py

and stamps each line as it arrives. It prints the estimate line and the summary line the
tuning printed, the tuning's wall time (from the run's start to its summary line, as the
tuning's own clock counts it), the longest batch seen (the gap between two progress lines
of one kernel), and whether the tuning ended within the budget plus that batch; then the
whole command's wall time (compiling, tuning, re-recording the baseline).

    python benchmarks/tune_budget.py                       # --budget 2m, 112x112 (the report's size)
    python benchmarks/tune_budget.py --budget 4m --size 224
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEST = '''
import pytest
import torch
from torch import nn

from pytest_tvmperf import workloads


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision.models.resnet18's layout: a 7x7 stem, 4 stages of 2 basic blocks, a classifier."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_resnet18(tvmperf):
    torch.manual_seed(0)
    net = ResNet18().eval()
    tvmperf.check(workloads.torch_workload(net, (torch.randn(1, 3, {size}, {size}),), name="resnet18")
                  .with_pipeline("tuned"))
'''

PROGRESS = re.compile(r"^tuning \S+: (\d+)/(\d+) kernels (\S+): ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", default="2m", help="the tuning budget (default 2m)")
    parser.add_argument("--size", type=int, default=112, help="the image's height and width (default 112)")
    parser.add_argument("--log", default=None, help="write the command's whole output to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tvmperf-tune-budget-") as tmp:
        project = Path(tmp)
        (project / "test_resnet.py").write_text(TEST.format(size=args.size))
        (project / "pytest.ini").write_text("[pytest]\ntvmperf_baselines = baselines\n")
        env = {
            **os.environ,
            "TVMPERF_CACHE_DIR": str(project / ".cache"),
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        }
        cmd = [
            sys.executable,
            "-m",
            "pytest_tvmperf",
            "tune",
            "--budget",
            args.budget,
            "test_resnet.py",
            "-p",
            "no:cacheprovider",
            "-q",
            "-W",
            "ignore::UserWarning",
        ]
        print(f"$ {' '.join(cmd[1:])}   (in a fresh project; load average {os.getloadavg()[0]:.1f})", flush=True)
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        stamped: list[tuple[float, str]] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            stamped.append((time.monotonic() - start, line.rstrip("\n")))
        rc = proc.wait()
        wall = time.monotonic() - start

    lines = [text for _, text in stamped]
    if args.log:
        Path(args.log).write_text("".join(f"{t:7.1f} {text}\n" for t, text in stamped))
    tune_lines = [(t, text) for t, text in stamped if text.startswith(("tvmperf tune resnet18", "tuning resnet18"))]
    estimate = next((text for _, text in tune_lines if " kernel(s), " in text and "trials, about" in text), None)
    summary = next((text for _, text in tune_lines if " used" in text and "record(s) written" in text), None)
    refused = next((text for text in lines if "is too small for resnet18" in text), None)
    print(f"exit status {rc}; the whole command: {wall:.0f} s")
    for text in lines:  # pytest's verdict: what failed, if anything
        if text.startswith(("FAILED", "ERROR")) or " passed" in text or " failed" in text:
            print(f"  {text}")
    if refused is not None:
        print(f"refused before tuning: {refused.strip(' !')}")
        return
    if estimate is None or summary is None:
        print("no estimate or summary line; the output's last lines:")
        print("\n".join(lines[-30:]))
        return
    print(f"first tuning line: {tune_lines[0][1]}")
    print(f"estimate: {estimate}")
    print(f"summary:  {summary}")
    gaps, last = [], {}
    for t, text in tune_lines:
        match = PROGRESS.match(text)
        if match:
            kernel = match.group(3)
            if kernel in last:
                gaps.append(t - last[kernel])
            last[kernel] = t
    used = re.search(r": (\d+(?:\.\d+)?) (s|min|h) used", summary)
    used_s = float(used.group(1)) * {"s": 1, "min": 60, "h": 3600}[used.group(2)] if used else float("nan")
    budget = re.search(r"of the (\d+(?:\.\d+)?) (s|min|h) budget", summary)
    budget_s = float(budget.group(1)) * {"s": 1, "min": 60, "h": 3600}[budget.group(2)] if budget else float("nan")
    batch = max(gaps) if gaps else 0.0
    within = used_s <= budget_s + batch
    print(
        f"tuning: {used_s:.0f} s used of {budget_s:.0f} s; longest batch seen {batch:.0f} s; "
        f"{'within' if within else 'NOT within'} the budget + one batch ({budget_s + batch:.0f} s); "
        f"{sum(1 for _, t in tune_lines if PROGRESS.match(t))} progress lines, "
        f"{sum(1 for t in lines if chr(13) in t or chr(27) in t)} with \\r or escape codes"
    )


if __name__ == "__main__":
    main()
