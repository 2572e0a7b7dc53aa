"""The one escaping function for strings from data (baseline and results files, a
tracker's answers, a lock's holder file) on their way to the terminal, annotations and
summaries: nothing read can move the cursor, start a line of its own, or become a GitHub
Actions workflow command."""

from __future__ import annotations


def safe(text: object) -> str:
    """A string from data as it may be printed: control characters escaped (``\\n``,
    ``\\x1b``: no line, colour or cursor move of the file's), and a leading ``::`` (after
    blanks) as ``\\x3a:``, since GitHub Actions reads a line starting with ``::`` as a
    workflow command (a fake annotation, or ``::stop-commands::``)."""
    out = "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in str(text))
    stripped = out.lstrip(" ")
    if stripped.startswith("::"):
        out = out[: len(out) - len(stripped)] + "\\x3a" + stripped[1:]
    return out


def safe_lines(text: object) -> str:
    """A message that may hold several lines of its own (a table under an error), each
    line through :func:`safe`: the message's own line breaks stay, no line from data
    starts with ``::``."""
    return "\n".join(safe(line) for line in str(text).split("\n"))
