"""The target plug-in point (builder/targets.py): names -> TargetSpec through TARGET_KINDS."""

from __future__ import annotations

import pytest

from pytest_tvmperf.builder.targets import TARGET_KINDS, TargetSpec, resolve_target
from pytest_tvmperf.config.parsing import TARGETS


def test_every_target_name_the_options_accept_has_a_kind():
    assert set(TARGETS) == set(TARGET_KINDS)


def test_llvm_is_the_host_cpu_with_its_own_mcpu():
    spec = resolve_target("llvm")
    assert spec.config["kind"] == "llvm" and spec.config["mcpu"]
    assert spec.device_type == "cpu" and spec.skip_reason is None
    assert str(spec.device()).startswith("cpu")


def test_cuda_says_why_it_cannot_run_without_a_gpu():
    import tvm

    spec = resolve_target("cuda")
    assert spec.config["kind"] == "cuda" and spec.device_type == "cuda"
    if tvm.cuda(0).exist:
        assert spec.skip_reason is None and spec.config["arch"].startswith("sm_")
    else:  # built and gated on exact metrics, not run (or skipped without nvcc/ptxas)
        assert not spec.runnable and spec.config["arch"].startswith("sm_")


def test_an_unknown_target_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown target 'tpu'; choose from llvm, cuda"):
        resolve_target("tpu")


def test_a_new_kind_is_one_entry(monkeypatch):
    class Fake:
        def resolve(self, name, llvm=None):
            return TargetSpec(name, {"kind": "llvm", "mcpu": "haswell"})

    monkeypatch.setitem(TARGET_KINDS, "fake", Fake())
    assert resolve_target("fake").config["mcpu"] == "haswell"
