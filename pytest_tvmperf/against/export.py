"""The other TVM version's side of ``--tvmperf-against-tvm``: this plugin running under
that version in its own environment (env.py), started by today's run (run.py) with
``TVMPERF_AGAINST_EXPORT=DIR`` on the same test selection. Each test's ``tvmperf.check``
compiles its workload and checks it against NumPy as usual, then, instead of timing and
gating, exports the build and records its exact metrics (and the simulated per-kernel
counts where on); what failed (a compile error, a wrong output, an API this TVM lacks)
is kept with its error text. ``DIR/results.json`` maps node ids to
``{"status": "built"|"failed"|"skipped", "record", "library", "error"}``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_tvmperf.builder.prepare import Prepared
    from pytest_tvmperf.check.context import CheckContext

#: the environment variable that turns this side on (the directory it writes to)
ENV_EXPORT = "TVMPERF_AGAINST_EXPORT"
RESULTS = "results.json"
#: lines of a failed test's report kept as its error
ERROR_LINES = 15


def _tail(text: str, lines: int = ERROR_LINES) -> str:
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


class Exporter:
    """The export side: ``check`` per test, the test reports, ``results.json`` at the end."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.results: dict[str, dict[str, Any]] = {}

    def check(self, ctx: "CheckContext", prep: "Prepared"):
        """Record and export ``prep`` (compiled and checked against NumPy already)."""
        __tracebackhide__ = True
        import tvm

        from pytest_tvmperf.check import pipeline
        from pytest_tvmperf.result.outcome import Outcome
        from pytest_tvmperf.store.artifacts import export_pending
        from pytest_tvmperf.values.builtin_types import plain

        if not prep.target.runnable or prep.target.remote is not None:
            pytest.skip(f"--tvmperf-against-tvm times both builds on this machine's CPU; target {ctx.target} is not")
        exact = pipeline.exact_metrics(ctx, prep)
        final = self.out_dir / f"{hashlib.sha256(ctx.nodeid.encode()).hexdigest()[:20]}.so"
        pending = export_pending(prep.compiled, final)
        os.replace(pending.temp, final)
        record = pipeline.build_record(ctx.executor, prep, exact, tvm_version=str(tvm.__version__), kernels=False)
        built = {"status": "built", "record": plain(record.as_json()), "library": final.name}
        self.results[ctx.nodeid] = {**built, "sha256": pending.sha256}
        note = f"built with TVM {tvm.__version__} for --tvmperf-against-tvm"
        outcome = Outcome(ctx.nodeid, ctx.test_id, ctx.executor, ctx.target, "recorded", record=record, note=note)
        return ctx.add_outcome(outcome)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.results[report.nodeid] = {"status": "failed", "error": _tail(report.longreprtext)}
        elif report.skipped and report.nodeid not in self.results:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.results[report.nodeid] = {"status": "skipped", "error": str(reason).removeprefix("Skipped: ")}

    def pytest_collectreport(self, report) -> None:
        if report.failed:  # a test file that does not import under this TVM: one error for its tests
            self.results[f"collect:{report.nodeid}"] = {"status": "failed", "error": _tail(report.longreprtext)}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        temp = self.out_dir / f".{RESULTS}.{os.getpid()}.tmp"
        temp.write_text(json.dumps(self.results, indent=1, sort_keys=True) + "\n")
        os.replace(temp, self.out_dir / RESULTS)
