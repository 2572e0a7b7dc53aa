"""Pure: JSON text from the repository parsed with its nesting bounded first. Python's
``json`` recurses once per level: a file nested a few thousand deep raises a bare
``RecursionError`` naming no file. The plugin's files are shallow (a ``save_json`` graph 4
levels, a tuning record about 8), so the nesting is measured without recursion first, and
a deeper file is a :class:`TooDeep` the caller turns into a message naming it.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: a JSON string (skipped whole: brackets inside it do not count), an opening or a closing bracket
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|([\[{])|([\]}])')


class TooDeep(ValueError):
    """The text nests deeper than allowed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested more than {limit} levels deep (the files the plugin writes nest a few levels)")


def nesting_depth(text: str, limit: int) -> int:
    """The deepest nesting of brackets in ``text`` (strings skipped); raises
    :class:`TooDeep` as soon as it passes ``limit``."""
    depth = deepest = 0
    for match in _TOKENS.finditer(text):
        if match.lastindex == 1:
            depth += 1
            if depth > limit:
                raise TooDeep(limit)
            deepest = max(deepest, depth)
        elif match.lastindex == 2:
            depth -= 1
    return deepest


def loads(text: str | bytes, limit: int) -> Any:
    """``json.loads(text)`` for text nested at most ``limit`` levels deep; :class:`TooDeep`,
    or ``ValueError`` for text that is not JSON (a number of over 4300 digits included)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    nesting_depth(text, limit)
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the scan; kept so no caller ever sees one
        raise TooDeep(limit) from None
