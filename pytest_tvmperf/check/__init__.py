"""One check of one test, a straight path: the ``tvmperf`` fixture (fixture.py) builds the
test's frozen context (context.py) and hands it to a module per mode (timed.py,
untimed.py, ratio.py), which runs the pipeline (pipeline.py: prepare -> measure ->
decide, frozen values between the steps; decide.py pure) to the outcome; what a run is
judged against (baseline.py), and the store and build work the measuring takes
(sources.py, unmeasured.py). Where a verdict is turned into pass/fail; one jump from
plugin.py."""
