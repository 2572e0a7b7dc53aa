"""Bad input gets a clear error naming what is wrong and how to fix it."""

from __future__ import annotations

import fnmatch

import pytest

MULTIPLY_TEST = """
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--tvmperf-executors=vm-bytecode,graph"],
            "*unknown executor 'graph'; choose from vm-bytecode, vm-compiled, prim*",
        ),
        (["--tvmperf-targets=llvm,opencl"], "*unknown target 'opencl'; choose from llvm, cuda*"),
        (
            ["--tvmperf-threshold=time=fast"],
            "*bad threshold time='fast': write a percentage or a ratio, e.g. time=25% "
            "or time=1.25x; or time=off to stop gating it",
        ),
        (
            ["--tvmperf-threshold=instructions=x"],
            "*bad threshold instructions='x': write an allowed increase or a "
            "percentage, e.g. instructions=0 (no increase), instructions=2 or "
            "instructions=5%; or instructions=off to stop gating it",
        ),
        (["--tvmperf-threshold=latency=5%"], "*unknown metric 'latency'*"),
        (["--tvmperf-threshold=instructions"], "*expected METRIC=LIMIT*"),
        (["--tvmperf-repeat=0"], "*expected a positive integer*"),
        (["--tvmperf-threshold=instructions=1e400"], "*bad threshold instructions='1e400'*"),  # inf
        (["--tvmperf-threshold=time=1e400%"], "*bad threshold time='1e400%'*"),
        # issue 23: an OverflowError (a traceback) once a device was waited for
        (
            ["--tvmperf-rpc-timeout=99999999999"],
            "*argument --tvmperf-rpc-timeout: expected * from 1 to *, got '99999999999'",
        ),
        # issue 23: accepted, and TVM ignored a value past 32 bits
        (
            ["--tvmperf-min-repeat-ms=3000000000"],
            "*argument --tvmperf-min-repeat-ms: expected * from 1 to *, got '3000000000'",
        ),
        # issue 26: one vocabulary for every on/off option, listed in the error
        (
            ["--tvmperf-timing=of"],
            "*argument --tvmperf-timing: expected on or off (also true/false, yes/no, 1/0), got 'of'",
        ),
        (
            ["--tvmperf-confirm=perhaps"],
            "*argument --tvmperf-confirm: expected on or off (also true/false, yes/no, 1/0), got 'perhaps'",
        ),
        (
            ["--tvmperf-simulate=sometimes"],
            "*argument --tvmperf-simulate: expected on or off (also true/false, yes/no, 1/0), got 'sometimes'",
        ),
    ],
)
def test_bad_command_line_is_a_usage_error(project, args, message):
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    result = project.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


@pytest.mark.parametrize(
    "ini, message",
    [
        ("tvmperf_executors = vm-graph", "*ini option tvmperf_executors = 'vm-graph': unknown executor 'vm-graph'*"),
        ("tvmperf_threshold = time=-5%", "*ini option tvmperf_threshold = 'time=-5%': bad threshold*"),
        (
            "tvmperf_timing = of",
            "*ini option tvmperf_timing = 'of': expected on or off (also true/false, yes/no, 1/0)*",
        ),
        ("tvmperf_simulate = sometimes", "*ini option tvmperf_simulate = 'sometimes': expected on or off (also*"),
        (
            "tvmperf_min_repeat_ms = 3000000000",
            "*ini option tvmperf_min_repeat_ms = '3000000000': expected * from 1 to *",
        ),
    ],
)
def test_bad_ini_is_a_usage_error(project, ini, message):
    project.pytester.makeini(f"[pytest]\n{ini}\n")
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


@pytest.mark.parametrize(
    "marker, message",
    [
        ('time="soon"', "*test_a*@pytest.mark.tvmperf: bad threshold time='soon'*"),
        ('executors=["tensorrt"]', "*test_a*unknown executor 'tensorrt'*"),
        ('speed="5%"', "*test_a: unknown @pytest.mark.tvmperf keyword(s) speed*"),
        (
            'time="5"',
            "test_perf.py::test_a: @pytest.mark.tvmperf: bad threshold time='5': write a percentage or a "
            "ratio, e.g. time=25% or time=1.25x; or time=off to stop gating it",
        ),
        (
            'timing="of"',
            "test_perf.py::test_a: @pytest.mark.tvmperf: timing='of': expected on or off (also "
            "true/false, yes/no, 1/0), got 'of'",
        ),
        (
            'simulate="sometimes"',
            "test_perf.py::test_a: @pytest.mark.tvmperf: simulate='sometimes': expected on or "
            "off (also true/false, yes/no, 1/0), got 'sometimes'",
        ),
        ('executors="vm-graph"', "*test_a: @pytest.mark.tvmperf: executors='vm-graph': unknown executor 'vm-graph'*"),
        ('"5%"', "*test_a: @pytest.mark.tvmperf takes keywords only*"),
        # issue 66: values of the wrong type, once a plugin traceback at collection
        (
            "executors=None",
            "*test_a: @pytest.mark.tvmperf: executors=None: None (of type NoneType): executors "
            "takes a name or a list of names (strings), e.g. executors=?'prim'?*",
        ),
        ("executors=5", "*test_a: @pytest.mark.tvmperf: executors=5: 5 (of type int): executors takes a name*"),
        ("resources=5", "*test_a: @pytest.mark.tvmperf: resources=5: 5 (of type int): resources takes a name*"),
        ('targets=["llvm", 3]', "*test_a: @pytest.mark.tvmperf: targets=?'llvm', 3?: 3 (of type int): targets takes*"),
        ("timing=None", "*test_a: @pytest.mark.tvmperf: timing=None: a value of type NoneType: timing takes a string*"),
        ("time_budget=[60]", "*test_a: @pytest.mark.tvmperf: time_budget=[[]60[]]: a value of type list*"),
    ],
)
def test_bad_marker_is_an_error_at_collection(project, marker, message):
    project.pytester.makepyfile(
        test_perf=f"""
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf({marker})
def test_a(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""
    )
    result = project.run()
    assert result.ret != pytest.ExitCode.OK
    combined = "\n".join(result.stdout.lines + result.stderr.lines)
    # issue 26: a usage error, the message alone, not under ~20 lines of pytest's and pluggy's frames
    assert result.ret == pytest.ExitCode.USAGE_ERROR, combined
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert len(errors) == 1, combined
    assert fnmatch.fnmatch(errors[0], message) or fnmatch.fnmatch(errors[0], "ERROR: " + message), combined
    assert "_hooks.py" not in combined and "Traceback" not in combined


@pytest.mark.parametrize(
    "content, message",
    [
        (
            "{not json",
            "*baseline file *test_perf.json is not valid JSON (*line 1*); delete * and run `pytest --tvmperf-update`*",
        ),
        ('{"schema_version": 1, "tests": {"test_a[llvm-prim]": {"workload": "x"', "*is not valid JSON*"),  # truncated
        ('{"tests": []}', "*is not a pytest-tvmperf baseline*"),
        (
            '{"schema_version": 99, "tests": {}}',
            "*has schema version 99, this pytest-tvmperf reads version 1; re-record it*",
        ),
        ('{"schema_version": true, "tests": {}}', "*has schema version true, this pytest-tvmperf reads version 1*"),
        (
            '{"schema_version": 1, "tests": {"test_a[llvm-prim]": {"workload": "x"}}}',
            "*entry 'test_a[[]llvm-prim[]]' is malformed*",
        ),
    ],
)
def test_bad_baseline_file_fails_with_the_fix(project, content, message):
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    path = project.baseline_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message])
    assert path.read_text() == content  # nothing was overwritten


def test_truncated_real_baseline_is_reported_and_kept(project):
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    path = project.baseline_file()
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    result = project.run("--tvmperf-update")  # even an update refuses to clobber it
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*baseline file *test_perf.json is not valid JSON*"])
    assert path.read_text() == text[: len(text) // 2]


NAN_TEST = """
import numpy as np
import pytest
from tvm import te
from pytest_tvmperf import Workload

def sqrt_workload():
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: te.sqrt(a[i]), name="B")
    return Workload(
        name="sqrt",
        program=te.create_prim_func([a, b]),
        make_inputs=lambda rng, dims: [-np.ones(16, dtype="float32")],
        reference=lambda x: np.zeros_like(x),
    )

@pytest.mark.tvmperf(executors=["prim"])
def test_nan(tvmperf):
    tvmperf.check(sqrt_workload())
"""


def test_nan_output_fails_clearly(project):
    project.pytester.makepyfile(test_perf=NAN_TEST)
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: sqrt on llvm/prim does not match its NumPy reference*",
            "*output 0: 16 NaN of 16 values (first at (0,))*",
        ]
    )
    assert not project.baseline_file().exists()


def test_wrong_output_reports_error_and_where(project):
    project.pytester.makepyfile(
        test_perf=NAN_TEST.replace("-np.ones", "np.full_like(np.ones(16), 4, dtype='float32') * np.ones").replace(
            "np.zeros_like(x)", "np.where(np.arange(16) == 5, 3.0, 2.0).astype('float32')"
        )
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*output 0: 1 of 16 values differ from the reference beyond rtol=1e-05, atol=1e-05*",
            "*max abs error 1, max rel error 0.333333*",
            "*worst at (5,): got 2, expected 3*",
            "*tolerance rtol=1e-05, atol=1e-05 (|got - expected| <= atol + rtol * |expected|, against the NumPy reference); "
            "to change it: Workload(..., rtol=..., atol=...)*",
        ]
    )


def test_compile_error_is_shortened_into_the_failure(project):
    project.pytester.makepyfile(
        test_perf="""
import numpy as np
import pytest
from tvm import s_tir, te
from pytest_tvmperf import Workload

def gpu_only():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    sch = s_tir.Schedule(te.create_prim_func([a, b]))
    (i,) = sch.get_loops(sch.get_sblock("B"))
    sch.bind(i, "threadIdx.x")   # a GPU binding cannot be built for llvm
    return Workload(name="gpu_only", program=sch.mod["main"],
                    make_inputs=lambda rng, dims: [np.ones(64, "float32")], reference=lambda x: x * 2)

@pytest.mark.tvmperf(executors=["prim"])
def test_bad(tvmperf):
    tvmperf.check(gpu_only())
"""
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tvmperf: compiling gpu_only on llvm/prim failed:*", "*Error*"])
    assert "function.pxi" not in result.stdout.str()  # the traceback frames are cut


def test_symbolic_dims_are_checked_on_hypothesis_shapes(project):
    project.pytester.makepyfile(
        test_perf="""
import pytest
from pytest_tvmperf import workloads
from dataclasses import replace

def wrong_on_tall_shapes():
    w = workloads.multiply(m=8, n=8)
    return replace(w, reference=lambda x, y: x * y if x.shape[0] < 20 else x * y + 1)

@pytest.mark.tvmperf(executors=["prim"])
def test_mul(tvmperf):
    tvmperf.check(wrong_on_tall_shapes())
"""
    )
    result = project.run("--tvmperf-update", "--tvmperf-hypothesis-examples=30")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*multiply() on llvm/prim does not match its NumPy reference on a Hypothesis-drawn shape*",
            "*output 0 (dims {'m': 20, 'n': *}, seed *): * values differ*",
        ]
    )
    # printed once in the failure (no Hypothesis report beside it); the short summary below may repeat
    # the message in full (pytest does not shorten it where $CI is set), so count above it only
    failure = result.stdout.str().split("short test summary info")[0]
    assert failure.count("values differ") == 1, result.stdout.str()


def test_prim_workload_under_vm_is_skipped_with_reason(project):
    project.pytester.makepyfile(
        test_perf="""
from pytest_tvmperf import workloads

def test_mul(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""
    )
    result = project.run("-rs", "--tvmperf-update")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*executor vm-bytecode runs Relax IRModules; multiply() is a TE/TIR PrimFunc*"])


def test_cuda_without_gpu_or_nvcc_is_skipped_with_reason(project, tmp_path):
    import tvm

    if tvm.cuda(0).exist:
        pytest.skip("this machine has a GPU")
    project.set_env("PATH", str(tmp_path))  # no nvcc, no ptxas (built-only cuda needs them)
    project.set_env("CUDA_HOME", str(tmp_path / "no-cuda"))
    # nor NVIDIA's wheels (CI installs them where the machine has no nvcc on its PATH)
    project.monkeypatch.setattr("pytest_tvmperf.builder.cuda_toolchain._wheel_bins", lambda: [])
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    result = project.run("-rs", "--tvmperf-targets=cuda")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*target cuda: no GPU on this machine, and nvcc and ptxas are not installed "
            "(install the CUDA toolkit (nvcc, ptxas) or pip install 'pytest-tvmperf[[]cuda[]]')*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_no_combination_left_is_skipped_with_reason(project):
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    result = project.run("-rs", "--tvmperf-executors=vm-bytecode")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no executor x target left: the test allows executors [[]'prim'[]]*"])


def test_bad_workload_definition_names_the_problem():
    from pytest_tvmperf import Workload, WorkloadError, workloads

    mlp = workloads.mlp()
    with pytest.raises(WorkloadError, match="entry 'main' not in the module"):
        Workload(name="x", program=mlp.program, make_inputs=mlp.make_inputs, reference=mlp.reference)
    with pytest.raises(WorkloadError, match="program must be a Relax IRModule or a TE/TIR PrimFunc, got str"):
        Workload(name="x", program="not a program", make_inputs=mlp.make_inputs, reference=mlp.reference)
    with pytest.raises(WorkloadError, match="dims needs a value"):
        Workload(
            name="x",
            program=mlp.program,
            entry="forward",
            make_inputs=mlp.make_inputs,
            reference=mlp.reference,
            dim_ranges={"n": (1, 4)},
        )
    with pytest.raises(ValueError, match="choose from default, parallel"):
        workloads.rgb2yuv(schedule="fast")


def test_help_lists_every_option(project):
    result = project.run("--help")
    assert result.ret == 0
    for option in (
        "--tvmperf-executors",
        "--tvmperf-targets",
        "--tvmperf-update",
        "--tvmperf-baselines",
        "--tvmperf-threshold",
        "--tvmperf-repeat",
        "--tvmperf-alpha",
        "--tvmperf-inconclusive",
        "--tvmperf-other-machine",
        "--tvmperf-confirm",
        "--tvmperf-noise",
        "--tvmperf-artifacts",
    ):
        assert option in result.stdout.str(), option
    result.stdout.fnmatch_lines(["*'time=25%,instructions=0'. Metrics: time, instructions,*"])


# ---------------------------------------------------------------- entries checked field by field


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda e: e.update(exact={}), "exact.instructions"),
        (lambda e: e["exact"].pop("kernels"), "exact.kernels"),
        (lambda e: e["exact"].update(kernels="1"), "exact.kernels"),
        (lambda e: e["exact"].update(instructions="17"), "exact.instructions"),
        # issue 23: a null metric read as "n/a" and the gate passed with 1/- and no note
        (lambda e: e["exact"].update(kernels=None), "exact.kernels"),
        (lambda e: e["exact"].update(instructions={"main": 3}), "exact.instructions"),  # prim measures none
        # issue 23: the test id says prim; the edited entry made the test vanish from collection
        (lambda e: e.update(executor="vm-bytecode"), "executor"),
        (lambda e: e["target"].update(kind="cuda"), "target.kind"),
    ],
    ids=[
        "exact empty",
        "kernels missing",
        "kernels text",
        "instructions text",
        "kernels null",
        "instructions where none",
        "executor edited",
        "target kind edited",
    ],
)
def test_an_entry_with_a_missing_or_mistyped_field_fails_naming_file_test_and_field(project, edit, field):
    import json

    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    data = project.baselines()
    edit(data["tests"]["test_a[llvm-prim]"])
    project.baseline_file().write_text(json.dumps(data))
    result = project.run()  # the gate was switched off silently before (exit 0)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*baseline file *test_perf.json: entry 'test_a[[]llvm-prim[]]' is malformed: "
            f"field {field}: *; fix that field, or delete the entry and re-record it*"
        ]
    )


@pytest.mark.parametrize("number", ["9" * 5000, "9" * 400])
def test_a_huge_number_in_a_baseline_fails_naming_file_test_and_field(project, number):
    """issue 23: 5000 digits were an INTERNALERROR (Python's int() refuses them), naming no file."""
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    text = project.baseline_file().read_text()
    assert '"kernels": 1,' in text
    project.baseline_file().write_text(text.replace('"kernels": 1,', f'"kernels": {number},'))
    result = project.run()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*baseline file *test_perf.json: entry 'test_a[[]llvm-prim[]]' is malformed: "
            f"field exact.kernels: a whole number of {len(number)} digits*; fix that field*"
        ]
    )


def test_a_huge_number_in_the_history_file_is_a_usage_error_naming_file_line_and_field(project, tmp_path):
    """issue 23: result/entry.py caught only JSONDecodeError: a 5000-digit whole number in
    a --tvmperf-history file was Python's int() error, naming no file."""
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    history = tmp_path / "history.jsonl"
    history.write_text(
        '{"schema_version": 1, "kind": "pytest-tvmperf-history", "created": "x", "tests": {}}\n'
        '{"schema_version": 1, "kind": "pytest-tvmperf-history", "created": "x", "tests": {"t": '
        '{"median_s": ' + "9" * 5000 + ', "verdict": "pass"}}}\n'
    )
    result = project.run(f"--tvmperf-history={history}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*history file {history}, line 2: field tests.t.median_s: a whole number of 5000 "
            f"digits*; remove that line (the other runs are kept)*"
        ]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_fifo_at_the_baseline_path_fails_instead_of_hanging(project):
    import os

    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    (project.pytester.path / "baselines").mkdir()
    os.mkfifo(project.baseline_file())
    # a subprocess with a time limit: before the fix, the read blocked forever
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*baseline file *test_perf.json cannot be read (it is a FIFO (named pipe), not a regular file)*"]
    )


WEIGHTS_TEST = """
import numpy as np
import pytest
from tvm.script import ir as I, relax as R
from pytest_tvmperf import Workload

@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((1, 4), "float32"), w: R.Tensor((4, 4), "float32"), b: R.Tensor((4,), "float32")):
        return R.add(R.matmul(x, w), b)

@pytest.mark.tvmperf(executors=["vm-bytecode"])
def test_dense(tvmperf):
    tvmperf.check(Workload(name="dense", program=Dense, make_inputs=lambda rng, dims: [np.ones((1, 4), "float32")],
                           reference=lambda x: x @ np.ones((4, 4), "float32")))   # params= forgotten
"""


def test_forgotten_params_name_the_missing_weights(project):
    project.pytester.makepyfile(test_perf=WEIGHTS_TEST)
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: dense on llvm/vm-bytecode: workload dense: its entry function 'main' takes 3 argument(s) (x, w, b), "
            "but it is given 1 input(s) from make_inputs and 0 weight(s) from params: the weights w, b are missing. "
            "Pass them after the inputs, in this order, as Workload(params=[[]('w', array), ...[]])*",
        ]
    )
    assert "arguments were provided" not in result.stdout.str()


def test_a_prim_reference_of_another_shape_is_a_wrong_output_in_the_summary(project):
    project.pytester.makepyfile(
        test_perf=NAN_TEST.replace("reference=lambda x: np.zeros_like(x)", "reference=lambda x: np.zeros(8, 'float32')")
    )
    result = project.run("--tvmperf-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: sqrt on llvm/prim does not match its NumPy reference*",
            "*output 0 (B): shape (16,) float32, the reference has shape (8,) float32*",
            "*test_nan[[]llvm-prim[]]*wrong*",
        ]
    )
    assert "Invalid B.shape" not in result.stdout.str()


def test_a_file_that_cannot_be_written_is_not_counted_as_written(project):
    project.pytester.makepyfile(
        test_perf=MULTIPLY_TEST
        + """
from pathlib import Path

def test_z_spoils_the_file():
    Path("baselines").mkdir(exist_ok=True)
    Path("baselines/test_perf.json").write_text("{broken")
"""
    )
    result = project.run("--tvmperf-update")
    result.stdout.fnmatch_lines(
        [
            "*tvmperf: baselines not written to *test_perf.json (1 test(s)): baseline file * is not valid JSON*",
            "*baselines written for 0 test(s) under *; NOT written for 1 test(s) (see above)*",
        ]
    )
    assert "baselines written for 1 test(s)" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_files_are_written_with_the_umask_and_no_lock_lands_among_them(project, tmp_path):
    import os
    import stat

    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    old = os.umask(0o022)
    try:
        result = project.run(
            "--tvmperf-update", f"--tvmperf-json={tmp_path / 'r.json'}", f"--tvmperf-html={tmp_path / 'r.html'}"
        )
    finally:
        os.umask(old)
    result.assert_outcomes(passed=1)
    written = [p for p in (project.pytester.path / "baselines").rglob("*") if p.is_file()]
    assert sorted(p.suffix for p in written) == [".gz", ".json"]  # the IR; no .tvmperf.lock among the baselines
    for path in [*written, tmp_path / "r.json", tmp_path / "r.html"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_the_printed_accept_command_runs_as_printed(project):
    import shlex

    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    result = project.run("--tvmperf-baselines=perf-baselines")
    result.assert_outcomes(failed=1)
    line = next(l for l in result.stdout.lines if "create it with: " in l)
    command = line.split("create it with: ", 1)[1].strip()
    assert command == "pytest --tvmperf-update --tvmperf-baselines=perf-baselines 'test_perf.py::test_a[llvm-prim]'"
    argv = shlex.split(command)
    assert argv[0] == "pytest"
    project.run(*argv[1:]).assert_outcomes(passed=1)
    assert (project.pytester.path / "perf-baselines" / "test_perf.json").exists()
    project.run("--tvmperf-baselines=perf-baselines").assert_outcomes(passed=1)


@pytest.mark.parametrize("value", ["../x", "/tmp/tvmperf-artifacts-elsewhere", "artifacts/../../y"])
def test_an_artifact_directory_outside_the_baselines_is_a_usage_error(project, value):
    """Issue 23 §2: --tvmperf-update --tvmperf-artifacts=../x exited 0 but wrote an ir.path that
    the next run rejected for every test of the module."""
    project.pytester.makepyfile(test_perf=MULTIPLY_TEST)
    result = project.run("--tvmperf-update", f"--tvmperf-artifacts={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the artifact directory must be inside the baseline directory" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()
    assert not project.baseline_file().exists()


def test_a_test_whose_workload_no_longer_runs_under_its_entries_executors_fails_naming_them(project):
    """issue 66 case 3: a test recorded as a Relax MLP whose workload became a PrimFunc (computing
    something else) ran nothing: its VM combinations skipped (its prim one is not generated: its
    entries are Relax, never_run.py), and the run passed. A combination with a baseline entry that
    can no longer run fails, naming the entry and the re-record that generates every combination."""
    project.pytester.makepyfile(
        test_perf="""
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["vm-bytecode", "prim"])
def test_k(tvmperf):
    if os.environ.get("AS_PRIM") == "1":
        tvmperf.check(workloads.multiply(m=8, n=8))
    else:
        tvmperf.check(workloads.mlp(batch=1))
"""
    )
    recorded = project.run("--tvmperf-update", "-rs")
    recorded.assert_outcomes(passed=1, skipped=1)  # the MLP under the VM; prim runs no Relax model
    project.set_env("AS_PRIM", "1")
    result = project.run("-rs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_k[[]llvm-vm-bytecode[]]: baselines/test_perf.json holds a baseline of this test under vm-bytecode, "
            "but the workload no longer runs there (*); skipped, the test would leave the gate silently*"
        ]
    )
