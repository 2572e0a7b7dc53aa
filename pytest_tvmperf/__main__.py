"""``python -m pytest_tvmperf show|diff ...``: the ``tvmperf`` command line (see cli.py)."""

from pytest_tvmperf.command.cli import main

raise SystemExit(main())
