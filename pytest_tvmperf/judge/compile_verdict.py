"""Pure: the ``compile_s`` verdict from the build times side by side
(values/compile_times.py), with the time verdict's statistics (timestats.py): the paired
ratios today/baseline, their median and an interval widened by the noise a process
cannot show. Coarse by design (default threshold 25%, docs/gate.md): a regression needs the
whole interval past the limit; a build that cannot be told within its noise (an interval
straddling the limit) is shown, never failed or held."""

from __future__ import annotations

from pytest_tvmperf.config.limits import Limit
from pytest_tvmperf.judge.compare import MetricVerdict
from pytest_tvmperf.judge.timestats import decide
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.values.compile_times import SAME_PROGRAM_COMPILE, CompileTimes, side_by_side_line
from pytest_tvmperf.values.resources import COMPILE_S

#: the spread of the log ratio of two builds of one program that the pairs of one test
#: cannot show (process to process, a busy machine): benchmarks/compile_noise.py, docs/gate.md
COMPILE_NOISE = 0.05
#: the decision's mode word: what was compared
COMPILE_MODE = "a/b, builds side by side"


def compile_verdict(times: CompileTimes | None, limit: Limit, alpha: float) -> MetricVerdict | None:
    """The ``compile_s`` verdict: None where the test leaves it out; n/a where nothing was
    built; not gated for the same program, with the gate off, or where the builds are too
    noisy to tell (never held: the test's verdict does not wait on its build time)."""
    if times is None:
        return None
    described = limit.describe()
    if times.same:
        return MetricVerdict(COMPILE_S, Verdict.NOT_GATED, None, None, described, note=SAME_PROGRAM_COMPILE)
    if not times.measured:
        return MetricVerdict(COMPILE_S, Verdict.NA, None, None, described, note=times.skipped)
    then, now = times.baseline_median, times.current_median
    if not limit.enabled:
        return MetricVerdict(COMPILE_S, Verdict.NOT_GATED, then, now, "off")
    threshold = limit.relative if limit.relative is not None else 0.0
    # past the limit only when the whole interval is (the one rule issue 60 asks of every timed verdict):
    # 1.58x (95% CI 1.02-2.45x) against +25% decides nothing (issue 60)
    decision = decide(times.ratios, None, threshold, alpha, COMPILE_NOISE, COMPILE_MODE, fail_rule="wholly")  # type: ignore[arg-type]
    status, note = decision.status, f"{len(times.ratios)} build(s) of each side, interleaved"
    if status == Verdict.INCONCLUSIVE:
        status, note = Verdict.NOT_GATED, f"{note}; the builds' noise is larger than the threshold: shown, not gated"
    return MetricVerdict(COMPILE_S, status, then, now, described, note=note, decision=decision, bound=1 + threshold)


def versions_verdict(other_s: float | None, today_s: float | None, other: str, today: str) -> MetricVerdict:
    """``--tvmperf-against-tvm``: both versions' whole builds (pipeline included), each
    timed in its own process, side by side: shown, not gated (the processes ran apart)."""
    return MetricVerdict(
        COMPILE_S, Verdict.NOT_GATED, other_s, today_s, "shown", note=side_by_side_line(other_s, other, today_s, today)
    )
