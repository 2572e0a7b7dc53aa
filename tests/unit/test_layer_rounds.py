"""Pure: one side's per-layer times, its whole run and the time outside every call from
the same instrumented runs (judge/layer_rounds.py), with injected per-call times."""

from __future__ import annotations

import pytest

from pytest_tvmperf.judge.layer_rounds import Round, apportion
from pytest_tvmperf.judge.layer_match import LayerCall, SideProfile, match

US = 1e-6


def vm_run(kernel_us=(1000.0, 2000.0), gap_us=(2.0, 2.0, 2.0), stretch_gap=None, at=0.0):
    """A VM run of builtin, kernel, builtin, kernel: each builtin does 0.1 us; the
    instrument costs 2 us inside each window and 2 us between two calls (1 us before
    the first call and after the last). ``stretch_gap``: (gap index, us) the load adds."""
    gaps = list(gap_us)
    if stretch_gap is not None:
        gaps[stretch_gap[0]] += stretch_gap[1]
    own = (0.1, kernel_us[0], 0.1, kernel_us[1])
    t, spans = at + 1.0, []
    for i, work in enumerate(own):
        spans.append(((t) * US, (t + work + 2.0) * US))
        t += work + 2.0 + (gaps[i] if i < len(gaps) else 0.0)
    return Round.of_vm(at * US, (t + 1.0) * US, spans, (False, True, False, True))


def test_the_instruments_own_time_is_removed_from_the_calls_and_the_whole_run():
    run = vm_run()
    assert run.calls_s == pytest.approx((1000 * US, 2000 * US))
    assert sum(run.outside_s) == pytest.approx(2.2 * US)  # the two builtins' 0.1 us, and 1 us at either end
    parts = apportion([run] * 3)
    assert parts.calls_s == pytest.approx((1000 * US, 2000 * US))
    assert parts.outside_s == pytest.approx(2.2 * US) and parts.total_s == pytest.approx(3002.2 * US)
    assert parts.outside_noise_s == pytest.approx(0.0, abs=1e-12)


def test_rounds_the_load_stretched_do_not_stretch_the_rows_or_the_whole_run():
    """The load stretches one kernel in a round, a gap between two calls in another: each
    part's median leaves the stretch out, and the rows add up to the whole run shown."""
    rounds = [
        vm_run(),
        vm_run(at=5000),
        vm_run(kernel_us=(1000.0, 6000.0)),
        vm_run(stretch_gap=(1, 4000.0)),
        vm_run(at=9000),
    ]
    parts = apportion(rounds)
    assert parts.calls_s == pytest.approx((1000 * US, 2000 * US))
    assert parts.outside_s == pytest.approx(2.2 * US)
    assert parts.total_s == pytest.approx(sum(parts.calls_s) + parts.outside_s) == pytest.approx(3002.2 * US)


def test_a_peers_time_between_its_layers_is_outside_less_the_hooks_own():
    # two layers of 10 and 20 us, the hooks costing 1 us inside a window and 3 us outside it; 5 us of work
    # between the layers, 2 us before the first and 1 us after the last
    spans = [(3.5 * US, 14.5 * US), (22.5 * US, 43.5 * US)]
    run = Round.of_hooks(0.0, 46 * US, spans, inside_s=1 * US, between_s=3 * US)
    assert run.calls_s == pytest.approx((10 * US, 20 * US))
    assert sum(run.outside_s) == pytest.approx(8 * US)
    assert run.whole_s == pytest.approx(46 * US - 2 * (1 + 3) * US)


def test_an_outside_row_within_its_noise_of_zero_is_not_ranked():
    def conv(name, op, ms):
        return LayerCall(name=name, op=op, kind="conv", time_s=ms / 1e3, output=(1, 8, 4, 4))

    # 2 ms of convolution, then 0.05 +- 0.1 ms outside it, from round to round
    rounds = [Round.of_hooks(0.0, (2.05 + d) * 1e-3, [(0.0, 2e-3)]) for d in (-0.2, 0.0, 0.2, 0.1, -0.1)]
    parts = apportion(rounds)
    tvm = SideProfile(
        "TVM",
        (conv("fused_conv2d", "conv2d", parts.calls_s[0] * 1e3),),
        parts.total_s,
        outside_s=parts.outside_s,
        outside_noise_s=parts.outside_noise_s,
    )
    table = match(tvm, SideProfile("torch", (conv("conv", "Conv2d", 2.0),), 2e-3, outside_s=0.0))
    (outside,) = [r for r in table.rows if r.outside == "tvm"]
    assert outside.tvm_s == pytest.approx(0.05e-3) and outside.noise_s == pytest.approx(0.1e-3)
    assert table.losers() == []  # not "losing most"
    assert sum(r.tvm_s for r in table.rows) == pytest.approx(table.tvm_total_s)


def test_rounds_of_another_length_are_refused():
    with pytest.raises(ValueError):
        apportion([vm_run(), Round((1e-3,), ())])
    with pytest.raises(ValueError):
        apportion([])
