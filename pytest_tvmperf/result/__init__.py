"""Result: one test's outcome (outcome.py), its results-JSON entry, its one serialized
form, and the reading of results files (entry.py), the words that say what it found
(text.py, regression.py, layers_text.py, kernels.py, kernel_match.py), and the run's
outcomes gathered test by test (run_report.py). Below check/ and report/: the check
pipeline makes these values, report/ writes and prints them at the end of the run."""
