"""Report: outcomes, results and history files, text, HTML, the xdist hand-over."""
