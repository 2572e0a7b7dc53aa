# docs/examples/test_torch_module.py: a PyTorch module (pip install 'pytest-tvmperf[torch]')
import pytest
import torch

from pytest_tvmperf import workloads


class MyNet(torch.nn.Module):  # or any torch.nn.Module you already have
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_mynet(tvmperf):
    torch.manual_seed(0)  # the workload's name comes from the class and shapes, not the weights: seed them
    net = MyNet()
    # torch.export + relax.frontend.torch; dynamic_batch: Hypothesis also checks batches 1-16
    tvmperf.check(workloads.torch_workload(net, (torch.randn(2, 3, 16, 16),), dynamic_batch=True))
