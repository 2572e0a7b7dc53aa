"""Combinations a test can never run (a Relax module under prim, a PrimFunc under a VM)
are not generated once the baselines tell the workload's kind; one summary line says so."""

from __future__ import annotations

from pytest_tvmperf.never_run import LeftOut, never_runs, recorded_kinds, without_combo

BOTH_KINDS = """
from pytest_tvmperf import workloads

def test_relax(tvmperf):
    tvmperf.check(workloads.mlp(batch=1))

def test_prim(tvmperf):
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


def test_never_run_combinations_are_left_out_after_recording(project):
    project.pytester.makepyfile(test_perf=BOTH_KINDS)
    first = project.run("--tvmperf-update", "-rs")
    first.assert_outcomes(passed=3, skipped=3)  # before any baseline, every combination is generated

    again = project.run("-v")
    again.assert_outcomes(passed=3)
    out = again.stdout.str()
    assert "test_relax[llvm-prim]" not in out and "test_prim[llvm-vm-bytecode]" not in out
    again.stdout.fnmatch_lines(
        [
            "*test_relax[[]llvm-vm-bytecode[]] PASSED*",
            "*test_prim[[]llvm-prim[]] PASSED*",
            "tvmperf: not generated, as they can never run: 1 Relax test id(s) under prim and "
            "2 PrimFunc test id(s) under a VM executor (*)",
        ]
    )
    # the test ids, the baselines' keys, are those recorded
    assert set(project.baselines()["tests"]) == {
        "test_relax[llvm-vm-bytecode]",
        "test_relax[llvm-vm-compiled]",
        "test_prim[llvm-prim]",
    }
    assert "no test used" not in out  # nothing reads as unused


def test_kinds_from_recorded_executors():
    kinds = recorded_kinds(
        {
            "test_a[llvm-vm-bytecode-tuned]": "vm-bytecode",
            "test_a[llvm-vm-compiled-tuned]": "vm-compiled",
            "test_b[llvm-prim]": "prim",
            "test_c[llvm-prim]": "prim",
            "test_c[llvm-vm-bytecode]": "vm-bytecode",
        }
    )
    assert kinds == {"test_a[-tuned]": {"relax"}, "test_b[]": {"prim"}, "test_c[]": {"relax", "prim"}}
    assert without_combo("test_a[llvm-vm-bytecode-tuned]") == "test_a[-tuned]"
    assert never_runs("prim", kinds["test_a[-tuned]"]) and not never_runs("vm-compiled", kinds["test_a[-tuned]"])
    assert never_runs("vm-bytecode", kinds["test_b[]"]) and not never_runs("prim", kinds["test_b[]"])
    assert not any(never_runs(e, kinds["test_c[]"]) for e in ("prim", "vm-bytecode"))  # mixed: keep everything
    assert not never_runs("prim", frozenset())  # nothing recorded yet
    assert LeftOut().line() == ""
