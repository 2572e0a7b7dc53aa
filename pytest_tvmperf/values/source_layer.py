"""A layer of the model a workload was imported from (pure: the value; workloads read it
from ``torch.export``'s graph or an ONNX graph, judge/source_layers.py names each kernel
by the layers it computes).

A failure that names only a kernel (``conv2d(1x256x7x7, 256x256x5x5) -> 1x256x7x7``)
leaves the user to find the layer; the importer's graph keeps it: ``torch.export`` keeps
each node's module path (``layer3.0.conv2``), ONNX each node's name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLayer:
    """path: the layer's module path (``layer3.0.conv2``) or node name; kind: the module
    class or op type (``Conv2d``, ``Conv``); anchor: what TVM's kernel of it is named by
    (``conv``, ``matmul``, ``max_pool``, ``avg_pool``: judge/layer_match.py's anchor kinds);
    attrs: what tells it apart in words (``5x5``, ``5x5 s2``, ``512->256``); inputs: its
    input and weight shapes (``1x8x16x16``, ``8x8x5x5``); output: its output shape."""

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
