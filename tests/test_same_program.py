"""An unchanged program is not timed against its baseline (--tvmperf-same-program,
default skip): the same code timed twice in one process measured 1.24x apart (CI, the
tuned DLA conv), which is where it landed in memory, not a regression."""

from __future__ import annotations

import json

TESTS = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.rgb2yuv(schedule=os.environ.get("SCHEDULE", "default"), width=64, height=32))
"""


def _default(project):
    project.monkeypatch.delenv("TVMPERF_SAME_PROGRAM", raising=False)


def test_an_unchanged_program_passes_untimed_against_its_baseline_and_says_so(project):
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "2")  # the same code "measured" 2x slower: placement, not code
    result = project.run("-rA", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*same program, not timed against it*pass*"])
    assert "a/b, baseline rebuilt here" not in result.stdout.str()
    assert "regressed" not in result.stdout.str()


LOGGING_TIMER = '''
import json


@pytest.fixture
def tvmperf_timer(tvmperf_timer):
    """The project's fake timer, logging what each measurement was asked to time."""
    def timer(task, rounds):
        with open(os.environ["TIMER_LOG"], "a") as log:
            log.write(json.dumps({"rounds": rounds, "reference": task.reference is not None,
                                  "baseline": task.baseline is not None}) + "\\n")
        return tvmperf_timer(task, rounds)
    return timer
'''


def test_an_unchanged_program_is_timed_for_the_record_only_without_the_reference_kernel(project):
    """Nothing timed decides a same-program pass, so it costs the first look's rounds of
    today's build alone: no reference kernel is compiled or timed, and no look is judged
    (issue 36: what buys no evidence is taken out); a program timed side by side keeps both."""
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS + LOGGING_TIMER)  # the test file's fixture wins over conftest's
    log = project.pytester.path / "timer.jsonl"
    project.set_env("TIMER_LOG", str(log))
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    recorded = [json.loads(line) for line in log.read_text().splitlines()]
    assert recorded == [{"rounds": 15, "reference": True, "baseline": False}]
    log.unlink()
    result = project.run("-rA", "--tvmperf-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_a[[]llvm-prim[]]*same program, not timed against it*pass*"])
    gated = [json.loads(line) for line in log.read_text().splitlines()]
    assert gated == [{"rounds": 6, "reference": False, "baseline": False}]
    time = json.loads((project.pytester.path / "out.json").read_text())["tests"][0]["time"]
    assert len(time["samples_s"]) == 6 and time["median_s"] > 0
    log.unlink()
    project.run("--tvmperf-same-program=time").assert_outcomes(passed=1)  # timed side by side: all of it
    side_by_side = [json.loads(line) for line in log.read_text().splitlines()]
    assert side_by_side[0] == {"rounds": 6, "reference": True, "baseline": True}


def test_same_program_time_times_it_side_by_side_all_the_same(project):
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    result = project.run("--tvmperf-same-program=time")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a/b ratio 2.0*", "*compared: a/b, baseline rebuilt here*"])
    project.set_env("TVMPERF_SAME_PROGRAM", "time")  # the environment variable does the same
    project.run().assert_outcomes(failed=1)
    project.pytester.makeini("[pytest]\ntvmperf_same_program = time\n")  # and the ini key
    _default(project)
    project.run().assert_outcomes(failed=1)


def test_a_changed_program_is_timed_side_by_side(project):
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    project.set_env("SCHEDULE", "parallel")  # another program: timed against the baseline's, and slower
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    result = project.run()
    result.stdout.fnmatch_lines(["*compared: a/b, baseline rebuilt here*"])
    assert "same program" not in result.stdout.str()


def test_a_baseline_of_another_tvm_version_is_timed_side_by_side(project):
    """Another TVM may generate other code from the same IR: not the same program."""
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    data = project.baselines()
    for entry in data["tests"].values():
        entry["tvm_version"] = "0.26.0"
    project.baseline_file().write_text(json.dumps(data))
    project.set_env("TVMPERF_FAKE_SCALE", "2")
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*compared: a/b, baseline rebuilt here*"])


def test_a_bad_same_program_value_is_a_usage_error_naming_the_choices(project):
    project.pytester.makepyfile(test_perf=TESTS)
    result = project.run("--tvmperf-same-program=sometimes")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*sometimes*not a same-program mode*skip*time*"])


def test_same_program_knows_a_baseline_ir_of_either_form_and_refuses_other_versions():
    """The IR of a baseline recorded before weights were stored apart holds them inline:
    the same program in either form; another TVM version or another program is not."""
    import hashlib
    from dataclasses import dataclass

    import tvm

    from pytest_tvmperf import workloads
    from pytest_tvmperf.builder import executor_choice, targets
    from pytest_tvmperf.builder.rebuild import lowered_module
    from pytest_tvmperf.check.sources import same_program
    from pytest_tvmperf.store import lowered_ir
    from pytest_tvmperf.values.record import IRRef, WeightRef

    @dataclass
    class Entry:
        ir: IRRef
        tvm_version: str = tvm.__version__

    compiled = executor_choice.get_executor("vm-bytecode").compile(
        workloads.mlp(batch=1), targets.resolve_target("llvm")
    )
    module = lowered_module(compiled)
    data, weights = lowered_ir.encode_split(module)
    assert weights  # the MLP's weights are large enough to be stored apart
    split = IRRef(
        "ir.json.gz",
        hashlib.sha256(data).hexdigest(),
        tuple(WeightRef(w.node, f"{w.node}.npy.gz", w.sha256) for w in weights),
    )
    inline = IRRef("ir.json.gz", hashlib.sha256(lowered_ir.encode(module)).hexdigest())
    assert same_program(compiled, Entry(split)) and same_program(compiled, Entry(inline))
    assert not same_program(compiled, Entry(split, tvm_version="0.26.0"))
    assert not same_program(compiled, Entry(IRRef("ir.json.gz", split.sha256)))  # its weights missing
    other = IRRef("ir.json.gz", split.sha256, split.weights[:-1] + (WeightRef(split.weights[-1].node, "x", "0" * 64),))
    assert not same_program(compiled, Entry(other))  # one weight differs


def test_a_damaged_ir_file_fails_an_unchanged_program_too(project):
    """The IR is not needed to time the same program, but it is the baseline's: a missing
    or damaged file still fails the test naming the file and the field."""
    _default(project)
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    (entry,) = project.baselines()["tests"].values()
    path = project.pytester.path / "baselines" / entry["ir"]["path"]
    path.write_bytes(path.read_bytes()[:100])
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baseline IR * (named by field ir.path of entry *) does not match field ir.sha256*"])
