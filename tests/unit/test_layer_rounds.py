"""Pure: one side's per-layer times, its whole run and the time outside every call from
the same instrumented runs (judge/layer_rounds.py), with injected per-call times."""

from __future__ import annotations

import pytest

from pytest_tvmperf.judge.layer_rounds import Round, apportion
from pytest_tvmperf.judge.layers import LayerCall, SideProfile, match


def test_the_instruments_own_time_is_removed_and_the_parts_add_up_to_each_run():
    # 3 calls of 1, 2 and 4 ms seen through an instrument costing 10 us in a window and 20 us outside it,
    # 5 calls seen in all (two untimed builtins), 0.5 ms of the run outside every call
    overhead = 5 * 30e-6
    run = Round(wall_s=7.5e-3 + overhead, calls_s=(1.01e-3, 2.01e-3, 4.01e-3), hooks=5, inside_s=10e-6,
                between_s=20e-6)
    parts = apportion([run] * 3)
    assert parts.calls_s == pytest.approx((1e-3, 2e-3, 4e-3))
    assert parts.total_s == pytest.approx(7.5e-3) and parts.outside_s == pytest.approx(0.5e-3)
    assert parts.outside_noise_s == pytest.approx(0.0, abs=1e-12) and parts.overhead_s == pytest.approx(30e-6)


def test_a_round_the_load_stretched_does_not_stretch_the_whole_run():
    """Rounds stretched by the load, each in another call (or outside them): each round
    adds up, and the whole run shown is the parts' medians summed, which leave the
    stretches out, where the median whole run would keep them."""
    quiet = [Round(wall_s=(5.0 + i * 0.01) * 1e-3, calls_s=(1e-3, 3e-3), hooks=4) for i in range(2)]
    stretched = [Round(wall_s=9e-3, calls_s=(1e-3, 7e-3), hooks=4), Round(wall_s=9e-3, calls_s=(5e-3, 3e-3), hooks=4),
                 Round(wall_s=9e-3, calls_s=(1e-3, 3e-3), hooks=4)]
    parts = apportion(quiet + stretched)
    assert parts.calls_s == pytest.approx((1e-3, 3e-3))
    assert parts.outside_s == pytest.approx(1e-3)  # 1 ms outside, the third stretched round's 5 ms left out
    assert parts.total_s == pytest.approx(sum(parts.calls_s) + parts.outside_s)  # the rows add up to it
    assert parts.total_s == pytest.approx(5e-3)  # not 9 ms, the median of the rounds' wall times
    assert parts.outside_noise_s < 0.1e-3  # the median distance from the median: one stretched round moves it little


def test_an_outside_row_within_its_noise_of_zero_is_not_ranked():
    def call(ms):
        return LayerCall(name="fused_conv2d", op="conv2d", kind="conv", time_s=ms / 1e3, output=(1, 8, 4, 4))

    rounds = [Round(wall_s=(2.05 + d) * 1e-3, calls_s=(2e-3,), hooks=2) for d in (-0.2, 0.0, 0.2, 0.1, -0.1)]
    parts = apportion(rounds)
    tvm = SideProfile("TVM", (call(parts.calls_s[0] * 1e3),), parts.total_s, outside_s=parts.outside_s,
                      outside_noise_s=parts.outside_noise_s)
    peer = SideProfile("torch", (LayerCall(name="conv", op="Conv2d", kind="conv", time_s=2e-3, output=(1, 8, 4, 4)),),
                       2e-3, outside_s=0.0)
    table = match(tvm, peer)
    (outside,) = [r for r in table.rows if r.outside == "tvm"]
    assert outside.tvm_s == pytest.approx(0.05e-3) and outside.noise_s == pytest.approx(0.1e-3)
    assert table.losers() == []  # 0.05 +- 0.1 ms outside kernels: not "losing most"
    assert sum(r.tvm_s for r in table.rows) == pytest.approx(table.tvm_total_s)


def test_rounds_of_another_length_are_refused():
    with pytest.raises(ValueError):
        apportion([Round(1e-3, (1e-3,), 1), Round(1e-3, (), 0)])
    with pytest.raises(ValueError):
        apportion([])
