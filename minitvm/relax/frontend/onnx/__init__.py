"""relax.frontend.onnx: ONNX models (``onnx.ModelProto``) as Relax.

``from_onnx(model)`` walks the graph's nodes in order and emits one Relax function ``main`` with
the BlockBuilder.  Converters live by kind in ``elementwise``, ``nn``, ``manipulation``,
``reduce``, ``dynamic`` (data-dependent sizes), ``sequence``, ``contrib`` (onnxruntime's
``com.microsoft`` operators) and ``attention`` (attention, recurrent layers, losses);
``CONVERTERS`` maps each ONNX ``op_type`` to its converter ``fn(node, importer)``, which reads
the model's opset from ``node.opset`` where ONNX
moved an attribute into an input (``Reshape``, ``Split``, ``Squeeze``, ``Clip``, ``Slice``, ``Pad``, ``ReduceSum`` ...).
The onnx package is an optional extra (``pip install 'minitvm[onnx]'``), imported on first use.
"""

from __future__ import annotations

from typing import Any, Callable

from . import attention, contrib, dynamic, elementwise, manipulation, nn, reduce, sequence
from .importer import OnnxImporter, OnnxNode, OpNotImplemented, from_onnx

__all__ = ["from_onnx", "CONVERTERS", "CONVERTER_KINDS", "supported_ops", "OnnxNode", "OnnxImporter",
           "OpNotImplemented"]

#: The converter modules by kind, in the order ``supported_ops`` lists them.
CONVERTER_KINDS: dict[str, Any] = {"element-wise": elementwise, "neural network": nn,
                                   "manipulation": manipulation, "reduction": reduce,
                                   "data-dependent shape": dynamic, "sequence": sequence,
                                   "onnxruntime contrib (com.microsoft)": contrib,
                                   "composite (attention, recurrent, losses)": attention}

#: ONNX op_type -> ``fn(node: OnnxNode, importer: OnnxImporter)`` returning the Relax value (a
#: list of them for several outputs) or a numpy array when the value is known while importing.
CONVERTERS: dict[str, Callable[[OnnxNode, OnnxImporter], Any]] = {
    name: fn for module in CONVERTER_KINDS.values() for name, fn in module.CONVERTERS.items()
}


def supported_ops() -> dict[str, list[str]]:
    """The ONNX operators ``from_onnx`` converts, sorted, by kind."""
    return {kind: sorted(module.CONVERTERS) for kind, module in CONVERTER_KINDS.items()}
