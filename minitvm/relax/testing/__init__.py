"""``tvm.relax.testing``: the helpers TVM's own Relax tests build workloads with.

``nn`` (a PyTorch-like module API over the BlockBuilder: ``Placeholder``, ``Parameter``,
``Module``, ``Linear`` ...), ``get_relax_matmul_module`` (a matmul with optional bias,
activation and residual epilogue), ``vm`` (the ``test.vm.*`` global functions and
``check_saved_func``) and ``transform.ApplyEmptyCppMutator``.  TVM's attention helpers and
AST printer are not here (minitvm has no ``R.nn.attention``).
"""

from __future__ import annotations

from . import nn, transform, vm
from .matmul import get_relax_matmul_module

__all__ = ["nn", "vm", "transform", "get_relax_matmul_module"]
