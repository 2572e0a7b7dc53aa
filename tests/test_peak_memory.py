"""Peak memory of one call (issue 48), as a user runs pytest: a Relax model whose one call
holds a larger intermediate fails on peak_bytes, read in the isolation child, with timing
and the simulated cost off (its run-time allocations and code size left out, so the
peak alone fails it); on the host, device_peak_bytes is n/a with the reason."""

from __future__ import annotations

import json

from chain_workload import CHAIN_WORKLOAD

TESTS = (
    CHAIN_WORKLOAD
    + """
@pytest.mark.tvmperf(executors=["vm-bytecode"], timing=False, code="off", alloc_bytes="off")
def test_chain(tvmperf):
    # at n = 64, a hidden layer of 4096 holds 1 MiB during the call, one of 16 holds 4 KiB
    tvmperf.check(chain(int(os.environ.get("CHAIN_HIDDEN", "16")), n=64, tol=1e-3))
"""
)


def test_a_larger_intermediate_fails_on_peak_bytes(project):
    project.pytester.makepyfile(test_perf=TESTS)
    project.run("--tvmperf-update").assert_outcomes(passed=1)
    exact = project.baselines()["tests"]["test_chain[llvm-vm-bytecode]"]["exact"]
    assert 0 <= exact["peak_bytes"] < 256 * 1024  # a 4 KiB intermediate: under the noise floor
    assert exact["device_peak_bytes"] is None
    assert exact["not_measured"]["device_peak_bytes"] == "the target runs on the host: its memory is peak_bytes"

    project.set_env("CHAIN_HIDDEN", "4096")  # a 1 MiB intermediate, the same instructions and calls
    changed = project.run("--tvmperf-json=results.json")
    changed.assert_outcomes(failed=1)
    out = changed.stdout.str()
    assert "tvmperf: peak_bytes regressed against the baseline" in out
    changed.stdout.fnmatch_lines(
        ["*peak_bytes * B -> * B (+* B, limit +10%, growth up to 256 KiB passes, at most * B)*"]
    )
    (entry,) = json.loads((project.pytester.path / "results.json").read_text())["tests"]
    assert entry["failed"] == ["peak_bytes"]
    assert entry["record"]["exact"]["peak_bytes"] >= 1024 * 1024  # the intermediate was resident during the call
