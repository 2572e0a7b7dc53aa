"""Per-kernel counts a run could not measure (issue 23): an update keeps the stored ones
(as a timing-off run keeps the timings), and a gate whose measuring tool died while
measuring a test fails that test's counts with the reason instead of passing ungated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_tvmperf.measure.kernel_metrics import KEPT_LINE, Collected, keep_unmeasured
from pytest_tvmperf.values.exact_metrics import ExactMetrics

if TYPE_CHECKING:
    from pytest_tvmperf.runner import Tvmperf


def settle(t: "Tvmperf", exact: ExactMetrics, collected: Collected) -> ExactMetrics:
    """``exact`` of test ``t`` as it is recorded or gated, given what the sources did not measure."""
    __tracebackhide__ = True
    if not collected.missing:
        return exact
    baseline = t.stored_baselines().get(t.test_id)
    stored = {} if baseline is None else baseline.exact.per_kernel
    if t.session.settings.update:
        exact, kept = keep_unmeasured(exact, None if baseline is None else baseline.exact, collected.missing)
        if kept:
            t.session.report.not_measured.add(KEPT_LINE.format(metrics=", ".join(kept)))
        return exact
    lost = [m for m in collected.died if m in stored]
    if lost:
        from pytest_tvmperf.values.node_ids import display_path

        why = collected.died[lost[0]]
        t.fail("error", f"tvmperf: {t.nodeid}: {', '.join(lost)} could not be measured: {why}. The baseline in "
                        f"{display_path(t.baseline_file, t.session.rootpath)} has them, so the test fails rather "
                        f"than pass with them ungated; run it again")
    return exact
