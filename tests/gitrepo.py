"""git for the tests that build a repository: one identity and no signing, whatever the
machine's git configuration says, and ``main`` as the first branch."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: ``-c`` settings of every call: a commit needs a name and mail, must not ask for a key,
#: and ``file://`` remotes (tests/test_ci_workflow_e2e.py's origin) are allowed
CONFIG = (
    "user.name=t",
    "user.email=t@t",
    "commit.gpgsign=false",
    "init.defaultBranch=main",
    "protocol.file.allow=always",
)


def git(cwd: Path | str, *args: str) -> str:
    """Run ``git args`` in ``cwd``; its output without the surrounding white space (an
    error raises CalledProcessError)."""
    command = ["git"]
    for setting in CONFIG:
        command += ["-c", setting]
    return subprocess.run([*command, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def first_commit(root: Path | str, message: str) -> None:
    """A new repository on ``main`` holding everything under ``root``."""
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
