"""Per-kernel counts a run could not measure: an update keeps the stored ones
(as a timing-off run keeps the timings), and a gate whose measuring tool died while
measuring a test fails that test's counts with the reason instead of passing ungated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from pytest_tvmperf.measure.metric_sources import KEPT_LINE, Collected, keep_unmeasured
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record

if TYPE_CHECKING:
    from pytest_tvmperf.check.context import CheckContext


def settle(
    ctx: "CheckContext", exact: ExactMetrics, collected: Collected, baseline: Callable[[], Record | None]
) -> ExactMetrics:
    """``exact`` as it is recorded or gated, given what the sources did not measure:
    ``baseline()`` reads the test's stored entry (only when something was not measured)."""
    __tracebackhide__ = True
    if not collected.missing:
        return exact
    stored_record = baseline()
    stored = {} if stored_record is None else stored_record.exact.per_kernel
    if ctx.session.settings.update:
        exact, kept = keep_unmeasured(exact, None if stored_record is None else stored_record.exact, collected.missing)
        if kept:
            ctx.note(KEPT_LINE.format(metrics=", ".join(kept)))
        return exact
    lost = [m for m in collected.died if m in stored]
    if lost:
        why = collected.died[lost[0]]
        ctx.fail(
            "error",
            f"tvmperf: {ctx.nodeid}: {', '.join(lost)} could not be measured: {why}. The baseline in "
            f"{ctx.identity.shown_file} has them, so the test fails rather than pass with them ungated; run it again",
        )
    return exact
