"""The upgrade summary in the run's report files, added after they are written (at the
end of the run, by :class:`~pytest_tvmperf.against.gate.AgainstPlugin`):

- results JSON (``--tvmperf-json``): a top-level ``"upgrade"`` object,
  ``{"today", "other", "counts": {class: n}, "tests": [{"test", "class", "line", "ratio",
  "low", "high", "past_threshold"}]}``, largest time changes first; each test's own entry has the
  other version's record as its ``baseline`` and its verdict line as its ``note``;
- HTML (``--tvmperf-html``): a section with the summary and one chart, per test, of
  today's time over the other version's, with its interval;
- pytest-benchmark JSON (``--tvmperf-benchmark-json``): both sides of each test, named by
  version (``test_x[llvm-vm-bytecode] [TVM 0.26.0]``), in one group per test, so
  ``pytest-benchmark compare`` lists them side by side.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from pytest_tvmperf.against.verdict import MODE_PREFIX, UpgradeSummary

if TYPE_CHECKING:
    from pytest_tvmperf.report.results import ResultEntry


def html_section(summary: UpgradeSummary, entries: Sequence["ResultEntry"]) -> str:
    from pytest_tvmperf.report.html_parts import esc
    from pytest_tvmperf.report.html_plot import ratio_plot

    compared = [e for e in entries if e.time is not None and (e.time.mode or "").startswith(MODE_PREFIX)]
    chart = ratio_plot(compared).replace("Time now vs baseline",
                                         f"Time with TVM {summary.today} / time with TVM {summary.other}, side by side")
    items = "".join(f"<li><code>{esc(line.strip())}</code></li>" for line in summary.lines(limit=200)[1:])
    return (f'<section id="upgrade"><h2>Upgrade: TVM {esc(summary.other)} &rarr; {esc(summary.today)}</h2>'
            f"<p>{esc(summary.headline())}</p><ul>{items}</ul></section>{chart}")


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
        item = {**item, "group": name, "name": f"{name} [TVM {today}]",
                "extra_info": {**item["extra_info"], "tvm_version": today}}
        out.append(item)
        if entry.time.baseline_samples_s:
            theirs = benchmark_entry(replace(entry, time=replace(entry.time, samples_s=entry.time.baseline_samples_s)))
            if theirs is not None:
                out.append({**theirs, "group": name, "name": f"{name} [TVM {other}]", "fullname": f"{entry.nodeid} [TVM {other}]",
                            "extra_info": {"tvm_version": other, "side_by_side_with": today}})
    return {**bench, "benchmarks": out}


def amend_reports(settings, summary: UpgradeSummary, entries: Sequence["ResultEntry"]) -> None:
    """Add the upgrade summary to the report files this run wrote."""
    from pytest_tvmperf.store.files import atomic_write

    if not summary.rows:
        return
    if settings.json_path is not None and settings.json_path.is_file():
        data = json.loads(settings.json_path.read_text())
        data["upgrade"] = summary.to_json()
        atomic_write(settings.json_path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    if settings.html_path is not None and settings.html_path.is_file():
        page = settings.html_path.read_text()
        section = html_section(summary, entries)
        anchor = "</header>" if "</header>" in page else "<main>"  # after the page's header
        page = page.replace(anchor, anchor + section, 1) if anchor in page else page + section
        atomic_write(settings.html_path, page)
    if settings.benchmark_json_path is not None and settings.benchmark_json_path.is_file():
        bench = json.loads(settings.benchmark_json_path.read_text())
        atomic_write(settings.benchmark_json_path,
                     json.dumps(benchmark_sides(bench, entries, summary.today, summary.other), indent=4) + "\n")
