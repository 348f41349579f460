"""relax.frontend.torch: PyTorch programs captured by ``torch.export`` as Relax.

``from_exported_program(ep)`` walks the ATen graph of a ``torch.export.ExportedProgram`` and
emits one Relax function ``main`` with the BlockBuilder; ``from_fx(gm, input_info)`` does the
same for a ``torch.fx`` graph by restating its module and function calls as ATen calls.
Converters live by kind in ``unary``, ``binary``, ``nn``, ``statistical``, ``search``,
``manipulation``, ``creation`` and ``datatype``; ``CONVERTERS`` maps ATen op names to them
and ``supported_ops_markdown()`` renders that table for the docs.  ``relax_dynamo()`` is a
``torch.compile`` backend built on ``from_fx`` (module ``dynamo``).
"""

from __future__ import annotations

from .dynamo import dynamo_capture_subgraphs, relax_dynamo
from .exported_program import CONVERTERS, from_exported_program
from .fx_translator import from_fx
from .op_table import supported_ops_markdown

__all__ = ["from_exported_program", "from_fx", "relax_dynamo", "dynamo_capture_subgraphs", "CONVERTERS",
           "supported_ops_markdown"]
