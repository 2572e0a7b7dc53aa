"""What each kernel of a build is, independent of the name TVM gave it (``fused_conv2d19_add8``:
change one layer and the kernels after it are renamed). Pure: the value;
measure/kernel_identity.py reads it from a lowered module, result/kernel_match.py matches builds by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

#: the shapes shown of a kernel's inputs (its last parameter, the output, is always shown)
SHOWN_INPUTS = 2


@dataclass(frozen=True)
class KernelId:
    """key: structural hash of the PrimFunc without its name (hex); op: its ops without TVM's
    numbering (``conv2d_add_relu``); shapes: its parameters', inputs then output
    (``1x8x16x16,8x8x3x3,1x8x16x16``); layer: the source layers it computes, "" if unknown
    (shown, never matched by)."""

    key: str
    op: str
    shapes: str
    layer: str = ""

    def describe(self) -> str:
        return self.layer or self.computes()

    def computes(self) -> str:
        """What the kernel computes, on which shapes: ``conv2d_add_relu(1x8x16x16, 8x8x3x3, ...) -> 1x8x16x16``."""
        shapes = [s for s in self.shapes.split(",") if s]
        *inputs, out = shapes or [""]
        shown = ", ".join(inputs[:SHOWN_INPUTS]) + (", ..." if len(inputs) > SHOWN_INPUTS else "")
        return f"{self.op}({shown})" + (f" -> {out}" if out else "")

    def as_json(self) -> dict[str, str]:
        data = {"key": self.key, "op": self.op, "shapes": self.shapes}
        if self.layer:
            data["layer"] = self.layer
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "KernelId":
        return cls(str(data["key"]), str(data["op"]), str(data["shapes"]), str(data.get("layer", "")))


def op_of(name: str) -> str:
    """The ops a kernel name lists, without TVM's numbering and the ``fused_`` prefix:
    ``fused_conv2d19_add8_relu8`` -> ``conv2d_add_relu``."""
    stem = re.sub(r"\d+(?=_|$)", "", name)
    return stem.removeprefix("fused_") or name
