"""Measure: the clock, what is timed side by side, the machine and its disturbance, exact metrics."""

# the names a user's conftest imports to inject a timer (``tvmperf_timer``)
from pytest_tvmperf.measure.timer import SampleFn, TimeSamples, Timer, TimingTask, TvmTimer  # noqa: E402,F401
