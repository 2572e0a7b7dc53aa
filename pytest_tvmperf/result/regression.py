"""Pure text: a failed comparison's message, metric by metric (with its kernel, time and
bytecode diffs), and a missing baseline's; the other messages are in text.py."""

from __future__ import annotations

import difflib
from typing import Mapping, Sequence

from pytest_tvmperf.judge.metric_verdict import Comparison, MetricVerdict
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.measure.metric_sources import RUNTIME_LINE, grown_kernels, metric_unit, runtime_change
from pytest_tvmperf.measure.sim_env import PINNED_DESCRIPTION
from pytest_tvmperf.result.text import count_diff, fmt_number, fmt_time, safe, update_command
from pytest_tvmperf.values.kernel_keys import without_numbers
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.values.peak_memory import ON_HOST
from pytest_tvmperf.values.resources import COMPILE_S, PEAK_NAMES, RESOURCE_NAMES, fmt_bytes, parts_diff, resource
from pytest_tvmperf.result.compile_text import compile_lines
from pytest_tvmperf.result.kernel_match import KernelMatch, match_kernels
from pytest_tvmperf.result.kernels import kernel_changes
from pytest_tvmperf.values.executor_rows import is_prim


def kernel_match(current: Record, baseline: Record) -> KernelMatch:
    """The kernels of ``current`` matched with ``baseline``'s by structure (result/kernel_match.py)."""
    names = lambda r: tuple(sorted(set(r.kernel_time_s or ()) | {k for m in r.exact.per_kernel.values() for k in m}))  # noqa: E731
    return match_kernels(baseline.kernels, current.kernels, names(baseline), names(current))


def verdict_lines(v: MetricVerdict, current: Record, baseline: Record, match: KernelMatch | None = None) -> list[str]:
    if v.metric == "time":
        return _time_lines(v, current)
    if v.metric in RESOURCE_NAMES:
        return resource_lines(v, current, baseline, match)
    if v.metric == COMPILE_S:
        return compile_lines(v)
    delta = (v.current or 0) - (v.baseline or 0)
    shown = f"{int(delta):+d}" if float(delta).is_integer() else f"{delta:+.4g}"
    lines = [f"  {v.metric} {fmt_number(v.baseline)} -> {fmt_number(v.current)} ({shown}, limit {v.limit})"]
    match = match or kernel_match(current, baseline)
    if v.metric == "instructions":
        lines += _if_any(
            "    by callee: ", count_diff(baseline.exact.by_callee, match.translate(current.exact.by_callee))
        )
        lines += _if_any("    by function: ", count_diff(baseline.exact.instructions, current.exact.instructions))
    elif v.metric == "calls":
        calls = count_diff(baseline.exact.calls, match.translate(current.exact.calls))
        lines += _if_any("    executed calls by callee: ", calls)
    elif v.metric in current.exact.per_kernel:
        then, now = baseline.exact.per_kernel.get(v.metric), current.exact.per_kernel.get(v.metric)
        grown = grown_kernels(
            _named(current, then),
            _named(current, match.translate(now, then)),
            metric_unit(v.metric),
            label=_labels(match, now, then),
            within=_relative(v.limit),
        )
        lines += _if_any("    kernels that grew: ", safe(grown))
        runtime = runtime_change(then, now, metric_unit(v.metric))
        lines += _if_any(f"    outside the kernels (the VM runtime's own work, {RUNTIME_LINE}): ", runtime)
    return lines


def _if_any(head: str, text: str) -> list[str]:
    return [head + text] if text else []


def resource_lines(v: MetricVerdict, current: Record, baseline: Record, match: KernelMatch | None = None) -> list[str]:
    """A resource metric's lines: before, after, the limit and its allowed maximum, and where
    it grew (by site, the baseline's kernels under this build's names, ``match``)."""
    delta = int((v.current or 0) - (v.baseline or 0))
    relative = _relative(v.limit)
    most = v.baseline * (1 + relative) if relative is not None and v.baseline is not None else None
    if v.metric in PEAK_NAMES and v.bound is not None:  # the limit's, or the noise floor's (judge/compare.py)
        most = v.bound
    allowed = f", at most {fmt_bytes(int(most))}" if most is not None else ""
    lines = [f"  {v.metric} {fmt_bytes(v.baseline)} -> {fmt_bytes(v.current)} ({delta:+,} B, limit {v.limit}{allowed})"]
    match = match or kernel_match(current, baseline)
    where = parts_diff(
        match.baseline_sites(baseline.exact.resource_parts.get(v.metric)), current.exact.resource_parts.get(v.metric)
    )
    return lines + _if_any(f"    {resource(v.metric).parts}: ", safe(where))


def _not_measured_lines(comparison: Comparison) -> list[str]:
    """``  code_bytes n/a: <why>`` for each resource metric that could not be read here."""
    return [
        f"  {v.metric} n/a: {v.note}"
        for v in comparison.verdicts
        if v.metric in (*RESOURCE_NAMES, COMPILE_S)
        and v.status == Verdict.NA
        and v.note
        and v.current is None
        and v.note != ON_HOST  # a host target's device peak: expected, said in the JSON and JUnit
    ]


def _relative(limit: str) -> float | None:
    """The relative limit a verdict shows (``+1%`` -> 0.01), or None (an absolute one, none)."""
    try:
        return float(limit[1:-1]) / 100 if limit.startswith("+") and limit.endswith("%") else None
    except ValueError:
        return None


def time_headline(v: MetricVerdict, samples: int) -> str:
    """The time line of a message, the arrow and the ratio each saying what they compare:
    ``time 47.5 ms -> 51.3 ms (medians, side by side); a/b ratio 1.08x (95% CI 1.04-1.12x), ...``
    (both timed in this run), or ``time 1 ms -> 2.5 ms (stored median -> this run's); raw ratio ...``."""
    d = v.decision
    side_by_side = v.stored_baseline is not None or (d is not None and d.mode.startswith("a/b"))
    own = d is not None and d.estimate == OWN_RUN_TIME  # the medians are each side's own run time too
    if side_by_side:
        arrow = f"{'own run time ' if own else ''}medians, side by side"
    elif v.baseline is not None:
        arrow = f"stored median -> this run's{' own run time median' if own else ''}"
    else:
        arrow = f"this run's {'own run time ' if own else ''}median"
    head = f"  time {fmt_time(v.baseline)} -> {fmt_time(v.current)} ({arrow})"
    if d is not None:
        ratio = f"{d.mode.split(',')[0]} ratio {d.ratio:.2f}x ({d.confidence * 100:.3g}% CI {d.low:.2f}-{d.high:.2f}x)"
        return f"{head}; {ratio}, limit {v.limit}, {samples} samples{_paired_clause(v) if side_by_side else ''}"
    ratio = f"ratio of medians {v.ratio:.2f}x, " if v.ratio else ""
    return f"{head}; {ratio}limit {v.limit}, median of {samples} samples"


def _paired_clause(v: MetricVerdict) -> str:
    """An a/b ratio is the median of the paired rounds' ratios, not the ratio of the two medians
    shown: say so, and why they disagree where the medians' ratio falls outside the interval."""
    d = v.decision
    if d is None or not d.rounds:
        return ""
    clause = f"; the ratio is the median of {d.rounds} paired rounds' ratios"
    if v.baseline and v.current and not d.low <= v.current / v.baseline <= d.high:
        clause += (
            f" (the two medians' own ratio, {v.current / v.baseline:.2f}x, falls outside its interval: the rounds' "
            f"load differed, and each round's ratio compares its two sides under that round's load)"
        )
    return clause


def _time_lines(v: MetricVerdict, current: Record) -> list[str]:
    timing = current.timing
    lines = [time_headline(v, len(timing.samples.samples) if timing else 0)]
    stored = ""
    # a/b: the headline has the medians of the side-by-side samples, not the stored one
    if v.stored_baseline is not None and fmt_time(v.stored_baseline) != fmt_time(v.baseline):
        stored = (
            f" (the baseline's stored median, {fmt_time(v.stored_baseline)}, was measured in another run: not compared)"
        )
    if v.stored_baseline is not None or v.note:
        lines.append(f"    compared: {v.note}{stored}")
    return lines


def _named(record: Record, per_kernel: Mapping[str, int] | None) -> Mapping[str, int] | None:
    """A PrimFunc test's kernel under its workload's name (every TE test's kernel is ``main``)."""
    if per_kernel is None or not is_prim(record.executor) or "main" not in per_kernel:
        return per_kernel
    return {(f"{record.workload} (main)" if name == "main" else name): n for name, n in per_kernel.items()}


def _labels(match: KernelMatch, now: Mapping[str, int] | None = None, then: Mapping[str, int] | None = None):
    """The label of each kernel of a translated map (keyed by baseline names): what it is, and
    whether it changed. ``now``, ``then``: this build's map and the baseline's (:meth:`KernelMatch.translate`)."""
    if not match.by_structure:
        return None
    labels = {old: match.label(old, old=True) for old in (*match.before, *(then or ()))}
    by_name = match.devices_by_name(then)
    for name in (*match.status, *(now or ())):
        status = match.status.get(match.launcher(name))
        if status is None or (by_name and match.launcher(name) != name):
            continue
        labels[match.key_name(name)] = match.label(name) + (" (changed)" if str(status) == "changed" else "")
    return labels.get


def _was(match: KernelMatch, name: str) -> str:
    """' (was conv2d_add_relu(...3x3...) [...])'; ' (its code changed)' on the same shapes; a layer
    that reads as it did (its channels changed) by its shapes: ' (computes ..., was ...)'."""
    old = match.old_of[name]
    before, after = match.before.get(old), match.after.get(name)
    if before is not None and after is not None and (before.op, before.shapes) == (after.op, after.shapes):
        return " (its code changed)" if old == name else f" (its code changed; was {old})"
    if before is not None and after is not None and before.layer and before.describe() == after.describe():
        return f" (computes {after.computes()}, was {before.computes()}" + (f" [{old}])" if old != name else ")")
    return f" (was {match.label(old, old=True)})"


def kernel_set_line(match: KernelMatch, limit: int = 6) -> str:
    """The kernels added, changed and removed since the baseline: 'new: ...; changed: ... (was ...); removed: ...'."""
    if not match.by_structure:
        return ""
    parts = []
    for title in ("new", "changed", "removed"):
        gone = title == "removed"
        names = match.removed if gone else sorted(n for n, s in match.status.items() if str(s) == title)
        shown = [match.label(n, gone) + (_was(match, n) if title == "changed" else "") for n in names[:limit]]
        if names:
            parts.append(
                f"{title}: " + ", ".join(shown) + (f", ... {len(names) - limit} more" if len(names) > limit else "")
            )
    return "; ".join(parts)


#: the metrics the simulated cost counts (on the pinned build, not this machine's)
SIMULATED = ("cpu_instructions", "est_cycles")
#: a failure's head: at most this many lines (the verdict, each regressed metric before -> after and its
#: limit, the kernel at fault, what changed, the accept command); the details follow it
HEAD_LINES = 12
#: the line between the head and the details
DETAILS = "details:"


def _is_change(note: str) -> bool:
    """A note that says what changed since the baseline (the pipeline, the tuning records): the head's."""
    return "changed" in note


def regression_message(
    nodeid: str,
    path: str,
    current: Record,
    baseline: Record,
    comparison: Comparison,
    notes: Sequence[str] = (),
    command: str | None = None,
    advice: str = "",
) -> str:
    """A failed (or inconclusive) comparison's text: a head of at most :data:`HEAD_LINES` lines
    (the verdict, each regressed metric before -> after and its limit with the kernels or callees
    that moved, the kernels since the baseline, what changed: the pipeline, the tuning records, the
    workload, TVM; the accept command), then the details under :data:`DETAILS` (how each metric was
    compared, the other metrics' verdicts, what could not be measured, the VM bytecode diff).
    ``advice``: a line after the accept command (what to do on a pull request, under a ref)."""
    names = ", ".join(v.metric for v in comparison.regressions)
    time_verdict = comparison.get("time")
    if names:
        head = [f"tvmperf: {names} regressed against the baseline in {path}"]
    else:
        why = (time_verdict.reason if time_verdict is not None else "") or "the noise is larger than the threshold"
        head = [f"tvmperf: time inconclusive against the baseline in {path}: {why}"]
    details: list[str] = []
    match = kernel_match(current, baseline)
    # the head's lines with their rank: 0 always (each regressed metric before -> after, what changed),
    # 1 the kernels at fault, 2 a metric's own sub-lines (by callee, by kernel); how it was compared: details
    ranked: list[tuple[int, str]] = []
    for v in comparison.regressions:
        first, *rest = verdict_lines(v, current, baseline, match)
        ranked.append((0, first))
        for line in rest:
            if line.lstrip().startswith("compared:"):
                details.append(line)
            else:
                ranked.append((2, line))
    kernels = _if_any("  kernels since the baseline (matched by structure, not by name): ", kernel_set_line(match))
    band = time_verdict.bound - 1 if time_verdict is not None and time_verdict.bound is not None else KERNEL_NOISE_BAND
    slower = kernel_time_diff(baseline.kernel_time_s, current.kernel_time_s, match=match, band=band)
    kernels += _if_any("  kernels that take longer than in the baseline: ", slower)
    ranked += [(1, line) for line in kernels]
    ranked += [(0, f"  note: {note}") for note in notes if _is_change(note)]
    if current.workload != baseline.workload:
        ranked.append((0, f"  workload was {safe(baseline.workload)}, now {safe(current.workload)}"))
    if current.tvm_version != baseline.tvm_version:
        ranked.append((0, f"  TVM was {safe(baseline.tvm_version)}, now {safe(current.tvm_version)}"))
    accept = [f"to accept these values as the new baseline: {command or update_command(nodeid)}"]
    if advice:
        accept.append(advice)
    room = HEAD_LINES - len(head) - len(accept)
    kept: set[int] = set()
    for rank in (0, 1, 2):  # the lowest ranks first, each in its order, while there is room
        for i, (r, _) in enumerate(ranked):
            if r == rank and (len(kept) < room or rank == 0):
                kept.add(i)
    head += [line for i, (_, line) in enumerate(ranked) if i in kept]
    details[:0] = [line for i, (_, line) in enumerate(ranked) if i not in kept]  # nothing is dropped
    if match.note and current.kernels:
        details.append(f"  note: {match.note}")
    details += [f"  note: {note}" for note in notes if not _is_change(note)]
    details.extend(_not_measured_lines(comparison))
    if time_verdict is not None and time_verdict.status != Verdict.REGRESSED and time_verdict.current is not None:
        first, *rest = verdict_lines(time_verdict, current, baseline, match)
        details.append(f"{first} [{time_verdict.status}]")
        details.extend(rest)
        simulated = [v.metric for v in comparison.regressions if v.metric in SIMULATED]
        if simulated and time_verdict.status in (Verdict.PASS, Verdict.IMPROVED):
            details.append(
                f"  ({', '.join(simulated)} counted the build for {PINNED_DESCRIPTION} under callgrind's cache "
                "model, time this machine's own build on its own caches: the two can move apart)"
            )
    compiled = comparison.get(COMPILE_S)
    if compiled is not None and compiled.status not in (Verdict.REGRESSED, Verdict.NA):
        first, *rest = compile_lines(compiled) or [""]
        details.extend([f"{first} [{compiled.status}]", *rest] if first else [])
    details += [
        f"  (improved: {v.metric} {fmt_number(v.baseline)} -> {fmt_number(v.current)})"
        for v in comparison.improvements
        if v.metric != "time"
    ]
    diff = bytecode_diff(baseline.bytecode, match.listing(current.bytecode))
    if diff:
        details.append("VM bytecode, baseline -> now:")
        if match.by_structure and any(str(s) != "same" or match.old_of.get(n) != n for n, s in match.status.items()):
            details.append("  (each kernel called under its baseline counterpart's name; [new], [changed]: see above)")
        details.extend(f"  {safe(line)}" for line in diff)
    return "\n".join([*head, *accept, *([DETAILS, *details] if details else [])])


#: a kernel that kept its place is listed as taking longer only when it grew by more than
#: this share of its own baseline time (the time threshold when the test has one) ...
KERNEL_NOISE_BAND = 0.05
#: ... and by more than this share of the whole baseline's kernel time: one profiled run's
#: per-kernel times move by a few percent, so unchanged code shows such noise (+18.6 ms of a
#: 6 s network on an inconclusive run); noise is never listed as a slower kernel
KERNEL_TOTAL_SHARE = 0.01


def kernel_time_diff(
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    limit: int = 6,
    match: KernelMatch | None = None,
    band: float = KERNEL_NOISE_BAND,
) -> str:
    """'transpose +1.55 ms (new), fused_add1 (was fused_add) +0.27 ms', slowest first, beyond the noise
    (a new kernel, or one grown by more than ``band`` of its own time and :data:`KERNEL_TOTAL_SHARE` of
    the baseline's total); with a ``match`` by structure, against its counterpart whatever its name,
    shown as what it is."""
    if before is None or after is None:
        return ""
    by_structure = match is not None and match.by_structure
    total = sum(before.values())
    parts: list[str] = []
    for delta, name, old, tag in kernel_changes(before, after, match):
        then = before.get(old or name)
        if then is not None and (delta <= band * then or delta <= KERNEL_TOTAL_SHARE * total):
            continue  # noise
        if len(parts) == limit:
            break
        if by_structure and match.status.get(name) is not None:
            was = f" (was {match.label(old, old=True)})" if tag == "changed" else (f" (was {old})" if old else "")
            label, was, tag = safe(match.label(name)), safe(was), "" if tag == "changed" else tag
        else:
            label, was = safe(name), f" (was {safe(old)})" if old else ""
        parts.append(f"{label}{was} +{fmt_time(delta)}{f' ({tag})' if tag else ''}")
    return ", ".join(parts)


def bytecode_diff(before: Mapping[str, str] | None, after: Mapping[str, str] | None, max_lines: int = 80) -> list[str]:
    """Diff of the VM bytecode that changed, baseline -> now, aligned on the instructions without
    registers and constant indices (one added call is a few lines, not every later one renumbered)."""
    if before is None or after is None:
        return []
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, "").splitlines(), after.get(name, "").splitlines()
        old_ops, new_ops = [without_numbers(x) for x in old], [without_numbers(x) for x in new]
        if old_ops == new_ops:
            continue
        lines += [f"--- baseline @{name}", f"+++ now @{name}"]
        for group in difflib.SequenceMatcher(None, old_ops, new_ops, autojunk=False).get_grouped_opcodes(1):
            first, last = group[0], group[-1]
            lines.append(f"@@ -{first[1] + 1},{last[2] - first[1]} +{first[3] + 1},{last[4] - first[3]} @@")
            for op, i1, i2, j1, j2 in group:
                if op == "equal":
                    lines += [f" {x}" for x in new[j1:j2]]
                    continue
                lines += [f"-{x}" for x in old[i1:i2]] + [f"+{x}" for x in new[j1:j2]]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... {len(lines) - max_lines} more diff lines"]
    return lines


def missing_baseline_message(nodeid: str, test_id: str, path: str, command: str | None = None, advice: str = "") -> str:
    return (f"tvmperf: no baseline for {test_id} in {path}\ncreate it with: {command or update_command(nodeid)}") + (
        f"\n{advice}" if advice else ""
    )
