"""One check of one test, a straight path, where a verdict is turned into pass/fail (one jump
from plugin.py): the ``tvmperf`` fixture (fixture.py) builds the test's frozen context
(context.py) for its mode (timed.py, untimed.py, ratio.py), which runs pipeline.py (prepare ->
measure -> decide; decide.py pure) to the outcome; what a run is judged against (baseline.py),
and the store and build work the measuring takes (sources.py, unmeasured.py)."""
