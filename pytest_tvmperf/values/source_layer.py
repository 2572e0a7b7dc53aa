"""A layer of the model a workload was imported from (pure), so a failure names the layer
(``layer3.0.conv2``: ``torch.export``'s module path, or the ONNX node's name), not only a
kernel; judge/source_layers.py names each kernel by the layers it computes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLayer:
    """path: module path (``layer3.0.conv2``) or node name; kind: module class or op type
    (``Conv2d``); anchor: judge/layer_match.py's anchor kind (``conv``, ``matmul``); attrs:
    what tells it apart (``5x5 s2``, ``512->256``); inputs, output: its shapes."""

    path: str
    kind: str
    anchor: str
    attrs: str = ""
    inputs: tuple[str, ...] = ()
    output: str = ""

    def describe(self) -> str:
        """``layer3.0.conv2 (Conv2d 5x5)``."""
        what = " ".join(p for p in (self.kind, self.attrs) if p)
        return f"{self.path} ({what})" if what else self.path
