"""Options and markers: what a run and a test ask for."""
