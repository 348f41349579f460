"""relax.frontend.torch: PyTorch programs captured by ``torch.export`` as Relax.

``from_exported_program(ep)`` walks the ATen graph of a ``torch.export.ExportedProgram`` and
emits one Relax function ``main`` with the BlockBuilder.  Converters live by kind in
``unary``, ``binary``, ``nn`` and ``manipulation``; ``CONVERTERS`` maps ATen op names to them.
"""

from __future__ import annotations

from .exported_program import CONVERTERS, from_exported_program

__all__ = ["from_exported_program", "CONVERTERS"]
