"""One check of one test: the ``tvmperf`` fixture (fixture.py), its pipeline (pipeline.py:
prepare -> measure -> decide, frozen values between the steps; decide.py pure), a module
per mode (timed.py, untimed.py, ratio.py), what a run is judged against (baseline.py),
and the store and build work the measuring takes (sources.py, unmeasured.py). Where a
verdict is turned into pass/fail; one jump from plugin.py."""
