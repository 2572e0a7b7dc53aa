"""Pure: a test's comparison with another TVM version worded as an upgrade, and the
suite's upgrade summary:
``TVM 0.27.0 vs 0.26.0: 1.31x slower (a/b), cpu_instructions +18% (fused_matmul_add: +42%)``.
The time part is the a/b decision (today's build / the other version's, timed side by
side in one process); each exact or simulated metric that moved follows, per-kernel ones
with the kernel that moved most (matched by name; one only one side has is ``new`` or
``gone``; the VM runtime's own work outside the kernels, ``[runtime]``, is named too).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from pytest_tvmperf.values.resources import ABSOLUTE_CHANGES

#: the mode word of a time decision against another TVM version (``a/b vs TVM 0.26.0``)
MODE_PREFIX = "a/b vs TVM "
#: the summary's classes, in the order they are counted
CLASSES = ("slower", "counts worse", "faster", "same", "unclear", "exact only", "not compared")
#: the most metric changes one verdict line names
MAX_CHANGES = 4
#: a change of a count smaller than this (and within its threshold) is left out of the line
MIN_SHOWN = 0.01


def mode(other: str) -> str:
    return f"{MODE_PREFIX}{other}"


def _pct(now: float, then: float) -> str:
    if then == 0:
        return "new" if now else "+0%"
    change = now / then - 1
    return f"{change:+.0%}" if abs(change) >= 0.005 else f"{change:+.1%}"


def kernel_moved(now: Mapping[str, int] | None, then: Mapping[str, int] | None) -> str:
    """The kernel whose count moved most, ``fused_matmul_add: +42%`` (``new``/``gone``);
    "" when none moved."""
    now, then = dict(now or {}), dict(then or {})
    moved: list[tuple[float, str]] = []  # (size, words); the first of the largest wins
    for name in sorted(set(now) | set(then)):
        a, b = now.get(name), then.get(name)
        if a == b:
            continue
        if b is None:
            moved.append((float(a or 0), f"{name}: new"))
        elif a is None:
            moved.append((float(b), f"{name}: gone"))
        else:
            moved.append((float(abs(a - b)), f"{name}: {_pct(a, b)}"))
    return max(moved, key=lambda m: m[0], default=(0.0, ""))[1]


@dataclass(frozen=True)
class Change:
    """One metric that differs between today's build and the other version's."""

    metric: str
    now: float
    then: float
    status: str = ""  #: the metric's verdict (regressed fails the test by default)
    kernel: str = ""  #: the kernel that moved most (per-kernel metrics)

    def describe(self) -> str:
        if self.metric in ("instructions", "kernels", "calls", "storage_bytes") or self.metric in ABSOLUTE_CHANGES:
            text = f"{self.metric} {self.then:g} -> {self.now:g}"
        else:
            text = f"{self.metric} {_pct(self.now, self.then)}"
        return text + (f" ({self.kernel})" if self.kernel else "")


def changes(
    verdicts: Iterable[Any],
    per_kernel_now: Mapping[str, Mapping[str, int]],
    per_kernel_then: Mapping[str, Mapping[str, int]],
) -> list[Change]:
    """The metrics (other than time) whose values differ, regressed ones first, then by
    the size of the change. ``verdicts``: MetricVerdict-like (metric, status, current, baseline)."""
    out = []
    for v in verdicts:
        if v.metric == "time" or v.current is None or v.baseline is None or v.current == v.baseline:
            continue
        small = v.baseline and abs(v.current / v.baseline - 1) < MIN_SHOWN
        if small and str(v.status) not in ("regressed", "improved"):
            continue  # a count that moved within its allowance by less than 1%: not news
        kernel = kernel_moved(per_kernel_now.get(v.metric), per_kernel_then.get(v.metric))
        out.append(Change(v.metric, float(v.current), float(v.baseline), str(v.status), kernel))
    size = lambda c: abs(math.log(c.now / c.then)) if c.now > 0 and c.then > 0 else math.inf
    return sorted(out, key=lambda c: (c.status != "regressed", -size(c)))


#: a kernel whose time moved less than this (either way) is not named in the time part
MIN_KERNEL_TIME_SHOWN = 0.05


def kernel_time_moved(now: Mapping[str, float] | None, then: Mapping[str, float] | None) -> str:
    """The kernel whose time moved most, in seconds a run, ``fused_matmul_add: 1.42x``
    (``new``/``gone``); "" when no kernel moved by :data:`MIN_KERNEL_TIME_SHOWN` or more,
    or a side has no per-kernel times."""
    if not now or not then:
        return ""
    moved: list[tuple[float, str]] = []  # (size, words); the first of the largest wins
    for name in sorted(set(now) | set(then)):
        a, b = now.get(name), then.get(name)
        if b is None or b <= 0:
            moved.append((float(a or 0.0), f"{name}: new"))
        elif a is None:
            moved.append((float(b), f"{name}: gone"))
        elif not abs(a / b - 1) < MIN_KERNEL_TIME_SHOWN:
            moved.append((abs(a - b), f"{name}: {a / b:.2f}x"))
    return max((m for m in moved if m[0] > 0), key=lambda m: m[0], default=(0.0, ""))[1]


def time_words(status: str | None, ratio: float | None, kernel: str = "") -> str:
    """``1.31x slower (a/b)``, ``1.20x faster (a/b)``, ``same time (1.02x, a/b)``;
    ``kernel`` (:func:`kernel_time_moved`) is named when the time moved:
    ``1.31x slower (a/b; most in fused_matmul_add: 1.80x)``."""
    if status is None or ratio is None or ratio <= 0:
        return "time not compared"
    most = f"; most in {kernel}" if kernel else ""
    if status == "regressed":
        return f"{ratio:.2f}x slower (a/b{most})"
    if status == "improved":
        return f"{1 / ratio:.2f}x faster (a/b{most})"
    if status == "inconclusive":
        return f"{ratio:.2f}x, unclear (a/b: the noise is larger than the threshold)"
    if status == "pass":
        return f"same time ({ratio:.2f}x, a/b)"
    return f"{ratio:.2f}x ({status}, a/b)"


#: the simulated cost's metrics (measure/simulate.py): counts that tell a code change from noise
SIMULATED = ("cpu_instructions", "est_cycles")


def upgrade_line(
    today: str,
    other: str,
    time_status: str | None,
    ratio: float | None,
    moved: Sequence[Change],
    compared: Sequence[str] = (),
    time_kernel: str = "",
) -> str:
    """The test's verdict as an upgrade from ``other`` to ``today``; ``compared``: the
    metrics measured on both sides (when none moved, the line says so: with the
    simulated cost among them, a time that moved is the machine's noise, not the code);
    ``time_kernel``: the kernel whose time moved most (:func:`kernel_time_moved`)."""
    parts = [time_words(time_status, ratio, time_kernel)]
    if not moved and compared:
        sim = [m for m in SIMULATED if m in compared]
        parts.append(f"no metric moved ({', '.join(sim)} the same)" if sim else "no exact metric moved")
    parts += [c.describe() for c in moved[:MAX_CHANGES]]
    if len(moved) > MAX_CHANGES:
        parts.append(f"{len(moved) - MAX_CHANGES} more metric(s) moved")
    return f"TVM {today} vs {other}: " + ", ".join(parts)


def classify(time_status: str | None, counts_regressed: bool = False) -> str:
    """The summary's class of a test: by its a/b time; ``counts worse`` when the time is
    not slower but an exact or simulated metric regressed past its threshold."""
    cls = {"regressed": "slower", "improved": "faster", "pass": "same", "inconclusive": "unclear"}.get(
        str(time_status) if time_status is not None else "", "not compared"
    )
    return "counts worse" if counts_regressed and cls in ("same", "unclear", "faster") else cls


@dataclass(frozen=True)
class UpgradeRow:
    """One test in the suite's upgrade summary (builtin types: JSON, xdist)."""

    test: str
    cls: str  #: one of CLASSES
    line: str  #: the verdict line (or why it was not compared)
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    #: time or a metric past its threshold (the test fails, unless report-only)
    past_threshold: bool = False

    def to_json(self) -> dict[str, Any]:
        """Its fields in order, ``cls`` as ``class``."""
        return {"class" if key == "cls" else key: value for key, value in asdict(self).items()}


@dataclass(frozen=True)
class UpgradeSummary:
    today: str
    other: str
    rows: tuple[UpgradeRow, ...]

    @property
    def counts(self) -> dict[str, int]:
        return {c: sum(r.cls == c for r in self.rows) for c in CLASSES}

    def ordered(self) -> list[UpgradeRow]:
        """Largest time changes first; those not compared last."""
        size = lambda r: abs(math.log(r.ratio)) if r.ratio and r.ratio > 0 else -1.0
        return sorted(self.rows, key=lambda r: (r.cls == "not compared", -size(r), r.test))

    def headline(self) -> str:
        parts = [f"{n} {c}" for c, n in self.counts.items() if n]
        return f"TVM {self.today} vs {self.other}, {len(self.rows)} test(s): " + (", ".join(parts) or "none")

    def lines(self, limit: int = 20) -> list[str]:
        out = [self.headline()]
        ordered = self.ordered()
        for row in ordered[:limit]:
            ci = f" [{row.low:.2f}-{row.high:.2f}x]" if row.low is not None and row.high is not None else ""
            out.append(f"  {row.test}{ci}: {row.line.split(': ', 1)[-1] if row.line.startswith('TVM ') else row.line}")
        if len(ordered) > limit:
            out.append(f"  ... {len(ordered) - limit} more (see the JSON results)")
        return out

    def to_json(self) -> dict[str, Any]:
        return dict(today=self.today, other=self.other, counts=self.counts, tests=[r.to_json() for r in self.ordered()])
