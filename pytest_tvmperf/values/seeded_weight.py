"""A weight a baseline stores no values of (store/seeded.py): its dtype, shape and the
sha256 of its bytes, one line each in ``ir.seeded``: ``float32[64,3,7,7] <sha256>``. The
entry is data from the repository: :meth:`SeededWeight.parse` takes only the allowlisted
dtypes, at most :data:`MAX_NDIM` dimensions and :data:`MAX_ELEMENTS` elements.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

#: the dtypes a weight may be seeded in (their byte sizes): other tensors keep their values
DTYPES = {"float16": 2, "float32": 4, "float64": 8}
MAX_NDIM = 8
#: the most elements one seeded tensor may have (16 GiB of float32: bounded again in total)
MAX_ELEMENTS = 1 << 32
#: the most weights one entry may list
MAX_WEIGHTS = 1 << 16

_LINE = re.compile(
    r"(float16|float32|float64)\[((?:0|[1-9][0-9]{0,9})(?:,(?:0|[1-9][0-9]{0,9})){0,7})?\] ([0-9a-f]{64})"
)


@dataclass(frozen=True)
class SeededWeight:
    """One weight stored as its description only."""

    dtype: str
    shape: tuple[int, ...]
    sha256: str  #: of its little-endian bytes, as TVM serializes them

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPES[self.dtype]

    def describe(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    def as_text(self) -> str:
        return f"{self.describe()} {self.sha256}"

    @classmethod
    def parse(cls, text: object) -> SeededWeight:
        """The weight a line of ``ir.seeded`` describes; ValueError saying what is wrong."""
        if not isinstance(text, str) or len(text) > 200:
            raise ValueError("a line such as 'float32[64,3,7,7] <64 hex digits of its sha256>'")
        if (match := _LINE.fullmatch(text)) is None:
            raise ValueError(
                f"a line such as 'float32[64,3,7,7] <64 hex digits of its sha256>' (dtype one of "
                f"{', '.join(DTYPES)}, at most {MAX_NDIM} dimensions)"
            )
        shape = tuple(int(d) for d in match.group(2).split(",")) if match.group(2) else ()
        count = math.prod(shape)
        if count > MAX_ELEMENTS:
            raise ValueError(f"a tensor of at most {MAX_ELEMENTS} elements (this one has {count})")
        return cls(match.group(1), shape, match.group(3))
