"""The ``tvmperf`` command line."""
