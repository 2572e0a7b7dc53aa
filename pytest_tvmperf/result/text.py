"""Pure text: the end-of-run summary, peer and relation messages, and the helpers every message uses."""

from __future__ import annotations

import os
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from pytest_tvmperf.judge.compare import SAME_PROGRAM_CELL
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.judge.timestats import OWN_RUN_TIME
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.printable import safe
from pytest_tvmperf.values.resources import COMPILE_S, RESOURCE_METRICS, RESOURCE_NAMES
from pytest_tvmperf.judge.verdict import PeerCell, Verdict, peer_failures
from pytest_tvmperf.measure.metric_sources import fmt_count
from pytest_tvmperf.result.compile_text import compile_cell
from pytest_tvmperf.result.entry import ResultEntry, TimeCell
from pytest_tvmperf.values.record import Record


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if float(f"{seconds:.3g}") >= scale:  # round first: 0.9996 ms shows as 1 ms
            value = float(f"{seconds / scale:.3g}")
            return f"{value:g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_number(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{int(value)}" if float(value).is_integer() else f"{value:.4g}"


def text_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """Lines of left-aligned columns, two spaces apart, each cell :func:`safe` (ids may come from a file)."""
    cells = [[safe(c) for c in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]


def update_command(nodeid: str | None, options: Sequence[str] = (), first: Sequence[str] = ()) -> str:
    """``pytest [first] --tvmperf-update [options] 'nodeid'``, shell-quoted so it runs as printed
    (``options``: those that decide which tests exist and where their baselines go)."""
    parts = ["pytest", *first, "--tvmperf-update", *options, *([nodeid] if nodeid else [])]
    return " ".join(shlex.quote(p) for p in parts)


def count_diff(before: Mapping[str, int] | None, after: Mapping[str, int] | None, limit: int = 8) -> str:
    """'+3 transpose, +6 vm.builtin.make_shape, -1 ret', largest changes first."""
    if before is None or after is None:
        return ""
    delta = Counter(dict(after))
    delta.subtract(dict(before))
    changes = sorted(((n, d) for n, d in delta.items() if d), key=lambda nd: (-abs(nd[1]), nd[0]))
    parts = [f"{d:+d} {safe(n)}" for n, d in changes[:limit]]
    if len(changes) > limit:
        parts.append(f"... {len(changes) - limit} more")
    return ", ".join(parts)


@dataclass(frozen=True)
class SummaryRow:
    test: str
    executor: str
    target: str
    median_s: float | None
    baseline_s: float | None
    instructions: int | None
    baseline_instructions: int | None
    verdict: Verdict
    note: str = ""
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    mode: str = ""
    #: TVM over each peer framework
    peers: tuple[PeerCell, ...] = ()
    #: the simulated instruction count (``cpu_instructions``) now and in the baseline
    cpu_instructions: int | None = None
    baseline_cpu_instructions: int | None = None
    #: the metrics that regressed (``time``, ``cpu_instructions``, ...), in gate order
    failed: tuple[str, ...] = ()
    #: where the time goes: ``conv2d14 26%, conv2d9 23%, ...`` (:func:`hot_kernels`), "" unknown
    hot: str = ""
    #: the resource metrics of this run, by name (the rows of values/resources.py: run-time
    #: allocations, code size, the peak memory of one call on the host and on a GPU); None not read
    resources: Mapping[str, int | None] = field(default_factory=dict)
    #: compile_s side by side, one phrase (result/compile_text.py); "" where not measured
    compile: str = ""
    #: what the medians and the ratio measured: "wall time", or "own run time" (each side's
    #: wall time less its own threads' CPU wait, on a busy machine); "" where not timed
    estimate: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "failed", tuple(self.failed))

    @classmethod
    def of(cls, entry: ResultEntry) -> SummaryRow:
        """The row of one test's results entry (the one form an outcome is kept and shipped in)."""
        shared = dict(test=entry.test_id, **{k: getattr(entry, k) for k in ("executor", "target", "verdict", "note")})
        if (r := entry.relation) is not None:
            return cls(
                **shared,
                median_s=r.numerator_s,
                baseline_s=r.denominator_s,
                instructions=None,
                baseline_instructions=None,
                ratio=r.ratio,
                low=r.low,
                high=r.high,
                mode=f"{limit_sign(r.status)} {r.limit:g}x",
            )
        record, baseline, time = entry.record, entry.baseline, entry.time or TimeCell()
        c = next((m for m in entry.metrics if m.metric == COMPILE_S), None)  # compile_s's cell
        return cls(
            **shared,
            **{key: getattr(time, key) for key in ("median_s", "baseline_s", "ratio", "low", "high")},
            instructions=record.exact.scalar("instructions") if record is not None else None,
            baseline_instructions=baseline.exact.scalar("instructions") if baseline is not None else None,
            mode=time.mode or "",
            peers=entry.peers,
            cpu_instructions=_count(record, "cpu_instructions"),
            baseline_cpu_instructions=_count(baseline, "cpu_instructions"),
            resources={m: _count(record, m) for m in RESOURCE_NAMES},
            failed=entry.failed,
            hot=hot_kernels(record.kernel_time_s) if record is not None else "",
            compile=compile_cell(c.status, c.current, c.baseline, c.note, c.limit) if c is not None else "",
            estimate=time.estimate or "",
        )

    @property
    def held_peers(self) -> tuple[str, ...]:
        """The gated peers whose ratio could not be told against its limit (inconclusive)."""
        return tuple(p.name for p in self.peers if p.limit is not None and p.status == Verdict.INCONCLUSIVE)

    @property
    def headline_verdict(self) -> Verdict | str:
        """The step summary's count: a pass with an inconclusive peer gate is inconclusive there."""
        if self.verdict in (Verdict.PASS, Verdict.IMPROVED) and self.held_peers:
            return Verdict.INCONCLUSIVE
        return self.verdict

    @property
    def verdict_cell(self) -> str:
        """``regressed (cpu_instructions)``: the verdict, with the metrics that failed it;
        ``recorded; slower than peer torch 3.10x > 1.5``: a recorded test a peer failed."""
        if self.verdict == Verdict.RECORDED and peer_failures(self.peers):
            return f"{self.verdict}; {peer_failures(self.peers)}"
        return f"{self.verdict} ({', '.join(self.failed)})" if self.failed else str(self.verdict)

    @property
    def cpu_cell(self) -> str:
        """The simulated instruction count now/base (``5.17 k/4.99 k``), ``n/a`` unmeasured."""
        if self.cpu_instructions is None:
            return "n/a"
        base = "-" if self.baseline_cpu_instructions is None else fmt_count(self.baseline_cpu_instructions)
        return f"{fmt_count(self.cpu_instructions)}/{base}".replace(" ", "")

    def column_cells(self, column: str) -> list[str]:
        """The cells of the resources shown in ``column`` (values/resources.py), in their order:
        ``n/a`` for one not read, but a prefixed one (``gpu ...``) only where it was."""
        cells = []
        for metric in RESOURCE_METRICS:
            value = self.resources.get(metric.name)
            if metric.column == column and (value is not None or not metric.cell_prefix):
                cells.append(metric.cell_prefix + fmt_kib(value))
        return cells

    def shows(self, column: str) -> bool:
        """Some resource of ``column`` was read for this row."""
        return any(self.resources.get(m.name) is not None for m in RESOURCE_METRICS if m.column == column)

    @property
    def resources_cell(self) -> str:
        """Run-time allocations and code size, ``10.5KiB/13.6KiB`` (``n/a`` for one not read)."""
        return "/".join(self.column_cells("alloc/code"))

    @property
    def peak_cell(self) -> str:
        """The peak memory of one call, ``4.01MiB`` (``gpu 12MiB`` added where a GPU's was read)."""
        return " ".join(self.column_cells("peak"))


def fmt_kib(value: int | None) -> str:
    """``10.5KiB``, ``512B``; ``n/a`` for None."""
    if value is None:
        return "n/a"
    if value < 1024:
        return f"{value}B"
    for unit in ("KiB", "MiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.3g}{unit}"
    return f"{value / 1024:.3g}GiB"


def _count(record: Record | None, metric: str) -> int | None:
    value = record.exact.scalar(metric) if record is not None else None
    return None if value is None else int(value)


def limit_sign(status: str) -> str:
    """How a ratio's interval stands against its limit, as its verdict says: ``<=`` pass, ``>``
    exceeded, else ``vs`` (crossing it, or held): ``2.65x [2.26-3.10] vs 3 inconclusive``."""
    return {Verdict.PASS: "<=", Verdict.EXCEEDED: ">"}.get(Verdict.known(str(status)), "vs")  # type: ignore[call-overload]


def _peer_cell(p: PeerCell | None) -> str:
    if p is None:
        return "-"
    gate = "" if p.limit is None else f" {limit_sign(p.status)} {p.limit:g} {p.status}"
    return f"{p.ratio:.2f}x [{p.low:.2f}-{p.high:.2f}]{gate}"


def peer_cells(rows: Sequence[SummaryRow]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and body of the peer ratio table: one row per test with peers, one column per peer."""
    with_peers = [r for r in rows if r.peers]
    names = sorted({p.name for r in with_peers for p in r.peers})
    body = []
    for r in with_peers:
        cells = {p.name: p for p in r.peers}
        body.append((r.test, fmt_time(r.median_s), *(_peer_cell(cells.get(n)) for n in names)))
    return ("test", "tvm", *(f"tvm/{n}" for n in names)), body


def peer_table(rows: Sequence[SummaryRow]) -> list[str]:
    """TVM time over each peer framework's, timed side by side: one row per test, one column per peer."""
    header, body = peer_cells(rows)
    return text_table(header, body) if body else []


def peer_lines(verdicts: Iterable[RatioVerdict]) -> list[str]:
    """One line per peer for a test's message: 'TVM 2.00x torch's time (...); limit 1.2x: exceeded'."""
    return [
        f"  TVM {fmt_time(v.numerator_s)} vs {v.name} {fmt_time(v.denominator_s)}: {v.describe()} of {v.name}'s time"
        + ("" if v.limit is None else f"; limit {v.limit:g}x: {v.status}")
        for v in verdicts
    ]


def relation_message(
    label: str, verdict: RatioVerdict, exact_a: ExactMetrics, exact_b: ExactMetrics, notes: Sequence[str] = ()
) -> str:
    """The message of ``tvmperf.assert_ratio``: the ratio, its interval and limit, and both sides' exact metrics."""
    word = {Verdict.EXCEEDED: "is more than", Verdict.PASS: "is within", Verdict.INCONCLUSIVE: "cannot be told against"}
    lines = [
        f"tvmperf: {label}: time ratio {verdict.describe()} {word[verdict.status]} the limit {verdict.limit:g}x",
        f"  {fmt_time(verdict.numerator_s)} vs {fmt_time(verdict.denominator_s)} "
        f"({'own run time ' if verdict.by_own_run_time else ''}medians, measured side by side)",
    ]
    for metric in ("instructions", "calls", "kernels", "storage_bytes"):
        a, b = exact_a.scalar(metric), exact_b.scalar(metric)
        if a is not None or b is not None:
            lines.append(f"  {metric}: {fmt_number(a)} vs {fmt_number(b)}")
    diff = count_diff(exact_b.by_callee, exact_a.by_callee)
    if diff:
        lines.append(f"  instructions by callee, left vs right: {diff}")
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)


def _ratio_cell(r: SummaryRow) -> str:
    if r.ratio is not None and r.low is not None and r.high is not None:  # marked where decided on own run time
        own = f", {OWN_RUN_TIME}" if r.estimate == OWN_RUN_TIME else ""
        return f"{r.ratio:.2f}x [{r.low:.2f}-{r.high:.2f}] {r.mode}{own}"
    if r.ratio is None and r.mode == SAME_PROGRAM_CELL:  # no ratio was measured (the baseline's own program): say why
        return r.mode
    if r.median_s and r.baseline_s:
        return f"{r.median_s / r.baseline_s:.2f}x"
    return "-"


def _instr_cell(r: SummaryRow) -> str:
    if r.instructions is None:
        return "n/a"
    return f"{r.instructions}/{'-' if r.baseline_instructions is None else r.baseline_instructions}"


def row_cells(r: SummaryRow) -> list[str]:
    """The cells from executor to instructions, of the summary table and of the step summary."""
    return [r.executor, r.target, fmt_time(r.median_s), fmt_time(r.baseline_s), _ratio_cell(r), _instr_cell(r)]


def summary_table(rows: Sequence[SummaryRow]) -> list[str]:
    """The end-of-run table (optional columns where some row has them), then each row's compile_s."""
    sim = any(r.cpu_instructions is not None for r in rows)
    res = any(r.shows("alloc/code") for r in rows)
    peak = any(r.shows("peak") for r in rows)
    optional = ((sim, "cpu_instr now/base"), (res, "alloc/code"), (peak, "peak"))
    header = (
        *("test", "executor", "target", "median", "baseline", "ratio [CI]", "instr now/base"),
        *(title for shown, title in optional if shown),
        "verdict",
    )
    body = []
    for r in rows:
        extra = (cell for cell, shown in ((r.cpu_cell, sim), (r.resources_cell, res), (r.peak_cell, peak)) if shown)
        body.append((r.test, *row_cells(r), *extra, r.verdict_cell))
    return text_table(header, body) + [f"compile_s {r.test}: {r.compile}" for r in rows if r.compile]


def summary_legend(rows: Iterable[SummaryRow]) -> list[str]:
    """What the median and baseline columns are, where a row was timed side by side or on own run time."""
    rows = list(rows)
    lines = []
    if any(r.mode.startswith("a/b") for r in rows):
        lines.append(
            "median, baseline: rows marked a/b show this run's medians of the current build and of the "
            "baseline's program (its saved artifact, or its IR rebuilt here) timed side by side (what the ratio "
            "compares); other rows the baseline's stored median"
        )
    if any(r.estimate == OWN_RUN_TIME for r in rows):
        lines.append(
            f"rows marked {OWN_RUN_TIME} (a busy machine): the ratio and this run's medians are each side's own "
            f"run time (wall time less its own threads' CPU wait), from the rounds the ratio was judged on"
        )
    return lines


def inconclusive_line(rows: Iterable[SummaryRow], verbosity: int, policy: str) -> list[str]:
    """One line for all inconclusive tests (their details are warnings from ``-v`` on)."""
    count = sum(r.verdict == Verdict.INCONCLUSIVE for r in rows)
    if not count or policy != "warn":
        return []
    where = "above, as warnings" if verbosity > 0 else "with -v"
    return [
        f"tvmperf: {count} test(s) inconclusive (the noise is larger than the threshold, or the evidence could "
        f"not be trusted; see the notes): not failed; each test's details {where}; "
        f"--tvmperf-inconclusive=fail fails them"
    ]


def untuned_line(nodeids: Sequence[str], command: str, invocation_dir=None, rootpath=None) -> str:
    """One line for the tuned tests skipped as their tuning database has other CPUs' records only."""
    moved = invocation_dir is not None and rootpath is not None
    moved = moved and os.path.realpath(invocation_dir) != os.path.realpath(rootpath)
    shown = []
    for nodeid in dict.fromkeys(nodeids):
        if moved:
            file, sep, rest = nodeid.partition("::")
            nodeid = os.path.relpath(os.path.join(rootpath, file), invocation_dir) + sep + rest
        shown.append(shlex.quote(nodeid))
    listed = " ".join(shown[:4]) + (" ..." if len(shown) > 4 else "")
    return (
        f"tvmperf: {len(shown)} tuned test(s) skipped: the tuning database has records for other CPUs only; "
        f"to tune and record them on this machine (minutes per workload): {command} {listed}"
    )


#: a program of at least this many kernels (a network) gets its "most time" line
HOT_MIN_KERNELS = 4


def hot_kernels(kernel_time_s: Mapping[str, float] | None, top: int = 3) -> str:
    """The kernels that take most of the time in a run's callees: ``conv2d14 26%, conv2d9 23%, conv2d19
    12% (of 49 callees)``; "" under :data:`HOT_MIN_KERNELS` callees timed."""
    times = {k: float(v) for k, v in (kernel_time_s or {}).items() if v and v > 0}
    total = sum(times.values())
    if len(times) < HOT_MIN_KERNELS or total <= 0:
        return ""
    ranked = sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    shares = ", ".join(f"{name} {100 * t / total:.0f}%" for name, t in ranked)
    return f"{shares} (of {len(times)} callees)"


def hot_lines(rows: Iterable[SummaryRow]) -> list[str]:
    """One ``most time:`` line per network test: which kernels to look at first."""
    return [f"most time: {r.test}: {r.hot}" for r in rows if r.hot]


def summary_notes(rows: Iterable[SummaryRow]) -> list[str]:
    """One line per distinct note (e.g. why time was not gated), with its count."""
    counts = Counter(r.note for r in rows if r.note)
    return [f"{n} test(s): {note}" for note, n in sorted(counts.items())]
