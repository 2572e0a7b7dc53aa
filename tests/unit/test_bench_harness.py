"""benchmarks/_harness.verdicts reads the summary table's rows, and only them: the lines
printed after the rows (a changed program's compile_s, notes) are not tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "_harness.py"


def _verdicts():
    spec = importlib.util.spec_from_file_location("bench_harness", HARNESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.verdicts


OUTPUT = """\
------------------------------- tvmperf summary --------------------------------
test                        executor     target  median   baseline  ratio [CI]         verdict
test_reduction[llvm-prim]   prim         llvm    2.78 ms  2.47 ms   1.13x [1.08-1.19]  regressed (cpu_instructions, time)
test_rgb2yuv[llvm-prim]     prim         llvm    549 us   515 us    1.06x [0.94-1.12]  inconclusive
test_mlp[llvm-vm-bytecode]  vm-bytecode  llvm    24.5 ms  21.7 ms   1.01x [0.97-1.05]  pass
compile_s test_reduction[llvm-prim]: 0.0122 s -> 0.0123 s (1.01x of the medians side by side, limit +25%): pass
compile_s test_mlp[llvm-vm-bytecode]: 0.0929 s -> 0.0974 s (1.05x of the medians side by side, limit +25%): pass
median, baseline: rows marked a/b show this run's medians side by side
=========================== short test summary info ============================
"""


def test_the_rows_are_read_and_the_compile_lines_after_them_are_not():
    assert _verdicts()(OUTPUT) == {
        "test_reduction[llvm-prim]": "regressed",
        "test_rgb2yuv[llvm-prim]": "inconclusive",
        "test_mlp[llvm-vm-bytecode]": "pass",
    }
