"""The upgrade summary's part of the run's report files (a ``ReportSection``, handed once
to the writer, report/outputs.py, at the end of the run):

- results JSON (``--tvmperf-json``): a top-level ``"upgrade"`` object, ``{"today",
  "other", "counts": {class: n}, "tests": [{"test", "class", "line", "ratio", "low",
  "high", "past_threshold"}]}``, largest time changes first; each test's own entry has
  the other version's record as its ``baseline`` and its verdict line as its ``note``;
- HTML (``--tvmperf-html``): the summary and a chart of today's time over the other
  version's per test, with its interval;
- pytest-benchmark JSON: both sides of each test, named by version
  (``test_x[llvm-vm-bytecode] [TVM 0.26.0]``), in one group per test.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from pytest_tvmperf.against.upgrade import MODE_PREFIX, UpgradeSummary

if TYPE_CHECKING:
    from pytest_tvmperf.result.run_report import ReportSection
    from pytest_tvmperf.result.entry import ResultEntry


def benchmark_sides(bench: dict[str, Any], entries: Sequence["ResultEntry"], today: str, other: str) -> dict[str, Any]:
    """``bench`` with each compared test as two benchmarks named by TVM version."""
    from pytest_tvmperf.report.benchmark_json import benchmark_entry

    by_node = {(e.nodeid, e.test_id or e.nodeid.split("::", 1)[-1]): e for e in entries}
    out = []
    for item in bench.get("benchmarks", []):
        entry = by_node.get((item.get("fullname"), item.get("name")))
        mode = str(item.get("extra_info", {}).get("tvmperf_mode", ""))
        if entry is None or not mode.startswith(MODE_PREFIX) or entry.time is None:
            out.append(item)
            continue
        name = item["name"]
        mine = {"group": name, "name": f"{name} [TVM {today}]"}
        out.append({**item, **mine, "extra_info": {**item["extra_info"], "tvm_version": today}})
        if entry.time.baseline_samples_s:
            theirs = benchmark_entry(replace(entry, time=replace(entry.time, samples_s=entry.time.baseline_samples_s)))
            if theirs is not None:
                named = {"group": name, "name": f"{name} [TVM {other}]", "fullname": f"{entry.nodeid} [TVM {other}]"}
                out.append({**theirs, **named, "extra_info": {"tvm_version": other, "side_by_side_with": today}})
    return {**bench, "benchmarks": out}


def upgrade_section(summary: UpgradeSummary, entries: Sequence["ResultEntry"]) -> "ReportSection | None":
    """The upgrade summary's part of each report file; None when no test was compared."""
    from pytest_tvmperf.report.html_parts import esc
    from pytest_tvmperf.report.html_plot import ratio_plot
    from pytest_tvmperf.result.run_report import ReportSection

    if not summary.rows:
        return None
    compared = [e for e in entries if e.time is not None and (e.time.mode or "").startswith(MODE_PREFIX)]
    chart = ratio_plot(compared).replace(
        "Time now vs baseline", f"Time with TVM {summary.today} / time with TVM {summary.other}, side by side"
    )
    items = "".join(f"<li><code>{esc(line.strip())}</code></li>" for line in summary.lines(limit=200)[1:])
    return ReportSection(
        json={"upgrade": summary.to_json()},
        html=f'<section id="upgrade"><h2>Upgrade: TVM {esc(summary.other)} &rarr; {esc(summary.today)}</h2>'
        f"<p>{esc(summary.headline())}</p><ul>{items}</ul></section>{chart}",
        benchmark=lambda bench: benchmark_sides(bench, entries, summary.today, summary.other),
    )
