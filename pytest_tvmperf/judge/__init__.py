"""Judge (pure): metric and ratio verdicts, the one confirmation rule, the whole-test verdict; which layer loses to the peer (layer_match.py)."""
