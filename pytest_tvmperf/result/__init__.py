"""Result: one test's outcome (outcome.py), its one serialized form (entry.py), the words that say
what it found (text.py, regression.py, ...), the run's outcomes (run_report.py): report/ shows them."""
