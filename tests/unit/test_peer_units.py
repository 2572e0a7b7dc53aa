"""Pure parts of peer frameworks, relations and pipelines: option parsing, ratio
verdicts, the ratio table, samples pooling and the record's JSON."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.config import limits, parsing
from pytest_tvmperf.judge.ratios import peer_verdicts, ratio_verdict
from pytest_tvmperf.values.machine import Machine
from pytest_tvmperf.values.samples import TimeSamples
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record, Timing
from pytest_tvmperf.result.text import SummaryRow, peer_lines, peer_table, relation_message
from pytest_tvmperf.judge.verdict import PeerCell, Verdict


@pytest.mark.parametrize(
    "text, expected",
    [
        ("numpy", ("numpy",)),
        ("torch, numpy", ("torch", "numpy")),
        ("all", parsing.PEERS),
        ("none", ()),
        ("off", ()),
        (["onnxruntime"], ("onnxruntime",)),
    ],
)
def test_parse_peers(text, expected):
    assert parsing.parse_peers(text) == expected


@pytest.mark.parametrize("text, message", [("jax", "unknown peer 'jax'"), ("", "no peer given")])
def test_parse_peers_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        parsing.parse_peers(text)


@pytest.mark.parametrize("value, expected", [(1.2, 1.2), ("1.5x", 1.5), ("2", 2.0), (0.5, 0.5)])
def test_peer_limit(value, expected):
    assert limits.peer_limits_from_marker({"vs_torch": value, "time": "5%"}) == {"torch": expected}


@pytest.mark.parametrize("value", [0, -1, "fast", "nan", "inf", None])
def test_peer_limit_rejects(value):
    with pytest.raises(ValueError, match="bad vs_numpy=.*e.g. vs_numpy=1.2"):
        limits.peer_limits_from_marker({"vs_numpy": value})


def test_ratio_verdict_statuses():
    slower = ratio_verdict("x", (2.0,) * 15, 2e-3, 1e-3, 1.5, 0.05, 0.02)
    assert slower.status == "exceeded" and math.isclose(slower.ratio, 2.0)
    assert slower.low < 2.0 < slower.high
    within = ratio_verdict("x", (1.0,) * 15, 1e-3, 1e-3, 1.5, 0.05, 0.02)
    assert within.status == "pass"
    close = ratio_verdict("x", (1.49,) * 15, 1e-3, 1e-3, 1.5, 0.05, 0.02)
    assert close.status == "inconclusive"  # 2% noise: 1.49 cannot be told from 1.5
    shown = ratio_verdict("x", (3.0,) * 15, 3e-3, 1e-3, None, 0.05, 0.02)
    assert shown.status == "not gated" and math.isclose(shown.ratio, 3.0)


@settings(max_examples=60, deadline=None)
@given(ratio=st.floats(0.1, 10), limit=st.floats(0.2, 5))
def test_ratio_verdict_never_fails_a_ratio_within_the_limit(ratio, limit):
    verdict = ratio_verdict("x", (ratio,) * 10, ratio, 1.0, limit, 0.05, 0.02)
    if ratio <= limit:
        assert verdict.status != "exceeded"
    if ratio > limit * 1.2:
        assert verdict.status == "exceeded"


def test_peer_verdicts_pair_rounds():
    samples = TimeSamples((2e-3, 4e-3, 2e-3), peers=(("numpy", (1e-3, 2e-3, 1e-3)), ("torch", (4e-3, 8e-3, 4e-3))))
    verdicts = {v.name: v for v in peer_verdicts(samples, {"numpy": 1.5}, 0.05, 0.02)}
    assert math.isclose(verdicts["numpy"].ratio, 2.0) and verdicts["numpy"].status == "exceeded"
    assert math.isclose(verdicts["torch"].ratio, 0.5) and verdicts["torch"].limit is None


def test_samples_pool_peers_and_reject_bad_ones():
    a = TimeSamples((1.0, 1.0), peers=(("numpy", (2.0, 2.0)),))
    b = TimeSamples((1.0,), peers=(("numpy", (3.0,)),))
    assert (a + b).peer("numpy") == (2.0, 2.0, 3.0)
    assert (a + TimeSamples((1.0,))).peers == ()
    with pytest.raises(ValueError, match="peer numpy samples must pair"):
        TimeSamples((1.0,), peers=(("numpy", (1.0, 2.0)),))
    with pytest.raises(ValueError, match="peer numpy samples must be positive"):
        TimeSamples((1.0,), peers=(("numpy", (0.0,)),))


def test_record_json_keeps_pipeline_tuning_and_peers():
    machine = Machine(
        cpu_model="cpu", logical_cores=2, tvm_threads=1, tvm_version="0.27", llvm_version="17", target="llvm"
    )
    samples = TimeSamples((1e-3, 2e-3), peers=(("torch", (5e-4, 6e-4)),))
    record = Record(
        "w",
        "vm-bytecode",
        {"kind": "llvm"},
        "0.27",
        ExactMetrics(kernels=2),
        {machine.fingerprint: Timing(machine, samples)},
        pipeline="tuned",
        tuning={"db_dir": "baselines/tuning", "records_hash": "f00", "tasks": ["a"], "missing": []},
    )
    back = Record.from_json(record.as_json())
    assert back.pipeline == "tuned" and back.tuning["records_hash"] == "f00"
    assert back.timing.samples.peer("torch") == (5e-4, 6e-4)
    old = Record.from_json({k: v for k, v in record.as_json().items() if k not in ("pipeline", "tuning")})
    assert old.pipeline == "default" and old.tuning is None  # baselines from before pipelines existed
    assert record.merged_over(back).timings == record.timings
    assert record.merged_over(old) is record  # another pipeline: the old timings are not kept


def test_peer_table_and_lines():
    rows = [
        SummaryRow(
            "t1",
            "vm",
            "llvm",
            2e-3,
            None,
            None,
            None,
            "pass",
            peers=(
                PeerCell("numpy", 0.5, 0.45, 0.55, Verdict.NOT_GATED, None),
                PeerCell("torch", 2.0, 1.9, 2.1, Verdict.EXCEEDED, 1.2),
            ),
        ),
        SummaryRow("t2", "vm", "llvm", 1e-3, None, None, None, "pass"),
    ]
    table = peer_table(rows)
    assert table[0].split() == ["test", "tvm", "tvm/numpy", "tvm/torch"]
    assert "0.50x [0.45-0.55]" in table[1] and "2.00x [1.90-2.10] > 1.2 exceeded" in table[1]
    assert len(table) == 2  # t2 has no peers
    assert peer_table(rows[1:]) == []
    verdict = ratio_verdict("torch", (2.0,) * 10, 2e-3, 1e-3, 1.2, 0.05, 0.02)
    (line,) = peer_lines([verdict])
    assert "TVM 2 ms vs torch 1 ms: 2.00x" in line and "limit 1.2x: exceeded" in line


def test_relation_message_shows_both_sides():
    verdict = ratio_verdict("a / b", (4.0,) * 10, 4e-3, 1e-3, 1.5, 0.05, 0.02)
    message = relation_message(
        "a / b",
        verdict,
        ExactMetrics(instructions={"main": 85}, by_callee={"x": 80, "y": 5}),
        ExactMetrics(instructions={"main": 22}, by_callee={"x": 17, "y": 5}),
        ["n1"],
    )
    assert "a / b: time ratio 4.00x" in message and "is more than the limit 1.5x" in message
    assert "instructions: 85 vs 22" in message and "+63 x" in message and "note: n1" in message


def test_markdown_summary_has_the_peer_table():
    from pytest_tvmperf.result.markdown import markdown_summary

    rows = [
        SummaryRow(
            "t1",
            "vm",
            "llvm",
            2e-3,
            None,
            None,
            None,
            "pass",
            peers=(
                PeerCell("numpy", 0.5, 0.45, 0.55, Verdict.NOT_GATED, None),
                PeerCell("torch", 2.0, 1.9, 2.1, Verdict.EXCEEDED, 1.2),
            ),
        )
    ]
    text = markdown_summary(rows)
    assert "| test | tvm | tvm/numpy | tvm/torch |" in text
    assert "| `t1` | 2 ms | 0.50x [0.45-0.55] | 2.00x [1.90-2.10] > 1.2 exceeded |" in text
    assert "tvm/" not in markdown_summary(rows[:0] + [SummaryRow("t2", "vm", "llvm", 1e-3, None, None, None, "pass")])


def test_the_markdown_headline_counts_an_inconclusive_peer_gate_as_inconclusive():
    from pytest_tvmperf.result.markdown import markdown_summary

    held = PeerCell("torch", 1.1, 0.9, 1.3, Verdict.INCONCLUSIVE, 1.2)
    shown = PeerCell("numpy", 1.1, 0.9, 1.3, Verdict.INCONCLUSIVE, None)  # not gated: only shown
    rows = [
        SummaryRow("t1", "vm", "llvm", 2e-3, None, None, None, "pass", peers=(held,)),
        SummaryRow("t2", "vm", "llvm", 2e-3, None, None, None, "pass", peers=(shown,)),
        SummaryRow("t3", "vm", "llvm", 2e-3, None, None, None, "regressed", peers=(held,)),
    ]
    text = markdown_summary(rows)
    assert text.startswith("### pytest-tvmperf: 1 inconclusive, 1 pass, 1 regressed\n")
    assert "| ⚠️ pass (vs torch inconclusive) |" in text
    assert "| ✔️ pass |" in text and "| ❌ regressed |" in text


def test_random_input_by_dtype():
    import numpy as np

    from pytest_tvmperf.workload import WorkloadError, random_input

    rng = np.random.default_rng(0)
    assert random_input(rng, (2, 3), np.float32, "x").dtype == np.float32
    ints = random_input(rng, (50,), np.int64, "x")
    assert ints.dtype == np.int64 and ints.min() >= 0 and ints.max() < 10
    assert random_input(rng, (4,), np.bool_, "x").dtype == np.bool_
    with pytest.raises(
        WorkloadError, match="onnx_workload input 'a': no default inputs of dtype complex64; pass make_inputs="
    ):
        random_input(rng, (1,), np.complex64, "onnx_workload input 'a'")


def test_unfused_pipeline_on_a_primfunc_is_a_workload_error():
    from pytest_tvmperf import WorkloadError, workloads

    with pytest.raises(WorkloadError, match="pipeline 'unfused' applies to Relax programs"):
        workloads.multiply(m=8, n=8).with_pipeline("unfused")


def test_gpu_kernels_are_left_unscheduled_for_tuning():
    """The GPU default pipeline schedules kernels with dlight while fusing; tuning needs
    them unscheduled, or a 'tuned' GPU build would silently have nothing to tune."""
    import tvm

    from pytest_tvmperf import workloads
    from pytest_tvmperf.builder import tuning
    from pytest_tvmperf.builder.pipelines import fuse_relax

    cuda = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    fused = fuse_relax(workloads.mlp(batch=1).program, cuda)
    assert [name for name, _ in tuning.tasks_of(fused, cuda)] == [
        "fused_matmul1_add1",
        "fused_matmul2_add2",
        "fused_matmul_add",
    ]


def test_history_leaves_relations_out_and_keeps_the_check():
    from pytest_tvmperf.report.history import history_line
    from pytest_tvmperf.result.entry import ResultEntry, TimeCell

    entries = [
        ResultEntry("t.py::x", Verdict.PASS, time=TimeCell(median_s=1e-3), relation=None),
        ResultEntry(
            "t.py::x", Verdict.REGRESSED, time=None, relation=PeerCell("a / b", 2.0, 1.9, 2.1, Verdict.EXCEEDED, 1.5)
        ),
    ]
    assert history_line(entries, "now")["tests"] == {"t.py::x": {"median_s": 1e-3, "verdict": "pass"}}


def test_merged_over_keeps_other_machines_unless_this_targets_records_changed():
    machine = Machine(
        cpu_model="cpu", logical_cores=2, tvm_threads=1, tvm_version="0.27", llvm_version="17", target="llvm"
    )
    other = Machine(
        cpu_model="cpu2", logical_cores=4, tvm_threads=1, tvm_version="0.27", llvm_version="17", target="llvm"
    )

    def rec(m, target, digest):
        return Record(
            "w",
            "vm-bytecode",
            target,
            "0.27",
            ExactMetrics(kernels=2),
            {m.fingerprint: Timing(m, TimeSamples((1e-3,)))},
            pipeline="tuned",
            tuning={"records_hash": digest},
        )

    old = rec(other, {"mcpu": "b"}, "h-b")
    assert set(rec(machine, {"mcpu": "a"}, "h-a").merged_over(old).timings) == {machine.fingerprint, other.fingerprint}
    same_target_old = rec(other, {"mcpu": "a"}, "h-old")
    assert set(rec(machine, {"mcpu": "a"}, "h-new").merged_over(same_target_old).timings) == {machine.fingerprint}


# --- one rule for every printed verdict and interval (issue 37, item 4) -----------------


def test_a_ratio_whose_interval_crosses_its_limit_is_no_pass():
    """Seen: ``tvm/torch 2.65x [2.26-3.10] <= 3 pass``: the 90% one-sided bound (2.9x) was
    under 3, the interval printed beside it was not. A pass needs the whole printed interval
    at or under the limit; the sign printed follows the verdict."""
    spread = [1 + 0.02 * ((i % 5) - 2) for i in range(15)]
    crossing = ratio_verdict("torch", tuple(2.65 * s for s in spread), 0.4, 0.15, 3.0, 0.025, 0.07)
    assert crossing.low < 3.0 < crossing.high
    assert crossing.status == "inconclusive"
    under = ratio_verdict("torch", tuple(2.0 * s for s in spread), 0.3, 0.15, 3.0, 0.025, 0.07)
    assert under.status == "pass" and under.high <= 3.0
    over = ratio_verdict("torch", tuple(4.0 * s for s in spread), 0.6, 0.15, 3.0, 0.025, 0.07)
    assert over.status == "exceeded" and over.low > 3.0
    rows = [
        SummaryRow("t", "vm", "llvm", 0.4, None, None, None, "inconclusive", peers=(PeerCell.of(crossing),)),
        SummaryRow("u", "vm", "llvm", 0.3, None, None, None, "pass", peers=(PeerCell.of(under),)),
        SummaryRow("o", "vm", "llvm", 0.6, None, None, None, "slower than peer", peers=(PeerCell.of(over),)),
    ]
    table = peer_table(rows)
    assert (
        table[1].endswith("vs 3 inconclusive") and table[2].endswith("<= 3 pass") and table[3].endswith("> 3 exceeded")
    )


@settings(max_examples=200, deadline=None)
@given(ratio=st.floats(0.2, 5.0), jitter=st.floats(0.0, 0.3), limit=st.floats(0.5, 4.0), alpha=st.floats(0.001, 0.2))
def test_no_ratio_prints_a_verdict_its_interval_contradicts(ratio, jitter, limit, alpha):
    ratios = tuple(ratio * (1 + jitter * ((i % 5) - 2) / 2) for i in range(15))
    v = ratio_verdict("torch", ratios, 1.0, 1.0, limit, alpha, 0.07)
    if v.status == "pass":
        assert v.high <= limit * (1 + 1e-9)
    if v.status == "exceeded":
        assert v.low > limit


def test_a_time_pass_is_printed_with_the_interval_that_decided_it():
    """A time pass rules a slowdown past the threshold out at one-sided 90%: it is shown
    with that interval (80% two-sided), whose upper end is at or under the limit."""
    from pytest_tvmperf.judge.timestats import decide

    d = decide([1.0] * 10, [1.0] * 10, 0.05, 0.005, 0.02, "a/b")
    assert d.status == "pass" and d.high <= 1.05 and d.describe().startswith("1.00x (80% CI 0.97-1.03x")
    inconclusive = decide([1.03] * 10, [1.0] * 10, 0.05, 0.005, 0.02, "a/b")
    assert inconclusive.status == "inconclusive" and inconclusive.high > 1.05
