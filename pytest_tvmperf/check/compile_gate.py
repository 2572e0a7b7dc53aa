"""``compile_s`` of one gate: the baseline's stored IR and today's lowered IR built side by side here
(measure/compile_time.py), or why not (values/compile_times.py). The baseline's IR is built in this
process only once the isolation child has built it (cached by IR hash and host): stored IR is data, and
one that hangs or crashes TVM must not take the session with it. Both sides build the same way: code
generation of the lowered module (``rebuild.generate``), without the pipeline the baseline's IR has been through."""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

from pytest_tvmperf.builder.executors import shorten_tvm_error
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS
from pytest_tvmperf.judge.compile_verdict import build_until_decided
from pytest_tvmperf.measure.compile_time import side_by_side
from pytest_tvmperf.measure.host_machine import current_machine
from pytest_tvmperf.values.compile_times import DEFAULT_BUILDS, CompileTimes
from pytest_tvmperf.values.resources import COMPILE_S

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.check.context import CheckContext
    from pytest_tvmperf.config.time_policy import DecideBudget
    from pytest_tvmperf.values.record import Record

NO_IR = (
    "the baseline stores no IR to build beside today's (recorded with timing off, before IR baselines, or "
    "with --tvmperf-baseline-program=so); re-record it timed with --tvmperf-update to gate it"
)


def compile_times(
    ctx: "CheckContext", prep: "Prepared | None", baseline: "Record | None", budget: "DecideBudget"
) -> CompileTimes | None:
    """The compile times of today's build beside the baseline's, for a gate: None where the test leaves
    ``compile_s`` out (or records, or has no baseline); ``same`` for the baseline's own program (nothing
    built); ``skipped`` with the reason where nothing can be built side by side. Builds that straddle
    the limit are built on within ``budget`` (what the test's decide budget has left)."""
    __tracebackhide__ = True
    settings = ctx.session.settings
    if COMPILE_S not in ctx.settings.resources or settings.update or baseline is None or prep is None:
        return None
    if baseline.ir is None:
        return CompileTimes(skipped=NO_IR)
    if settings.artifact_dir is None:
        return CompileTimes(skipped="the baseline's IR is not read in this run (no artifact directory)")
    from pytest_tvmperf.builder import rebuild

    module = rebuild.lowered_module(prep.compiled)
    if module is None:
        return CompileTimes(skipped="today's build has no lowered IR to build again (a loaded library)")
    if ctx.sources.checked_program(prep.compiled, baseline).same:  # under either --tvmperf-same-program: the same code
        return CompileTimes(same=True)
    from pytest_tvmperf.store import lowered_ir

    session, ref = ctx.session, baseline.ir
    path = settings.baseline_dir / ref.path
    shown = session.shown(path)
    try:  # a damaged file: the a/b timing fails the test on it; compile_s only says why it is n/a
        lowered_ir.check_file(path, ref, shown, ctx.test_id, session.shown(ctx.baseline_file))
        # loaded here once the isolation child has built it (cached: the a/b timing built it already)
        fingerprint = current_machine(prep.target.as_json()).fingerprint
        builder = rebuild.build_in_child(session.sandbox(), path, ctx.executor, prep.target, ref)
        load = partial(lowered_ir.load, path, ref)
        rebuild.cached_library(fingerprint, ctx.executor, ref.program_key, load, prep.target, builder=builder)
        stored = lowered_ir.load(path, ref)
    except Exception as exc:  # noqa: BLE001 - n/a with the reason, never a failed test
        return CompileTimes(skipped=f"the baseline's IR {shown} was not built here ({shorten_tvm_error(exc, 1)})")
    # each side's code generation (the library is dropped: its time is all)
    build_stored = partial(rebuild.generate, stored, ctx.executor, prep.target)
    build_today = partial(rebuild.generate, module, ctx.executor, prep.target)
    more = partial(side_by_side, build_stored, build_today, ctx.compile_timer)
    limit = ctx.settings.thresholds.get(COMPILE_S) or DEFAULT_THRESHOLDS[COMPILE_S]
    try:
        times = more(DEFAULT_BUILDS)
        return build_until_decided(times, more, limit, session.time_policy().alpha, budget, time.monotonic)
    except Exception as exc:  # noqa: BLE001 - a build TVM refuses here: n/a with the reason
        return CompileTimes(skipped=f"the builds side by side failed ({shorten_tvm_error(exc, 1)})")
