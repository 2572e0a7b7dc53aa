"""Measure: what is timed side by side (the clock itself is builder/timer.py, below the
builder that times a compile), the machine and its disturbance, per-kernel metrics."""

# the names a user's conftest imports to inject a timer (``tvmperf_timer``), kept here
from pytest_tvmperf.builder.timer import SampleFn, Timer, TimingTask, TvmTimer  # noqa: E402,F401
from pytest_tvmperf.values.samples import TimeSamples  # noqa: E402,F401
