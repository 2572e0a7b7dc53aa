"""The HTML report (pure): structure, escaping, plots, self-containment."""

from __future__ import annotations

import copy
import math
import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tvmperf.report.html_report import render_html
from pytest_tvmperf.report.html_parts import NEUTRAL, NEUTRAL_MARK, VERDICT_COLOURS
from pytest_tvmperf.report.html_plot import MAX_KERNELS, axis_ends
from pytest_tvmperf.values.exact_metrics import ExactMetrics
from pytest_tvmperf.values.record import Record

SVG_NS = "http://www.w3.org/2000/svg"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

# --------------------------------------------------------------------------- a strict little DOM


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: "Node | None") -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.text = ""

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list["Node"]:
        out = []
        for n in self.iter():
            if n is self or (tag is not None and n.tag != tag):
                continue
            if all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(n)
        return out

    def has_class(self, name: str) -> bool:
        return name in (self.attrs.get("class") or "").split()

    def classed(self, name: str, tag: str | None = None) -> list["Node"]:
        return [n for n in self.find_all(tag) if n.has_class(name)]


class StrictTree(HTMLParser):
    """Parses the page into Nodes and fails on any end tag that does not close the element
    opened last: the report must be well nested."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.stack[-1])
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.stack[-1])
        self.stack[-1].children.append(node)

    def handle_endtag(self, tag):
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data):
        for node in self.stack:
            node.text += data


def parse(page: str) -> Node:
    tree = StrictTree()
    tree.feed(page)
    tree.close()
    assert [n.tag for n in tree.stack] == ["#root"], "unclosed elements at the end of the page"
    return tree.root


def plots(root: Node, kind: str) -> list[Node]:
    return [n for n in root.classed("tvmperf-plot", "svg") if n.attrs.get("data-kind") == kind]


def table_rows(root: Node) -> list[Node]:
    (table,) = root.find_all("table", id="tvmperf-table")
    (tbody,) = table.find_all("tbody")
    return [n for n in tbody.children if n.tag == "tr"]


# --------------------------------------------------------------------------- synthetic results


def rec(instructions: dict | None) -> dict:
    """A record's JSON with these instruction counts per function (None: n/a)."""
    return Record("w", "vm-bytecode", {"kind": "llvm"}, "0.27", ExactMetrics(instructions=instructions)).as_json()


def entry(
    test_id: str,
    verdict: str = "pass",
    *,
    ratio: float | None = 1.0,
    low: float | None = None,
    high: float | None = None,
    median: float | None = 1e-3,
    baseline_s: float | None = 1e-3,
    mode: str | None = "a/b",
    instr=17,
    base_instr=17,
    kernels=None,
    timed: bool = True,
    nodeid: str | None = None,
    **extra,
):
    time = None
    if timed:
        time = {
            "median_s": median,
            "baseline_s": baseline_s,
            "ratio": ratio,
            "low": (ratio * 0.95 if ratio is not None else None) if low is None else low,
            "high": (ratio * 1.05 if ratio is not None else None) if high is None else high,
            "mode": mode,
            "confidence": 0.95,
            "samples_s": [median] * 3,
            "baseline_samples_s": None,
        }
    out = {
        "nodeid": nodeid or f"tests/perf/test_w.py::{test_id}",
        "test_id": test_id,
        "executor": "vm-bytecode",
        "target": "llvm",
        "verdict": verdict,
        "note": "",
        "time": time,
        "kernels": kernels or [],
        "record": rec(None if instr is None else {"main": instr}),
        "baseline": rec(None if base_instr is None else {"main": base_instr}),
    }
    out.update(extra)
    return out


def results(*tests, created: str = "2025-06-01T12:00:00+00:00"):
    return {"schema_version": 1, "kind": "pytest-tvmperf-results", "created": created, "tests": list(tests)}


KERNELS = [
    {"name": "fused_matmul_add", "time_s": 4e-3, "baseline_time_s": 2e-3},
    {"name": "transpose", "time_s": 1e-3, "baseline_time_s": None},
    {"name": "fused_relu", "time_s": 5e-4, "baseline_time_s": 6e-4},
]


def mixed():
    return results(
        entry("test_a[llvm-vm-bytecode]", "pass", ratio=1.01),
        entry(
            "test_b[llvm-vm-bytecode]",
            "regressed",
            ratio=2.1,
            low=1.9,
            high=2.3,
            median=7e-3,
            baseline_s=3.3e-3,
            mode="normalized",
            instr=28,
            base_instr=17,
            kernels=KERNELS,
        ),
        entry("test_c[llvm-vm-compiled]", "inconclusive", ratio=1.09, low=0.98, high=1.22, instr=None, base_instr=None),
        entry(
            "test_d[llvm-prim]",
            "improved",
            ratio=0.6,
            low=0.55,
            high=0.66,
            instr=None,
            base_instr=None,
            kernels=[{"name": "k", "time_s": 1e-3, "baseline_time_s": 2e-3}],
        ),
        entry("test_e[llvm-prim]", "no baseline", timed=False, instr=None, base_instr=None),
        entry("test_f[llvm-vm-bytecode]", "regressed", ratio=None, median=2e-3, baseline_s=1e-3, kernels=[]),
    )


# --------------------------------------------------------------------------- page and table


def test_page_is_well_formed_and_has_a_title_with_the_run_time():
    page = render_html(mixed())
    assert page.startswith("<!DOCTYPE html>")
    root = parse(page)
    (title,) = root.find_all("title")[:1]
    assert "2025-06-01T12:00:00+00:00" in title.text
    (h1,) = root.find_all("h1")
    assert "report" in h1.text
    assert "2025-06-01T12:00:00+00:00" in root.find_all("header")[0].text


def test_header_counts_tests_by_verdict():
    root = parse(render_html(mixed()))
    counts = {li.attrs["data-verdict"]: li.find_all("b")[0].text for li in root.classed("count", "li")}
    assert counts == {"regressed": "2", "inconclusive": "1", "improved": "1", "pass": "1", "no baseline": "1"}
    # worst first
    assert list(counts)[:4] == ["regressed", "inconclusive", "improved", "pass"]


@pytest.mark.parametrize("n", [0, 1, 6, 25])
def test_table_has_one_row_per_test(n):
    data = results(*(entry(f"test_{i}[llvm-prim]", ratio=1 + i / 100) for i in range(n)))
    root = parse(render_html(data))
    assert len(root.find_all("table", id="tvmperf-table")) == 1
    rows = table_rows(root)
    assert len(rows) == n
    assert [r.children[0].text for r in rows] == [f"test_{i}[llvm-prim]" for i in range(n)]


def test_table_cells():
    root = parse(render_html(mixed()))
    rows = {r.children[0].text: [c.text for c in r.children] for r in table_rows(root)}
    b = rows["test_b[llvm-vm-bytecode]"]
    assert b[1:5] == ["vm-bytecode", "llvm", "7 ms", "3.3 ms"]
    assert b[5] == "2.10x [1.90\u20132.30]normalized"
    assert b[6] == "28 / 17"
    assert b[7] == "regressed"
    c = rows["test_c[llvm-vm-compiled]"]
    assert c[6] == "n/a"
    e = rows["test_e[llvm-prim]"]
    assert e[3:6] == ["-", "-", "-"]
    # no ratio in the verdict: the ratio of the medians
    assert rows["test_f[llvm-vm-bytecode]"][5] == "2.00x"


def test_instructions_sum_over_functions_and_null_is_na():
    data = results(
        entry("t1", instr=None, base_instr=None),
        entry("t2"),
        entry("t3", record=None, baseline=None),
        entry("t4", record=rec({"main": 10, "helper": 7}), baseline=rec({"main": 9, "helper": 7})),
        entry("t5", record=rec({"main": 12}), baseline=None),
        entry("t6", record={}, baseline={"exact": {}}),
    )
    rows = [r.children[6].text for r in table_rows(parse(render_html(data)))]
    assert rows == ["n/a", "17 / 17", "n/a", "17 / 16", "12 / n/a", "n/a"]


@pytest.mark.parametrize(
    ("verdict", "colour"),
    [
        ("regressed", VERDICT_COLOURS["regressed"][0]),
        ("inconclusive", VERDICT_COLOURS["inconclusive"][0]),
        ("improved", VERDICT_COLOURS["improved"][0]),
        ("pass", VERDICT_COLOURS["pass"][0]),
        ("no baseline", NEUTRAL[0]),
        ("failed", NEUTRAL[0]),
    ],
)
def test_verdict_pill_colour(verdict, colour):
    (row,) = table_rows(parse(render_html(results(entry("t", verdict)))))
    (pill,) = row.classed("pill")
    assert pill.text == verdict
    assert f"background:{colour}" in pill.attrs["style"]


def test_verdict_colours_are_the_agreed_hues():
    def rgb(hex_colour):
        return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))

    r, g, b = rgb(VERDICT_COLOURS["regressed"][0])
    assert r > 180 and g < 80 and b < 80  # red
    r, g, b = rgb(VERDICT_COLOURS["inconclusive"][0])
    assert r > 200 and 120 < g < 200 and b < 60  # amber
    r, g, b = rgb(VERDICT_COLOURS["improved"][0])
    assert g > 140 and r < 100 and b < 100  # green
    r, g, b = rgb(VERDICT_COLOURS["pass"][0])
    assert max(r, g, b) - min(r, g, b) < 24  # grey
    assert len({c for c, _ in VERDICT_COLOURS.values()} | {NEUTRAL[0]}) == 5


# --------------------------------------------------------------------------- escaping

EVIL = '<script>alert("x")</script>'


def test_text_is_escaped_everywhere():
    evil_kernel = {"name": '<img src=x onerror="alert(1)">', "time_s": 2e-3, "baseline_time_s": 1e-3}
    data = results(
        entry(
            f"test_x[{EVIL}]",
            "regressed",
            ratio=1.5,
            nodeid=f'tests/t.py::test_x["onmouseover="{EVIL}]',
            mode=f"a/b{EVIL}",
            kernels=[evil_kernel],
            note=f"note {EVIL}",
            executor=f"e{EVIL}",
            target=f"t{EVIL}",
        ),
        entry("test_y", f"odd{EVIL}", ratio=0.9),
        created=f"2025<em>{EVIL}",
    )
    history = [
        {
            "created": f"h{EVIL}",
            "tests": {f'tests/t.py::test_x["onmouseover="{EVIL}]': {"median_s": 1e-3, "verdict": EVIL}},
        }
    ]
    page = render_html(data, history)
    assert "<script" not in page
    assert "<img" not in page
    assert "<em>" not in page
    assert '"onmouseover=' not in page
    root = parse(page)
    assert not root.find_all("script") and not root.find_all("img") and not root.find_all("em")
    # the text is shown, as text
    (first, second) = table_rows(root)
    assert first.children[0].text.startswith(f"test_x[{EVIL}]")
    assert f"note {EVIL}" in first.children[0].text
    assert first.children[0].attrs["title"] == f'tests/t.py::test_x["onmouseover="{EVIL}]'
    assert first.children[1].text == f"e{EVIL}"
    assert second.children[7].text == f"odd{EVIL}"
    assert EVIL in root.find_all("header")[0].text
    (kernels,) = plots(root, "kernels")
    assert evil_kernel["name"] in kernels.text
    assert [t.attrs["data-test"] for t in plots(root, "trend")] == [f"test_x[{EVIL}]"]


# --------------------------------------------------------------------------- ratio plot


def _marker_x(svg: Node) -> list[float]:
    return [float(c.attrs["cx"]) for c in svg.classed("tvmperf-marker", "circle")]


def test_ratio_plot_has_one_marker_per_timed_test():
    root = parse(render_html(mixed()))
    (svg,) = plots(root, "ratio")
    # a, b, c, d have ratios; e is untimed, f has no ratio
    assert len(svg.classed("tvmperf-marker", "circle")) == 4
    assert len(svg.classed("tvmperf-interval", "line")) == 4
    rows = svg.classed("tvmperf-row", "g")
    assert [r.attrs["data-verdict"] for r in rows] == ["pass", "regressed", "inconclusive", "improved"]
    assert "test_e" not in svg.text and "test_f" not in svg.text
    assert svg.attrs["xmlns"] == SVG_NS


def test_ratio_plot_geometry():
    root = parse(render_html(mixed()))
    (svg,) = plots(root, "ratio")
    (unity,) = svg.classed("tvmperf-unity", "line")
    x1 = float(unity.attrs["x1"])
    assert float(unity.attrs["x2"]) == x1  # vertical
    assert "1.0x" in svg.text
    xs = dict(zip(["a", "b", "c", "d"], _marker_x(svg)))
    assert xs["d"] < x1 < xs["b"]  # 0.6 left of 1.0, 2.1 right of it
    assert xs["d"] < xs["a"] < xs["c"] < xs["b"]
    width = float(svg.attrs["viewbox"].split()[2])  # html.parser lowercases attribute names
    assert all(0 <= x <= width for x in xs.values())
    for row in svg.classed("tvmperf-row", "g"):
        (marker,) = row.classed("tvmperf-marker")
        (interval,) = row.classed("tvmperf-interval")
        assert float(interval.attrs["x1"]) <= float(marker.attrs["cx"]) <= float(interval.attrs["x2"])
        colour = VERDICT_COLOURS[row.attrs["data-verdict"]][0]
        assert marker.attrs["fill"] == colour


def test_ratio_plot_shortens_long_ids_in_the_middle_and_keeps_them_whole_in_the_tooltip():
    long_id = "test_" + "x" * 100 + "[llvm-vm-bytecode-runtime-weights]"
    (svg,) = plots(parse(render_html(results(entry(long_id, ratio=1.1)))), "ratio")
    (row,) = svg.classed("tvmperf-row", "g")
    label = row.find_all("text")[0].text
    assert len(label) <= 60 and label.startswith("test_xxx") and label.endswith("runtime-weights]")
    assert long_id in row.find_all("title")[0].text


def test_ratio_plot_is_log_scaled():
    data = results(
        entry("half", ratio=0.5, low=0.5, high=0.5),
        entry("double", ratio=2.0, low=2.0, high=2.0),
        entry("one", ratio=1.0, low=1.0, high=1.0),
    )
    (svg,) = plots(parse(render_html(data)), "ratio")
    half, double, one = _marker_x(svg)
    assert one - half == pytest.approx(double - one, abs=0.2)


def test_ratio_plot_absent_without_timed_tests():
    root = parse(render_html(results(entry("t", timed=False), entry("u", ratio=None))))
    assert plots(root, "ratio") == []
    assert "No test has a time ratio" in root.text


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0, -1.0, "1.2", True])
def test_ratio_plot_skips_unusable_ratios(bad):
    data = results(entry("good", ratio=1.2), entry("bad", ratio=1.0, low=0.9, high=1.1))
    data["tests"][1]["time"]["ratio"] = bad
    (svg,) = plots(parse(render_html(data)), "ratio")
    assert len(svg.classed("tvmperf-marker")) == 1
    assert [r.attrs["data-verdict"] for r in svg.classed("tvmperf-row")] == ["pass"]
    values = [v.lower() for n in svg.iter() for v in n.attrs.values() if v]
    assert not [v for v in values if "nan" in v or "inf" in v]


# --------------------------------------------------------------------------- kernel bars


def test_kernel_bars_only_for_regressed_tests_with_kernels():
    root = parse(render_html(mixed()))
    charts = plots(root, "kernels")
    # b: regressed with kernels; d: improved with kernels (no chart); f: regressed without kernels (no chart)
    assert [c.attrs["data-test"] for c in charts] == ["test_b[llvm-vm-bytecode]"]
    (chart,) = charts
    assert len(chart.classed("tvmperf-kernel", "g")) == 3
    assert len(chart.classed("tvmperf-bar-now", "rect")) == 3
    assert len(chart.classed("tvmperf-bar-baseline", "rect")) == 2  # transpose has no baseline
    assert "no baseline" in chart.text
    for name in ("fused_matmul_add", "transpose", "fused_relu"):
        assert name in chart.text


def test_kernel_bar_lengths_follow_times():
    root = parse(render_html(mixed()))
    (chart,) = plots(root, "kernels")
    now = [float(r.attrs["width"]) for r in chart.classed("tvmperf-bar-now")]
    base = [float(r.attrs["width"]) for r in chart.classed("tvmperf-bar-baseline")]
    # 4 ms, 1 ms, 0.5 ms now; 2 ms and 0.6 ms before
    assert now[0] == pytest.approx(4 * now[1], rel=0.01) == pytest.approx(8 * now[2], rel=0.01)
    assert base[0] == pytest.approx(now[0] / 2, rel=0.01)
    assert base[1] == pytest.approx(now[2] * 1.2, rel=0.01)
    # the slower kernel in red, the faster one grey, the one without a baseline neutral
    fills = [r.attrs["fill"] for r in chart.classed("tvmperf-bar-now")]
    assert fills == [VERDICT_COLOURS["regressed"][0], NEUTRAL_MARK, VERDICT_COLOURS["pass"][0]]


def test_kernel_chart_without_any_baseline_times_and_with_many_kernels():
    kernels = [{"name": f"kernel{i}", "time_s": (40 - i) * 1e-5, "baseline_time_s": None} for i in range(40)]
    (chart,) = plots(parse(render_html(results(entry("t", "regressed", ratio=1.5, kernels=kernels)))), "kernels")
    assert len(chart.classed("tvmperf-bar-now")) == MAX_KERNELS
    assert chart.classed("tvmperf-bar-baseline") == []
    assert "no baseline" not in chart.text  # said once, above the chart
    card = chart.parent
    assert "the baseline has no per-kernel times" in card.text
    assert f"{40 - MAX_KERNELS} more kernels not shown" in card.text
    assert "kernel0" in chart.text and f"kernel{MAX_KERNELS}" not in chart.text


@pytest.mark.parametrize(
    "kernels", [None, [], "oops", [{"name": "k"}], [{"name": "k", "time_s": None, "baseline_time_s": None}]]
)
def test_no_kernel_chart_without_usable_kernels(kernels):
    data = results(entry("t", "regressed", ratio=2.0))
    if kernels is None:
        del data["tests"][0]["kernels"]
    else:
        data["tests"][0]["kernels"] = kernels
    assert plots(parse(render_html(data)), "kernels") == []


# --------------------------------------------------------------------------- trends


def history_of(n: int, nodeids, median=1e-3):
    return [
        {
            "created": f"2025-05-{10 + i:02d}T00:00:00+00:00",
            "tests": {nid: {"median_s": median * (1 + i / 10), "verdict": "pass"} for nid in nodeids},
        }
        for i in range(n)
    ]


def test_no_trends_without_history():
    root = parse(render_html(mixed()))
    assert plots(root, "trend") == []
    assert plots(parse(render_html(mixed(), [])), "trend") == []


def test_trend_per_test_with_history():
    data = mixed()
    nodeids = [t["nodeid"] for t in data["tests"]]
    root = parse(render_html(data, history_of(4, nodeids)))
    trends = plots(root, "trend")
    # every test has medians in the history (test_e too, though it has none now)
    assert [t.attrs["data-test"] for t in trends] == [t["test_id"] for t in data["tests"]]
    first = trends[0]
    (line,) = first.classed("tvmperf-trend-line", "polyline")
    assert len(line.attrs["points"].split()) == 5  # 4 earlier runs and this one
    assert len(first.classed("tvmperf-trend-point", "circle")) == 5
    ys = [float(p.split(",")[1]) for p in line.attrs["points"].split()]
    assert ys[:4] == sorted(ys[:4], reverse=True)  # rising medians go up the page
    xs = [float(p.split(",")[0]) for p in line.attrs["points"].split()]
    assert xs == sorted(xs)
    # test_e has no time now: its line stops at the last run that had one
    (e_line,) = trends[4].classed("tvmperf-trend-line")
    assert len(e_line.attrs["points"].split()) == 4


def test_trend_only_for_tests_with_a_median_in_two_runs():
    data = results(entry("t1"), entry("t2", timed=False), entry("t3"))
    history = [
        {
            "created": "c1",
            "tests": {
                data["tests"][0]["nodeid"]: {"median_s": 1e-3, "verdict": "pass"},
                data["tests"][1]["nodeid"]: {"median_s": 1e-3, "verdict": "pass"},
            },
        }
    ]
    trends = plots(parse(render_html(data, history)), "trend")
    assert [t.attrs["data-test"] for t in trends] == ["t1"]  # t2: no time now; t3: new


def test_first_run_of_a_history_has_no_trend_yet():
    data = results(entry("t1"), created="c1")
    history = [{"created": "c1", "tests": {data["tests"][0]["nodeid"]: {"median_s": 1e-3, "verdict": "pass"}}}]
    root = parse(render_html(data, history))
    assert plots(root, "trend") == []
    assert "no trend to draw" in root.text


def test_trend_breaks_at_missing_runs_and_does_not_repeat_this_run():
    data = results(entry("t1", median=3e-3), created="c4")
    nid = data["tests"][0]["nodeid"]
    history = [
        {"created": "c1", "tests": {nid: {"median_s": 1e-3, "verdict": "pass"}}},
        {"created": "c2", "tests": {}},
        {"created": "c3", "tests": {nid: {"median_s": 2e-3, "verdict": "regressed"}}},
        {"created": "c4", "tests": {nid: {"median_s": 3e-3, "verdict": "pass"}}},  # this run, already there
    ]
    (trend,) = plots(parse(render_html(data, history)), "trend")
    lines = trend.classed("tvmperf-trend-line")
    assert [len(line.attrs["points"].split()) for line in lines] == [2]  # c3-c4; c1 stands alone
    points = trend.classed("tvmperf-trend-point")
    assert len(points) == 3
    assert points[1].attrs["fill"] == VERDICT_COLOURS["regressed"][0]


# --------------------------------------------------------------------------- self-contained


def _assert_self_contained(page: str) -> None:
    assert re.findall(r"https?://[^\s\"'<>]*", page) == [SVG_NS] * len(re.findall(r"https?://", page))
    lowered = page.lower()
    for banned in (
        "<script",
        "<link",
        "@import",
        "url(",
        "<img",
        "<iframe",
        "<object",
        "<embed",
        "src=",
        "href=",
        "javascript:",
        "@font-face",
    ):
        assert banned not in lowered, banned


def test_page_is_self_contained():
    data = mixed()
    page = render_html(data, history_of(3, [t["nodeid"] for t in data["tests"]]))
    _assert_self_contained(page)
    root = parse(page)
    assert {n.tag for n in root.iter()}.isdisjoint({"script", "link", "img", "iframe", "object", "embed"})
    styles = root.find_all("style")
    assert len(styles) == 1 and "font-family" in styles[0].text
    assert len(plots(root, "ratio")) == 1 and len(plots(root, "kernels")) == 1 and len(plots(root, "trend")) == 6
    assert all(svg.attrs["xmlns"] == SVG_NS for svg in root.find_all("svg"))


# --------------------------------------------------------------------------- robustness and purity


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"tests": None},
        {"tests": [{}]},
        {"tests": [{"nodeid": "a::b"}], "created": None},
        {"tests": [{"nodeid": "a::b", "time": {"ratio": 1.3}, "verdict": "regressed", "kernels": [{"time_s": 1e-3}]}]},
        {"tests": ["not a dict", {"nodeid": "x", "time": "??", "record": [], "baseline": 3}]},
    ],
)
def test_missing_and_odd_keys_are_tolerated(data):
    page = render_html(data, [{"created": None}, "junk", {"tests": {"a::b": {"median_s": "x"}}}])
    root = parse(page)
    expected = sum(isinstance(t, dict) for t in (data.get("tests") or []))
    assert len(table_rows(root)) == expected
    _assert_self_contained(page)


def test_render_is_pure_and_deterministic():
    data = mixed()
    history = history_of(3, [t["nodeid"] for t in data["tests"]])
    before = copy.deepcopy((data, history))
    first = render_html(data, history)
    assert (data, history) == before
    assert render_html(data, history) == first


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
_opt_float = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True), st.floats(min_value=1e-9, max_value=1e3)
)
_test = st.fixed_dictionaries(
    {
        "nodeid": _text,
        "test_id": _text,
        "verdict": st.one_of(_text, st.sampled_from(sorted(VERDICT_COLOURS))),
        "executor": _text,
        "target": _text,
        "note": _text,
    },
    optional={
        "time": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={k: _opt_float for k in ("median_s", "baseline_s", "ratio", "low", "high")} | {"mode": _text},
            ),
        ),
        "kernels": st.lists(
            st.fixed_dictionaries({"name": _text, "time_s": _opt_float, "baseline_time_s": _opt_float}), max_size=3
        ),
        "record": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {
                    "exact": st.fixed_dictionaries(
                        {
                            "instructions": st.one_of(
                                st.none(), st.dictionaries(_text, st.integers(0, 10**6), max_size=3)
                            )
                        }
                    )
                }
            ),
        ),
    },
)


@settings(max_examples=60, deadline=None)
@given(tests=st.lists(_test, max_size=5), created=_text, with_history=st.booleans())
def test_any_results_render_one_row_per_test_and_inject_nothing(tests, created, with_history):
    history = [{"created": created, "tests": {t["nodeid"]: {"median_s": 1e-3, "verdict": t["verdict"]} for t in tests}}]
    page = render_html(results(*tests, created=created), history if with_history else None)
    root = parse(page)
    assert len(table_rows(root)) == len(tests)
    assert {n.tag for n in root.iter()} <= {
        "#root",
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "main",
        "header",
        "h1",
        "h2",
        "h3",
        "p",
        "ul",
        "li",
        "b",
        "i",
        "section",
        "div",
        "span",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "svg",
        "g",
        "rect",
        "line",
        "circle",
        "polyline",
        "text",
    }
    for svg in root.find_all("svg"):
        for node in svg.iter():
            for key in ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "width", "height"):
                if key in node.attrs and node.tag != "svg":
                    assert math.isfinite(float(node.attrs[key])), (node.tag, key, node.attrs[key])


# --------------------------------------------------------------------------- peers and relations


def test_peer_and_relation_sections():
    peers = [
        {
            "name": "torch",
            "ratio": 2.0,
            "low": 1.9,
            "high": 2.1,
            "limit": 1.2,
            "status": "exceeded",
            "numerator_s": 2e-3,
            "denominator_s": 1e-3,
        },
        {
            "name": "numpy",
            "ratio": 0.5,
            "low": 0.45,
            "high": 0.55,
            "limit": None,
            "status": "not gated",
            "numerator_s": 2e-3,
            "denominator_s": 4e-3,
        },
    ]
    relation = {
        "name": "mlp(n) / mlp(1)",
        "ratio": 1.2,
        "low": 1.1,
        "high": 1.3,
        "limit": 1.5,
        "status": "pass",
        "numerator_s": 1.2e-3,
        "denominator_s": 1e-3,
    }
    page = render_html(
        results(
            entry("test_p[llvm-vm-bytecode]", "slower than peer", peers=peers),
            entry("test_r[llvm-vm-bytecode] ratio", "pass", timed=False, relation=relation),
            entry("test_q[llvm-vm-bytecode]"),
        )
    )
    peers_html = page[page.index('id="tvmperf-peers"') : page.index("</table>", page.index('id="tvmperf-peers"'))]
    assert "tvm / numpy" in peers_html and "tvm / torch" in peers_html
    assert "2.00x [1.90-2.10] &gt; 1.2" in peers_html and "0.50x [0.45-0.55]" in peers_html
    assert "test_p[llvm-vm-bytecode]" in peers_html and "test_q" not in peers_html
    rel_html = page[page.index('id="tvmperf-relations"') :]
    assert "mlp(n) / mlp(1)" in rel_html and "1.20x [1.10-1.30] &le; 1.5" in rel_html
    plain = render_html(results(entry("test_q[llvm-vm-bytecode]")))
    assert "tvmperf-peers" not in plain and "tvmperf-relations" not in plain


# --------------------------------------------------------------------------- issue 16: friction


def test_failures_section_shows_the_message_and_the_coloured_bytecode_diff():
    message = (
        "tvmperf: instructions regressed against the baseline in p.json\n"
        "  instructions 17 -> 28 (+11, limit no increase)\n"
        "to accept these values as the new baseline: pytest --tvmperf-update 'x'\n"
        "VM bytecode, baseline -> now:\n"
        "  --- baseline @forward\n  +++ now @forward\n"
        "  -call vm.builtin.alloc_storage <x>\n  +call transpose in: %1, %8 dst: %void"
    )
    data = results(
        entry("test_a[llvm-prim]", "pass"), entry("test_b[llvm-vm-bytecode]", "regressed", ratio=2.0, message=message)
    )
    root = parse(render_html(data))
    (section,) = root.classed("failures", "section")
    (details,) = section.find_all("details")
    assert "test_b[llvm-vm-bytecode]" in details.find_all("summary")[0].text
    (pre,) = details.find_all("pre")
    assert "instructions 17 -> 28" in pre.text and "<x>" in pre.text  # escaped, shown as written
    assert [s.text.strip() for s in pre.classed("add", "span")] == ["+call transpose in: %1, %8 dst: %void"]
    assert [s.text.strip() for s in pre.classed("del", "span")] == ["-call vm.builtin.alloc_storage <x>"]
    assert "test_a[" not in section.text  # a passing test without a message is not listed


def test_no_failures_section_without_messages():
    assert parse(render_html(results(entry("test_a[llvm-prim]")))).classed("failures", "section") == []


def test_ratio_plot_caption_says_what_is_plotted():
    root = parse(render_html(mixed()))
    (section,) = root.classed("ratio", "section")
    hint = section.classed("hint", "p")[0].text
    assert "as the verdict measured it" in hint and "a/b" in hint
    assert "Median time of this run over the baseline" not in hint


def test_a_few_percent_slower_kernel_is_not_drawn_red():
    kernels = [
        {"name": "k_noise", "time_s": 1.05e-3, "baseline_time_s": 1e-3},
        {"name": "k_slow", "time_s": 2e-3, "baseline_time_s": 1e-3},
    ]
    root = parse(render_html(results(entry("test_b[llvm-vm-bytecode]", "regressed", ratio=2.0, kernels=kernels))))
    (chart,) = plots(root, "kernels")
    fills = {
        g.find_all("text")[0].text: g.classed("tvmperf-bar-now", "rect")[0].attrs["fill"]
        for g in chart.classed("tvmperf-kernel", "g")
    }
    assert fills == {"k_slow": VERDICT_COLOURS["regressed"][0], "k_noise": VERDICT_COLOURS["pass"][0]}


def _axis_labels(trend) -> list[str]:
    return [t.text for t in trend.classed("tvmperf-trend-axis", "text")]


def test_trend_of_runs_on_one_day_shows_the_date_once():
    """issue 26: a trend whose runs were all made on one day read '2025-05-10 ... 2025-05-10'."""
    data = results(entry("t1"), created="2025-05-10T13:40:00+00:00")
    nid = data["tests"][0]["nodeid"]
    history = [
        {"created": f"2025-05-10T{h:02d}:05:00+00:00", "tests": {nid: {"median_s": 1e-3, "verdict": "pass"}}}
        for h in (9, 11)
    ]
    (trend,) = plots(parse(render_html(data, history)), "trend")
    assert _axis_labels(trend) == ["2025-05-10 09:05", "13:40"]


def test_trend_over_several_days_shows_both_dates():
    data = mixed()
    (trend, *_) = plots(parse(render_html(data, history_of(4, [t["nodeid"] for t in data["tests"]]))), "trend")
    assert _axis_labels(trend)[0] == "2025-05-10"
    assert _axis_labels(trend)[1] != "2025-05-10"


@pytest.mark.parametrize(
    "first, last, labels",
    [
        ("2025-05-10T09:05:00+00:00", "2025-05-12T10:00:00+00:00", ("2025-05-10", "2025-05-12")),
        ("2025-05-10T09:05:00+00:00", "2025-05-10T13:40:59+00:00", ("2025-05-10 09:05", "13:40")),
        ("2025-05-10T09:05:00+00:00", "2025-05-10T09:05:30+00:00", ("2025-05-10 09:05", "")),
        ("c1", "c1", ("c1", "")),
        ("", "", ("", "")),
    ],
)
def test_axis_ends(first, last, labels):
    assert axis_ends(first, last) == labels


def test_large_counts_read_as_people_read_them_with_the_exact_number_on_hover():
    """Seen: a cpu_instructions cell printed ``1275084586``."""
    from pytest_tvmperf.report.html_report import _count_html

    assert _count_html(1275084586) == '<span title="1275084586">1.28 G</span>'
    assert _count_html(17) == "17" and _count_html(None) == "n/a"


def test_a_kernel_label_is_cut_between_its_parts_never_inside_a_shape():
    """Issue 47: a bar's label read 'conv2d6 (new) · conv…6x5x5) -> 1x256x7x7', cut in the
    middle of a shape. It is cut at its end, at a break between its parts; the tooltip has it all."""
    from pytest_tvmperf.report.html_parts import cut_label

    label = "conv2d6 (new) \u00b7 conv2d(1x256x7x7, 256x256x5x5, ...) -> 1x256x7x7"
    assert cut_label(label, 40) == "conv2d6 (new) \u00b7 conv2d(1x256x7x7\u2026"
    assert cut_label(label, len(label)) == label
    shapes = set(re.findall(r"\d+x\d+(?:x\d+)*", label))
    for chars in range(8, len(label)):
        cut = cut_label(label, chars)
        assert len(cut) <= chars and cut.endswith("\u2026")
        assert set(re.findall(r"\d+x\d+(?:x\d+)*", cut)) <= shapes, cut  # each shape shown is whole


def test_a_trend_marks_where_the_baseline_was_re_recorded():
    """Issue 47: the trend ran across an accepted re-record with no marker. Each history line
    names the baseline each test was compared with; where it changes, the trend marks it."""
    from pytest_tvmperf.report.history import baseline_digest, history_line
    from pytest_tvmperf.result.entry import ResultEntry

    data = results(entry("t1", base_instr=18), entry("t2"))
    t1, t2 = (t["nodeid"] for t in data["tests"])
    now = [ResultEntry.from_json(t) for t in data["tests"]]
    line = history_line(now, "2025-06-01T12:00:00+00:00")
    assert line["tests"][t1]["baseline"] == baseline_digest(now[0]) != baseline_digest(now[1])
    old = baseline_digest(ResultEntry.from_json(entry("t1", base_instr=17)))  # the baseline before its re-record
    history = history_of(3, [t1, t2])
    for run in history:  # t1 compared with its old baseline, then re-recorded before this run; t2 unchanged
        run["tests"][t1]["baseline"] = old
        run["tests"][t2]["baseline"] = baseline_digest(now[1])
    history[0]["tests"][t1].pop("baseline")  # a line written before baselines were named: no mark
    page = render_html(data, history)
    first, second = plots(parse(page), "trend")
    (mark,) = first.classed("tvmperf-rerecord", "g")
    assert "baseline re-recorded before 2025-06-01" in mark.text
    assert second.classed("tvmperf-rerecord") == []
    assert "the baseline was re-recorded (accepted) between two runs" in page
