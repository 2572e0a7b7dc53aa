"""Report, at the end of the run: terminal lines, the report files (results JSON, HTML,
history, pytest-benchmark JSON), the xdist hand-over. What a test found is result/."""
