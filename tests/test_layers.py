"""Which layer loses to the peer framework (issue 35): per layer, TVM's kernel calls
against the peer's layers, matched by op and shapes. Pure matching and ranking with
injected times; end to end, a network with one layer TVM computes naively (an
unscheduled 3x3 convolution, which torch runs through oneDNN) among cheap ones is named
first; onnxruntime's per-node profile of a bundled ONNX model gives the same table."""

from __future__ import annotations

import json

import pytest

try:  # imported at collection: pytester's in-process runs cannot import torch or TVM twice
    import torch
    import torch.export  # noqa: F401
    import tvm.relax.frontend.torch  # noqa: F401
except ImportError:
    torch = None

from pytest_tvmperf.measure.peer_layers import NoLayers, ort_events_profile, with_test_medians
from pytest_tvmperf.judge.layer_match import (
    CONV,
    MATMUL,
    LayerCall,
    LayerTable,
    SideProfile,
    fused_ops,
    match,
    tvm_anchor,
)
from pytest_tvmperf.result.layers_text import loser_line, summary_lines, table_lines, with_layers


def kernel(name, ms, inputs=(), output=(), flops=None):
    return LayerCall(
        name=name,
        op="+".join(fused_ops(name)),
        kind=tvm_anchor(name),
        time_s=ms / 1e3,
        inputs=tuple(inputs),
        output=tuple(output),
        flops=flops,
    )


def layer(name, op, kind, ms, inputs=(), output=(), flops=None):
    return LayerCall(
        name=name, op=op, kind=kind, time_s=ms / 1e3, inputs=tuple(inputs), output=tuple(output), flops=flops
    )


X, W1, Y1 = (1, 16, 32, 32), (16, 16, 3, 3), (1, 16, 32, 32)
W2, Y2 = (32, 16, 3, 3), (1, 32, 16, 16)


def two_convs_and_a_linear(slow_ms: float = 50.0) -> tuple[SideProfile, SideProfile]:
    tvm = SideProfile(
        "TVM",
        (
            kernel("fused_conv2d_add_relu", 1.0, [X, W1, (1, 16, 1, 1)], Y1, flops=9_437_184),
            kernel("fused_conv2d1_add1", slow_ms, [Y1, W2, (1, 32, 1, 1)], Y2, flops=4_718_592),
            kernel("max_pool2d", 0.2, [Y2], (1, 32, 8, 8)),
            kernel("fused_matmul_add2", 0.1, [(1, 2048), (2048, 10), (10,)], (1, 10), flops=40_960),
        ),
        total_s=(1.0 + slow_ms + 0.3 + 0.4) / 1e3,
    )
    peer = SideProfile(
        "torch",
        (
            layer("conv1", "Conv2d", CONV, 1.0, [X, W1], Y1, flops=9_437_184),
            layer("relu", "ReLU", "", 0.1, [Y1], Y1),
            layer("conv2", "Conv2d", CONV, 1.5, [Y1, W2], Y2, flops=4_718_592),
            layer("pool", "MaxPool2d", "max_pool", 0.2, [Y2], (1, 32, 8, 8)),
            layer("fc", "Linear", MATMUL, 0.1, [(1, 2048), (10, 2048)], (1, 10), flops=40_960),
        ),
        total_s=3.5 / 1e3,
    )
    return tvm, peer


# --- pure: matching, ranking, text -----------------------------------------------------


def test_the_layer_tvm_computes_slowly_is_named_first():
    table = match(*two_convs_and_a_linear())
    first = table.losers()[0]
    assert first.label == "conv2 (Conv2d)" and [c.name for c in first.tvm] == ["fused_conv2d1_add1"]
    assert first.lost_s == pytest.approx(48.5e-3)
    assert first.ratio == pytest.approx(50 / 1.5)
    assert first.gflops("tvm") == pytest.approx(4_718_592 / 50e-3 / 1e9)
    assert first.gflops("peer") == pytest.approx(4_718_592 / 1.5e-3 / 1e9)
    assert "conv2 (Conv2d): +48.500 ms, 33.3x" in loser_line(table)
    # and not when TVM computes it as fast as torch: the ranking follows the injected times
    assert match(*two_convs_and_a_linear(slow_ms=1.5)).losers()[0].label != "conv2 (Conv2d)"


def test_fused_layers_are_grouped_with_their_anchor_on_both_sides():
    table = match(*two_convs_and_a_linear())
    conv1 = next(r for r in table.rows if r.label.startswith("conv1"))
    assert [c.name for c in conv1.peer] == ["conv1", "relu"]  # torch's ReLU layer: fused into TVM's conv kernel
    assert [c.name for c in conv1.tvm] == ["fused_conv2d_add_relu"]
    assert fused_ops("fused_conv2d1_add1_relu") == ("conv2d", "add", "relu")
    assert fused_ops("fused_adaptive_avg_pool2d_reshape") == ("adaptive_avg_pool2d", "reshape")
    assert tvm_anchor("fused_conv2d12_add3") == CONV and tvm_anchor("fused_add_relu") == ""
    assert tvm_anchor("fused_matmul3_add") == MATMUL and tvm_anchor("mean") == "avg_pool"


def test_time_that_matches_nothing_is_shown_not_dropped():
    tvm, peer = two_convs_and_a_linear()
    extra = kernel("fused_conv2d9", 2.0, [(1, 3, 8, 8), (4, 3, 1, 1)], (1, 4, 8, 8))  # no torch layer of that shape
    tvm = SideProfile("TVM", tvm.calls + (extra,), tvm.total_s + 2e-3 + 1e-3)  # +1 ms outside every kernel
    odd = layer("odd", "Conv2d", CONV, 0.5, [], (9, 9))  # no TVM kernel of that shape
    table = match(tvm, SideProfile("torch", peer.calls + (odd,), peer.total_s + 0.5e-3))
    labels = [r.label for r in table.rows]
    assert "(TVM only) fused_conv2d9" in labels and "(torch only) odd" in labels
    outside = {r.outside: r for r in table.rows if r.outside}
    assert outside["tvm"].tvm_s == pytest.approx(1.4e-3)  # 0.4 ms of the fixture + 1 ms
    # every second of either side is in some row
    assert sum(r.tvm_s for r in table.rows) == pytest.approx(tvm.total_s)
    assert sum(r.peer_s for r in table.rows) == pytest.approx(table.peer_total_s)


def test_same_shaped_layers_match_in_order_and_blocked_layouts_by_size():
    a = kernel("fused_conv2d_add", 5.0, [X, W1], Y1)
    b = kernel("fused_conv2d_add", 1.0, [Y1, W1], Y1)
    blocked = layer("c0", "NchwcConv", CONV, 1.0, [(1, 2, 32, 32, 8)], (1, 2, 32, 32, 8))  # onnxruntime's NCHW8c
    plain = layer("c1", "Conv", CONV, 1.0, [Y1, W1], Y1)
    table = match(SideProfile("TVM", (a, b), 6e-3), SideProfile("onnxruntime", (blocked, plain), 2e-3))
    pairs = {r.peer[0].name: r.tvm[0].time_s for r in table.rows if r.matched}
    assert pairs == {"c1": 1e-3, "c0": 5e-3}  # c1 takes the kernel fed by its input shape; c0 the other


def test_a_padded_blocked_output_cut_back_by_a_later_node_matches():
    tvm = kernel("fused_conv2d17_add9_relu9", 3.0, [(1, 512, 3, 3), (1000, 512, 1, 1)], (1, 1000, 3, 3))
    conv = layer("r64_nchwc", "Conv", CONV, 0.1, [(1, 512, 3, 3), (1008, 512, 1, 1)], (1, 1008, 3, 3))
    reorder = layer("reorder", "ReorderOutput", "", 0.01, [(1, 1008, 3, 3)], (1, 1000, 3, 3))
    table = match(SideProfile("TVM", (tvm,), 3e-3), SideProfile("onnxruntime", (conv, reorder), 0.11e-3))
    assert table.rows[0].matched and [c.name for c in table.rows[0].peer] == ["r64_nchwc", "reorder"]


def test_table_text_json_and_summary():
    table = match(*two_convs_and_a_linear())
    lines = table_lines(table, limit=2)
    assert "per layer, TVM against torch" in lines[0]
    assert lines[2].split()[:2] == ["1", "conv2"]
    assert "more row(s)" in lines[-1]
    assert LayerTable.from_json(json.loads(json.dumps(table.to_json()))) == table
    assert with_layers("failed", (table,)).startswith("failed\nper layer")
    assert with_layers("", (table,)) == ""
    (head, line) = summary_lines([("test_net[llvm-vm-bytecode]", (table,))])
    assert line.startswith("  test_net[llvm-vm-bytecode]: layers losing most to torch: conv2 (Conv2d)")
    noted = with_test_medians(table, 60e-3, None)
    assert noted.rows == table.rows and noted.tvm_total_s == table.tvm_total_s  # the table's own whole run kept
    assert "the test's own medians, timed before them: TVM 60.000 ms" in noted.notes[-1]


def with_outside(side: SideProfile, outside_ms: float, noise_ms: float) -> SideProfile:
    """``side`` with its time outside every call measured (``outside_ms`` +- ``noise_ms``)
    and its whole run the calls plus that."""
    calls_s = sum(c.time_s for c in side.calls)
    return SideProfile(
        side.label, side.calls, calls_s + outside_ms / 1e3, outside_s=outside_ms / 1e3, outside_noise_s=noise_ms / 1e3
    )


def test_the_outside_row_is_the_measured_time_and_unranked_within_its_noise():
    tvm, peer = two_convs_and_a_linear(slow_ms=1.0)  # no layer loses: only the time outside could
    noisy = match(with_outside(tvm, 3.0, 4.0), peer)
    outside = next(r for r in noisy.rows if r.outside == "tvm")
    assert outside.tvm_s == pytest.approx(3e-3) and outside.noise_s == pytest.approx(4e-3)
    assert sum(r.tvm_s for r in noisy.rows) == pytest.approx(noisy.tvm_total_s)
    assert outside not in noisy.losers() and "outside kernels" not in loser_line(noisy)
    assert "3.000±4.000" in "\n".join(table_lines(noisy))
    clear = match(with_outside(tvm, 3.0, 0.5), peer)  # beyond its noise: ranked, first
    assert clear.losers()[0].outside == "tvm" and "(outside kernels)" in loser_line(clear)
    assert LayerTable.from_json(json.loads(json.dumps(noisy.to_json()))) == noisy


def test_html_puts_a_bar_per_side_losers_first():
    from pytest_tvmperf.report.html_report import layers_section
    from pytest_tvmperf.result.entry import ResultEntry

    table = match(*two_convs_and_a_linear())
    html = layers_section([ResultEntry(nodeid="t.py::test_net", verdict="pass", layers=(table,))])
    assert html.index("conv2 (Conv2d)") < html.index("conv1 (Conv2d)")
    assert html.count('title="TVM ') == html.count('title="torch ') == len(table.rows)
    assert layers_section([ResultEntry(nodeid="t.py::test_net", verdict="pass")]) == ""
    entry = ResultEntry(nodeid="t.py::test_net", verdict="pass", layers=(table,))
    assert ResultEntry.from_json(json.loads(json.dumps(entry.to_json()))).layers == (table,)


def test_onnxruntime_profile_events():
    def node(name, op, ts, dur, ins, out):
        return {
            "cat": "Node",
            "name": f"{name}_kernel_time",
            "ts": ts,
            "dur": dur,
            "args": {
                "op_name": op,
                "input_type_shape": [{"float": list(s)} for s in ins],
                "output_type_shape": [{"float": list(out)}],
            },
        }

    events = []
    for run, start in enumerate((0, 1000, 2000)):  # a warm-up run, then two
        events.append({"cat": "Session", "name": "model_run", "ts": start, "dur": 500 + run})
        events.append(node("conv1", "Conv", start + 10, 100 + 10 * run, [X, W1], Y1))
        events.append(node("relu1", "Relu", start + 200, 20, [Y1], Y1))
    side = ort_events_profile(events)
    assert [c.name for c in side.calls] == ["conv1", "relu1"]
    assert side.calls[0].time_s == pytest.approx(115e-6) and side.calls[0].kind == CONV
    assert side.calls[0].flops == 2 * 16 * 32 * 32 * 16 * 9
    assert side.total_s == pytest.approx(501.5e-6)
    with pytest.raises(NoLayers):
        ort_events_profile(events[:3])


# --- end to end, as a user runs it -----------------------------------------------------

SLOW_NET = '''
import pytest
import torch
from pytest_tvmperf.workloads import torch_workload


class OneSlowConv(torch.nn.Module):
    """Cheap layers around one 3x3 convolution: TVM's default pipeline computes it with
    naive loops (no schedule), torch through oneDNN: tens of times slower under TVM."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(4, 16, 1)
        self.slow = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):
        return self.head(self.pool(torch.relu(self.slow(torch.relu(self.stem(x))))))


def workload():
    torch.manual_seed(0)
    return torch_workload(OneSlowConv(), (torch.randn(1, 4, 32, 32),))


@pytest.mark.tvmperf(executors=["vm-bytecode"], vs_torch=2.0)
def test_gated(tvmperf):
    tvmperf.check(workload())


@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_free(tvmperf):
    tvmperf.check(workload())
'''


@pytest.fixture
def warm_torch_export():
    """One export before pytester's runs (see tests/test_torch_workloads.py)."""
    pytest.importorskip("torch")
    from pytest_tvmperf.workloads import torch_workload

    torch_workload(torch.nn.Linear(2, 2), (torch.zeros(2, 2),), dynamic_batch=True)


def test_a_failed_vs_torch_names_the_slow_layer_first(project, warm_torch_export, capsys):
    project.pytester.makepyfile(test_perf=SLOW_NET)
    project.run("--tvmperf-update").assert_outcomes(passed=2)  # recorded: TVM and torch times alike (fake timer)
    project.set_env("TVMPERF_FAKE_PEER_SCALE", "0.05")  # the whole run: TVM 20x torch's time, past vs_torch=2
    result = project.run("--tvmperf-peers=torch", "--tvmperf-json=out.json", "--tvmperf-html=out.html", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    section = out[out.index("test_gated") :]
    assert "per layer, TVM against torch" in section
    first_row = next(line for line in section.splitlines() if line.strip().startswith("1  "))
    assert first_row.split()[1] == "slow", first_row  # the naive 3x3 conv loses the most
    assert "layers losing most to torch: slow (Conv2d 3x3 s1 p1)" in out  # the summary
    entries = {
        e["nodeid"].split("::")[-1]: e for e in json.loads((project.pytester.path / "out.json").read_text())["tests"]
    }
    (table,) = entries["test_gated[llvm-vm-bytecode]"]["layers"]
    worst = max(table["rows"], key=lambda r: r["lost_s"])
    assert worst["label"] == "slow (Conv2d 3x3 s1 p1)" and worst["tvm"][0]["name"].startswith("fused_conv2d")
    # the rows add up to the whole run printed with them (timed in the same runs; the fake timer's
    # whole-run samples are no part of the table)
    for side in ("tvm", "peer"):
        rows_s, whole_s = sum(r[f"{side}_s"] for r in table["rows"]), table[f"{side}_total_s"]
        assert abs(rows_s - whole_s) <= 0.1 * whole_s, (side, rows_s, whole_s)
    assert (
        f"whole run, timed with the rows: TVM {table['tvm_total_s'] * 1e3:.3f} ms, "
        f"torch {table['peer_total_s'] * 1e3:.3f} ms"
    ) in section
    assert worst["flops"] == 2 * 16 * 32 * 32 * 16 * 9
    assert "layers" not in entries["test_free[llvm-vm-bytecode]"]  # passing, not asked for: nothing paid
    html = (project.pytester.path / "out.html").read_text()
    assert 'id="tvmperf-layers"' in html and html.index("slow (Conv2d 3x3 s1 p1)") < html.index("stem (Conv2d")
    from pytest_tvmperf.command.cli import main

    assert main(["show", str(project.pytester.path / "out.json")]) == 0
    shown = capsys.readouterr().out
    assert "test_gated[llvm-vm-bytecode]:" in shown and "per layer, TVM against torch" in shown
    # asked for, on a passing test
    project.set_env("TVMPERF_FAKE_PEER_SCALE", "1")
    result = project.run("--tvmperf-peers=torch", "--tvmperf-layers=on", "--tvmperf-json=out.json", "-k", "free")
    result.assert_outcomes(passed=1)
    (entry,) = json.loads((project.pytester.path / "out.json").read_text())["tests"]
    assert max(entry["layers"][0]["rows"], key=lambda r: r["lost_s"])["label"] == "slow (Conv2d 3x3 s1 p1)"
    assert "test_free[llvm-vm-bytecode]: layers losing most to torch: slow" in result.stdout.str()


def test_onnxruntime_per_node_table_of_a_bundled_model():
    """squeezenet (shipped with the onnx package) against onnxruntime's own per-node
    profile: every convolution of TVM's is matched with one of onnxruntime's (which runs
    them in its blocked NCHWc layout), and no time of either side is left out."""
    pytest.importorskip("onnxruntime")
    from pytest_tvmperf.builder.executor_choice import get_executor
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.measure.peer_layers import layer_tables
    from pytest_tvmperf.workloads.onnx_model import bundled_onnx

    workload = bundled_onnx("squeezenet", shapes={"data_0": [1, 3, 64, 64]}, random_weights=True)
    compiled = get_executor("vm-bytecode").compile(workload, resolve_target("llvm"))
    inputs = workload.inputs()
    (table,), problems = layer_tables(
        compiled,
        workload.call_args(inputs),
        workload.program,
        inputs,
        {"onnxruntime": workload.peers["onnxruntime"]},
        runs=2,
    )
    assert problems == [] and table.peer == "onnxruntime"
    convs = [r for r in table.rows if any(c.kind == CONV for c in r.tvm)]
    assert len(convs) == 26 and all(r.matched for r in convs)  # squeezenet 1.0: 26 convolutions
    assert all(r.gflops("tvm") and r.gflops("peer") for r in convs)
    for side, total in (("tvm", table.tvm_total_s), ("peer", table.peer_total_s)):  # within the outside row's noise
        (outside,) = [r for r in table.rows if r.outside == side]
        rows_s = sum(r.tvm_s if side == "tvm" else r.peer_s for r in table.rows)
        assert abs(rows_s - total) <= outside.noise_s + 1e-12, (side, rows_s, total, outside.noise_s)


def test_a_vm_compiled_build_is_timed_per_kernel_under_bytecode():
    """vm-compiled has no instrument: the same lowered module is built as bytecode (and
    the table says so); without a target to build it for, there is no TVM side. (A Relax
    module built without torch.export: an export after pytester's runs cannot import
    torch's lazily registered libraries again.)"""
    from pytest_tvmperf.builder.executor_choice import get_executor
    from pytest_tvmperf.builder.targets import resolve_target
    from pytest_tvmperf.measure.peer_layers import tvm_profile
    from pytest_tvmperf.workloads.dla import dla_conv

    workload = dla_conv("head_1x1", scale=0.05)  # (1, 256, 8, 8) x (2, 256, 1, 1)
    target = resolve_target("llvm")
    compiled = get_executor("vm-compiled").compile(workload, target)
    args = workload.call_args(workload.inputs())
    waits: list[int] = []  # the device waited for (a GPU's sync; here counted)
    side = tvm_profile(
        compiled, args, workload.program, runs=1, target=target.tvm_target(), sync=lambda: waits.append(1)
    )
    calls = len(side.calls)
    assert len(waits) >= 2 * calls + 2  # before and after every call (warm-up and the run), and around the run
    (call,) = [c for c in side.calls if c.kind == CONV]
    assert call.output == (1, 2, 8, 8) and call.attrs == "1x1 s1 p0" and call.flops == 2 * 2 * 64 * 256
    assert "vm-bytecode" in side.note
    with pytest.raises(NoLayers, match="Relax VM"):
        tvm_profile(compiled, args, workload.program, runs=1)
