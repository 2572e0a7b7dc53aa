"""What one tvmperf test measured and decided (``Outcome``), and the baselines it could write."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_tvmperf.config.parsing import EXECUTORS, TARGETS
from pytest_tvmperf.judge.metric_verdict import Comparison
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.values.record import Record
from pytest_tvmperf.judge.layer_match import LayerTable
from pytest_tvmperf.judge.verdict import Verdict


@dataclass(frozen=True)
class Outcome:
    """What one tvmperf test measured and decided."""

    nodeid: str
    test_id: str
    executor: str
    target: str
    #: a whole-test verdict (``verdict.TEST_VERDICTS``); a plain word is taken as its member
    verdict: Verdict
    record: Record | None = None
    baseline: Record | None = None
    comparison: Comparison | None = None
    note: str = ""
    message: str = ""
    location: tuple[str, int] = ("", 0)
    #: TVM against peer frameworks timed side by side (``--tvmperf-peers``, ``vs_<peer>``)
    peers: tuple[RatioVerdict, ...] = ()
    #: the verdict of a ``tvmperf.assert_ratio`` (this outcome is then that relation's)
    relation: RatioVerdict | None = None
    #: per layer, TVM against each peer (``--tvmperf-layers``, or a failed ``vs_<peer>``; judge/layer_match.py)
    layers: tuple[LayerTable, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def failed_metrics(self) -> tuple[str, ...]:
        """The metrics that regressed against the baseline (the comparison's order)."""
        return tuple(v.metric for v in self.comparison.regressions) if self.comparison is not None else ()


def producible_ids(test_id: str, combo_id: str) -> set[str]:
    """Every test id a collected test could write a baseline under (its ``combo_id`` swapped for every
    combination), so a run with fewer executors or targets counts the others' baselines as used."""
    if combo_id not in test_id:
        return {test_id}
    return {test_id} | {test_id.replace(combo_id, f"{t}-{e}") for t in TARGETS for e in EXECUTORS}
