"""A kernel of a baseline's IR stored in a file of its own (store/lowered_ir.py): its name
and its file's sha256. The file holds the function without its name, so an unchanged
kernel is the same file whatever it is called; a one-layer change adds only the changed
kernels' files. One line each in ``ir.functions``: ``fused_conv2d6_add_relu <sha256>``; the
file is ``<the IR file's directory>/<first 24 hex digits of the sha256>.json.gz``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.]{0,199}) ([0-9a-f]{64})")
#: the most functions one entry may list
MAX_FUNCTIONS = 1 << 14


@dataclass(frozen=True)
class FunctionRef:
    name: str
    sha256: str

    def as_text(self) -> str:
        return f"{self.name} {self.sha256}"

    def path(self, ir_path: str) -> str:
        """Its file, relative to the baseline directory, beside the IR file ``ir_path``."""
        return str(PurePosixPath(ir_path).parent / f"{self.sha256[:24]}.json.gz")

    @classmethod
    def parse(cls, text: object) -> FunctionRef:
        """The function a line of ``ir.functions`` names; ValueError saying what is wrong."""
        if (match := _LINE.fullmatch(text) if isinstance(text, str) else None) is None:
            raise ValueError("a line such as 'fused_conv2d6_add_relu <64 hex digits of its file's sha256>'")
        return cls(match.group(1), match.group(2))
