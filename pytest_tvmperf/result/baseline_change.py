"""Pure text: what a pull request's re-recorded baseline entry changes against the base branch's
(``--tvmperf-baselines-ref``), and the Markdown a reviewer reads (approved? verified? how to approve)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from pytest_tvmperf.values.resources import RESOURCE_NAMES
from pytest_tvmperf.config.parsing import EXACT_METRICS
from pytest_tvmperf.judge.metric_verdict import MetricVerdict
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.regression import kernel_match, kernel_set_line, verdict_lines
from pytest_tvmperf.result.markdown import md_code, md_text
from pytest_tvmperf.result.text import fmt_number, fmt_time, safe
from pytest_tvmperf.values.record import Record

#: the option that approves, and how the example workflow gives it
APPROVE_FLAG = "--tvmperf-approved-change=on"
APPROVE_LABEL = "perf-change-approved"
HOW_TO_APPROVE = (
    f"a maintainer who has reviewed the change approves it with {APPROVE_FLAG} (in the example "
    f"workflow: the pull request label {APPROVE_LABEL}, which only maintainers can set); the gate then "
    f"re-measures each re-recorded entry here and passes only where it is what this code measures"
)
#: what to do on a pull request whose code changes performance on purpose (under a ref)
ON_A_PULL_REQUEST = (
    "on a pull request that changes this on purpose: run that command, commit baselines/, and " + HOW_TO_APPROVE
)


class ChangeState(str, Enum):
    """A changed entry's state in this run."""

    UNAPPROVED = "not approved"
    VERIFIED = "approved, verified"
    #: its exact metrics verified here, its time not: the entry holds no time of this machine
    TIME_UNVERIFIED = "approved, time not verified here"
    MISMATCH = "does not match what was measured"

    __str__ = str.__str__


#: the outcome note of each state (the summary row; the change report reads it back)
STATE_NOTE = {
    ChangeState.UNAPPROVED: "baseline re-recorded by this change, not approved",
    ChangeState.VERIFIED: "approved baseline change, verified here",
    ChangeState.TIME_UNVERIFIED: "approved baseline change, its exact metrics verified here, its time not verified here",
    ChangeState.MISMATCH: "approved baseline change does not match what was measured",
}


def state_of_note(note: str) -> ChangeState | None:
    """The state an outcome's note says (:data:`STATE_NOTE`), or None."""
    for state, text in STATE_NOTE.items():
        if note.startswith(text):
            return state
    return None


def entries_differ(ref: Record | None, pr: Record | None) -> bool:
    """Does the pull request's entry differ from the ref's (added, removed or changed)?"""
    if ref is None or pr is None:
        return ref is not pr
    return json.dumps(ref.as_json(), sort_keys=True) != json.dumps(pr.as_json(), sort_keys=True)


def change_lines(ref: Record | None, pr: Record | None) -> list[str]:
    """What the entry changes: per metric (``instructions 120 -> 131 (+11)`` and what is
    behind it), the kernels, the time per machine both recorded, workload and TVM version."""
    if pr is None:
        return [] if ref is None else ["  entry removed (the test has no baseline in the change)"]
    if ref is None:
        shown = ", ".join(
            f"{m} {fmt_number(pr.exact.scalar(m))}" for m in _metrics(pr, pr) if pr.exact.scalar(m) is not None
        )
        return [f"  new entry: {shown or 'no exact metrics'}"]
    lines: list[str] = []
    match = kernel_match(pr, ref)
    for metric in _metrics(ref, pr):
        old, new = ref.exact.scalar(metric), pr.exact.scalar(metric)
        if old == new:
            continue
        if old is None or new is None:
            lines.append(f"  {metric} {fmt_number(old)} -> {fmt_number(new)}")
            continue
        verdict = MetricVerdict(metric, Verdict.REGRESSED if new > old else Verdict.IMPROVED, old, new, "")
        head, *detail = verdict_lines(verdict, pr, ref, match)
        lines.append(head.replace(", limit )", ")"))
        lines.extend(detail)
    kernels = kernel_set_line(match)
    if kernels:
        lines.append(f"  kernels (matched by structure): {kernels}")
    for fingerprint in sorted(set(ref.timings) & set(pr.timings)):
        old_t, new_t = ref.timings[fingerprint], pr.timings[fingerprint]
        if old_t.samples.samples != new_t.samples.samples:
            lines.append(
                f"  time on {safe(new_t.machine.describe())}: median {fmt_time(old_t.samples.median)} -> "
                f"{fmt_time(new_t.samples.median)}"
            )
    for fingerprint in sorted(set(pr.timings) - set(ref.timings)):
        t = pr.timings[fingerprint]
        lines.append(f"  time recorded on {safe(t.machine.describe())}: median {fmt_time(t.samples.median)}")
    for what, key in (("workload", "workload"), ("TVM", "tvm_version"), ("pipeline", "pipeline")):
        if getattr(ref, key) != getattr(pr, key):
            lines.append(f"  {what} {safe(getattr(ref, key))} -> {safe(getattr(pr, key))}")
    return lines or ["  other fields of the entry (no metric, no time of a machine both recorded)"]


def _metrics(a: Record, b: Record) -> list[str]:
    per_kernel = sorted(set(a.exact.per_kernel) | set(b.exact.per_kernel))
    return [*EXACT_METRICS, *per_kernel, *RESOURCE_NAMES]


def unapproved_message(test_id: str, pr_file: str, ref_name: str, changes: Sequence[str]) -> str:
    """The lines a failing test adds when the change re-recorded its baseline without approval."""
    head = (
        f"this change re-recorded the baseline of {test_id} in {pr_file} (against {pr_file} at "
        f"{ref_name}); its own baselines decide nothing until approved:"
    )
    return "\n".join([head, *changes, f"to approve: {HOW_TO_APPROVE}"])


def verified_message(test_id: str, pr_file: str, ref_name: str, changes: Sequence[str]) -> str:
    head = (
        f"tvmperf: approved baseline change of {test_id} in {pr_file} (against {ref_name}), verified "
        f"here: its exact metrics are what this code measures, its times within their noise"
    )
    return "\n".join([head, *changes])


def time_unverified_message(test_id: str, pr_file: str, ref_name: str, why: str, changes: Sequence[str]) -> str:
    """An approved entry whose exact metrics are this code's but whose time this machine cannot check."""
    head = (
        f"tvmperf: approved baseline change of {test_id} in {pr_file} (against {ref_name}): its exact metrics "
        f"are what this code measures; {why}"
    )
    return "\n".join([head, *changes])


def mismatch_message(nodeid: str, test_id: str, pr_file: str, why: Sequence[str], changes: Sequence[str]) -> str:
    head = (
        f"tvmperf: {nodeid}: the approved baseline of {test_id} in {pr_file} does not match what this "
        f"code measures here (numbers not recorded from it: edited by hand, or recorded from other "
        f"code):"
    )
    again = "re-record it with pytest --tvmperf-update, commit baselines/ and have it approved again"
    return "\n".join([head, *why, "what the change claims against the base:", *changes, again])


@dataclass(frozen=True)
class ChangedEntry:
    """One entry the pull request changed, for the report."""

    test_id: str
    file: str
    state: ChangeState | None
    lines: tuple[str, ...]


def markdown(entries: Sequence[ChangedEntry], ref_name: str, approved: bool) -> str:
    """The pull request's baseline changes as Markdown (a PR comment, the step summary)."""
    if not entries:
        return ""
    counts = {s: sum(e.state == s for e in entries) for s in ChangeState}
    head = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    out = [
        f"### pytest-tvmperf: this change re-recorded {len(entries)} baseline(s) against "
        f"{md_code(ref_name)} ({head or 'not judged'})",
        "",
    ]
    for e in entries:
        state = str(e.state) if e.state is not None else "not judged in this run"
        icon = {
            ChangeState.VERIFIED: "✅",
            ChangeState.TIME_UNVERIFIED: "⚠️",
            ChangeState.MISMATCH: "❌",
            ChangeState.UNAPPROVED: "⏸️",
        }.get(e.state, "")
        out.append(f"- {icon} {md_code(e.test_id)} in {md_code(e.file)}: {md_text(state)}")
        out.extend(f"  - {md_text(line.strip())}" for line in e.lines)
    if approved:
        out += ["", "Approved: each changed entry was re-measured here against its re-recorded numbers."]
    else:
        out += ["", f"**To approve:** {md_text(HOW_TO_APPROVE)}."]
    return "\n".join(out) + "\n"
