"""What an xdist worker hands to the controller at session end (its run report's one
payload, result/run_report.py ``RunReport.to_payload``), and the check that it arrived.

execnet sends only builtin types: a ``tvm_ffi.core.String`` (or any other TVM object)
anywhere in the payload makes the worker go down at session end, silently losing its
results. So the payload is checked where it is made (values/builtin_types.py's ``plain``,
whose :class:`PayloadError` names the field), and a worker whose payload did not arrive
fails the run.
"""

from __future__ import annotations

from typing import Any

from pytest_tvmperf.result.run_report import RunReport
from pytest_tvmperf.values.builtin_types import PayloadError

PAYLOAD_KEY = "tvmperf"


def hand_over(report: RunReport) -> dict:
    """The worker's payload: its report's (``RunReport.to_payload``), or the error the
    controller says when it cannot be made (a bug: said there rather than crash the worker)."""
    try:
        return report.to_payload()
    except PayloadError as exc:
        return {"error": f"its results could not be sent ({exc})"}


def received(node: Any, error: Any) -> tuple[dict | None, str | None]:
    """The payload a finished worker handed over (for ``RunReport.merge``), or why it is missing."""
    name = getattr(node, "gateway", None)
    name = getattr(name, "id", None) or "a worker"
    output = getattr(node, "workeroutput", None) or {}
    payload = output.get(PAYLOAD_KEY)
    if payload is not None and "error" not in payload:
        return payload, None
    why = f": {payload['error']}" if payload else f": {error}" if error else ""
    return None, (
        f"xdist worker {name} went down before handing over its tvmperf results{why}; the summary and "
        f"report files miss the tests it ran, so the run fails"
    )
