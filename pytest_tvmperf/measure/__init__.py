"""Measure: the clock, what is timed side by side, the machine and its disturbance, exact metrics."""

# the names a user's conftest imports to inject a timer (``tvmperf_timer``)
from pytest_tvmperf.measure.timer import SampleFn, Timer, TimingTask, TvmTimer  # noqa: E402,F401
from pytest_tvmperf.values.samples import TimeSamples  # noqa: E402,F401
