"""Where a peer runs beside a GPU test (measure/peer_device.py), and whether the per-layer
TVM profile waits for the device (measure/peer_layers.on_device): the first real GPU run
found the layer table's TVM side unsynchronized, because TVM 0.27's Device has no
``device_type`` attribute."""

from types import SimpleNamespace

import numpy as np
import pytest

from pytest_tvmperf.measure import peer_device
from pytest_tvmperf.measure.peer_layers import on_device
from pytest_tvmperf.workload import PeerUnavailable


def test_a_cuda_device_is_off_the_host_and_the_cpu_is_not():
    tvm = pytest.importorskip("tvm")
    assert on_device(tvm.cuda(0))  # a Device object exists without a GPU
    assert not on_device(tvm.cpu(0))


def test_an_older_device_with_device_type_is_read_too():
    class Old:
        device_type = 2

    class Host:
        device_type = 1

    assert on_device(Old()) and not on_device(Host())


def _runner_with_module(module):
    def run(*arrays):
        return [a * 2 for a in arrays]

    run.torch_module = module
    return run


def test_plain_peers_and_host_tests_keep_their_runner():
    def numpy_peer(x):
        return x

    assert peer_device.peer_for_device(numpy_peer, "cuda") is numpy_peer
    run = _runner_with_module(object())
    assert peer_device.peer_for_device(run, "cpu") is run


def _torch_standing_in(torch, cuda: bool, log: list):
    """The torch module as peer_device sees it, with or without a GPU: torch's own
    tensors and inference mode, its CUDA calls recorded (never torch.cuda patched: a torch
    that believes it has CUDA breaks its lazy imports for the rest of the process)."""
    return SimpleNamespace(
        __version__=torch.__version__,
        version=SimpleNamespace(cuda="13.0" if cuda else None),
        cuda=SimpleNamespace(is_available=lambda: cuda, synchronize=lambda: log.append("sync")),
        inference_mode=torch.inference_mode,
        Tensor=torch.Tensor,
        from_numpy=torch.from_numpy,
        utils=torch.utils,
    )


def test_a_torch_module_beside_a_gpu_test_without_cuda_torch_is_unavailable_with_why():
    torch = pytest.importorskip("torch")
    fake = _torch_standing_in(torch, cuda=False, log=[])
    with pytest.raises(PeerUnavailable, match="sees no CUDA device.*would not compare with TVM's GPU time"):
        peer_device.peer_for_device(_runner_with_module(torch.nn.Identity()), "cuda", torch=fake)


def test_a_torch_module_beside_a_gpu_test_is_moved_to_the_gpu_as_a_copy(monkeypatch):
    torch = pytest.importorskip("torch")
    moved = []

    class Module(torch.nn.Module):
        def forward(self, x):
            return x + 1

        def to(self, device):  # no GPU here: record the move, stay on the CPU
            moved.append(device)
            return self

    class Upload:  # a host tensor that records its move to the GPU
        def __init__(self, array):
            self.array = array

        def to(self, device):
            moved.append(f"input to {device}")
            return torch.from_numpy(np.array(self.array))

    monkeypatch.setattr(peer_device, "tensor_from_numpy", lambda torch, a: Upload(a))
    original = Module()
    fake = _torch_standing_in(torch, cuda=True, log=moved)
    run = peer_device.peer_for_device(_runner_with_module(original), "cuda", torch=fake)
    assert run.device == "cuda" and run.torch_module is not original and moved[0] == "cuda"
    # the correctness check: NumPy in, NumPy out, the GPU waited for
    out = run(np.zeros(3, dtype="float32"))
    assert isinstance(out[0], np.ndarray) and out[0].tolist() == [1.0, 1.0, 1.0]
    assert "input to cuda" in moved and "sync" in moved
    # what is timed: tensors already on the device in, the outputs left there
    assert isinstance(run(*run.device_inputs([np.zeros(2, dtype="float32")])), torch.Tensor)


def test_a_peer_on_a_device_is_timed_on_inputs_uploaded_once():
    calls = []

    def run(*arrays):
        return arrays

    run.device_inputs = lambda arrays: calls.append(len(arrays)) or ["on device"]
    assert peer_device.timing_args(run, [np.zeros(2)]) == ["on device"] and calls == [1]
    inputs = [np.zeros(2)]
    assert peer_device.timing_args(lambda x: x, inputs) is inputs
