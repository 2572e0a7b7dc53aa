"""TVM's thread-pool spin, bounded for a tvmperf run (measure/threads.py): TVM's default
(300,000 sched_yield calls after each parallel task) kept a process alive for 20 minutes
after its last test on a busy machine, and flagged an idle one busy. The user's own value
is kept, and the variable is put back as it was at the run's end."""

from __future__ import annotations

import os

from pytest_tvmperf.measure.threads import POOL_SPIN_ENV

SEEN = """
import os
import pytest
from pytest_tvmperf import workloads

@pytest.mark.tvmperf(executors=["prim"])
def test_seen(tvmperf):
    print("spin seen:", os.environ.get("TVM_THREAD_POOL_SPIN_COUNT", "unset"))
    tvmperf.check(workloads.multiply(m=8, n=8))
"""


def test_a_tvmperf_run_bounds_the_pool_spin_and_puts_it_back(project):
    project.monkeypatch.delenv(POOL_SPIN_ENV, raising=False)
    project.pytester.makepyfile(test_perf=SEEN)
    result = project.run("-s", "--tvmperf-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*spin seen: 1000*"])
    assert POOL_SPIN_ENV not in os.environ  # the run's end put it back


def test_the_users_own_pool_spin_is_kept(project):
    project.set_env(POOL_SPIN_ENV, "300000")
    project.pytester.makepyfile(test_perf=SEEN)
    result = project.run("-s", "--tvmperf-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*spin seen: 300000*"])
    assert os.environ[POOL_SPIN_ENV] == "300000"
