"""Measure: what is timed side by side (the clock is builder/timer.py), the machine, per-kernel metrics."""

# the names a user's conftest imports to inject a timer (``tvmperf_timer``), kept here
from pytest_tvmperf.builder.timer import SampleFn, Timer, TimingTask, TvmTimer  # noqa: E402,F401
from pytest_tvmperf.values.samples import TimeSamples  # noqa: E402,F401
