"""No symbolic links under the baseline directory: a committed ``baselines/tests -> /outside``
would make ``--tvmperf-update`` write, and the gate read, outside the repository. The
directory is walked without following links, and the first one found is refused, naming
it and where it points, before anything is read or written."""

from __future__ import annotations

import os
from pathlib import Path


def first_symlink(directory: Path) -> Path | None:
    """The first symbolic link at ``directory`` or below it (in sorted order), or None."""
    directory = Path(directory)
    if directory.is_symlink():
        return directory
    if not directory.is_dir():
        return None
    for top, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = Path(top, name)
            if path.is_symlink():
                return path
    return None


def symlink_problem(directory: Path) -> str | None:
    """Why the baseline directory cannot be used (a link at or under it), or None."""
    if (link := first_symlink(directory)) is None:
        return None
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    where = "the baseline directory" if link == Path(directory) else f"under the baseline directory {directory}"
    return (
        f"{link} is a symbolic link (to {target}) {where}: pytest-tvmperf never follows links there, since a "
        f"committed link would make the gate read, and --tvmperf-update write, outside the repository; "
        f"replace the link with the directory or file itself (or remove it), then run again"
    )
