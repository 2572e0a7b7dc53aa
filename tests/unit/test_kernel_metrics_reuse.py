"""kernel_metrics.stored_counts and collect(stored=...): the baseline's counts stand in for a
new count only when every metric of the source was measured the way this run would."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_tvmperf.measure.metric_sources import KernelMetric, collect, stored_counts
from pytest_tvmperf.values.exact_metrics import ExactMetrics

SETUP = "llvm -mcpu=haswell, LLVM 20; valgrind-3.19.0; caches LL=8388608,16,64"
METRICS = (KernelMetric("cpu_instructions", "instructions"), KernelMetric("est_cycles", "cycles"))


@dataclass
class Source:
    name: str = "simulated cost"
    metrics: tuple = METRICS
    calls: int = 0

    def unavailable(self, prepared, settings):
        return None

    def setup(self, prepared, settings):
        return SETUP

    def collect(self, prepared, settings):
        self.calls += 1
        return {"cpu_instructions": {"k": 7}, "est_cycles": {"k": 9}}


def stored(setup=SETUP, metrics=("cpu_instructions", "est_cycles")) -> ExactMetrics:
    return ExactMetrics(per_kernel={m: {"k": 100} for m in metrics}, measured_with={m: setup for m in metrics})


def test_the_same_setup_takes_the_stored_counts():
    assert stored_counts(Source(), SETUP, stored()) == {"cpu_instructions": {"k": 100}, "est_cycles": {"k": 100}}


def test_another_setup_a_missing_metric_or_no_baseline_counts_again():
    assert stored_counts(Source(), SETUP, stored(setup="valgrind-3.22.0")) is None
    assert stored_counts(Source(), SETUP, stored(metrics=("cpu_instructions",))) is None
    assert stored_counts(Source(), SETUP, None) is None
    assert stored_counts(Source(), "", stored()) is None


def test_collect_measures_only_without_a_usable_stored_count():
    source = Source()
    got = collect((source,), None, None, stored=stored())
    assert source.calls == 0 and got.reused == ("simulated cost",)
    assert got.per_kernel["cpu_instructions"] == {"k": 100} and got.measured_with["est_cycles"] == SETUP
    got = collect((source,), None, None, stored=stored(setup="other"))
    assert source.calls == 1 and got.reused == () and got.per_kernel["cpu_instructions"] == {"k": 7}
