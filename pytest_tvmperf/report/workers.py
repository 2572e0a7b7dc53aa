"""What an xdist worker hands to the controller at session end, and the check that it arrived.
execnet sends only builtin types: a TVM object (``tvm_ffi.core.String``) in it takes the worker
down, silently losing its results; so the payload is checked where it is made (``plain``), and a
worker whose payload did not arrive fails the run."""

from __future__ import annotations

from typing import Any

from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.builtin_types import PayloadError

PAYLOAD_KEY = "tvmperf"


def hand_over(report: RunReport) -> dict:
    """The worker's payload, or the error the controller says (a bug: rather than crash the worker)."""
    try:
        return report.to_payload()
    except PayloadError as exc:
        return {"error": f"its results could not be sent ({exc})"}


def received(node: Any, error: Any) -> tuple[dict | None, str | None]:
    """The payload a finished worker handed over (for ``RunReport.merge``), or why it is missing."""
    name = getattr(getattr(node, "gateway", None), "id", None) or "a worker"
    output = getattr(node, "workeroutput", None) or {}
    payload = output.get(PAYLOAD_KEY)
    if payload is not None and "error" not in payload:
        return payload, None
    why = f": {payload['error']}" if payload else f": {error}" if error else ""
    return None, (
        f"xdist worker {name} went down before handing over its tvmperf results{why}; the summary and "
        f"report files miss the tests it ran, so the run fails"
    )
