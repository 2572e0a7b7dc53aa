"""What an xdist worker hands to the controller at session end, and the check that it
arrived.

execnet sends only builtin types: a ``tvm_ffi.core.String`` (or any other TVM object)
anywhere in the payload makes the worker go down at session end, silently losing its
results. So the payload is checked here (values/builtin_types.py's ``plain``), where the
error can name the field, and a worker whose payload did not arrive fails the run.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from pytest_tvmperf.result.entry import ResultEntry

# the payload's check (values/builtin_types.py): PayloadError names where a non-builtin value is
from pytest_tvmperf.values.builtin_types import PayloadError, plain  # noqa: F401

PAYLOAD_KEY = "tvmperf"


def worker_payload(
    results: Sequence[ResultEntry],
    not_measured: Sequence[str],
    tuning_lines: Sequence[str] = (),
    untuned_here: Sequence[str] = (),
) -> dict:
    """The worker's hand-over, made of builtin types only (checked by JSON too): each
    test's outcome once, as its results entry (``ResultEntry.to_json``; the controller
    derives its summary row from it), why things were not measured, the lines about
    tuning records, and the node ids of tuned tests skipped for want of records here."""
    payload = plain(
        {
            "results": [e.to_json() for e in results],
            "not_measured": list(not_measured),
            "tuning_lines": list(dict.fromkeys(tuning_lines)),
            "untuned_here": list(untuned_here),
        }
    )
    json.dumps(payload)  # non-finite floats are fine for JSON here; anything else raises
    return payload


def received(node: Any, error: Any) -> tuple[dict | None, str | None]:
    """The payload a finished worker handed over, typed again (``results``: ResultEntry),
    or why it is missing."""
    name = getattr(node, "gateway", None)
    name = getattr(name, "id", None) or "a worker"
    output = getattr(node, "workeroutput", None) or {}
    payload = output.get(PAYLOAD_KEY)
    if payload is not None and "error" not in payload:
        return {**payload, "results": [ResultEntry.from_json(entry) for entry in payload["results"]]}, None
    why = f": {payload['error']}" if payload else f": {error}" if error else ""
    return None, (
        f"xdist worker {name} went down before handing over its tvmperf results{why}; the summary and "
        f"report files miss the tests it ran, so the run fails"
    )
