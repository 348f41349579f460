"""``tvm.relax.testing``: the helpers TVM's own Relax tests build workloads with.

``nn`` (a PyTorch-like module API over the BlockBuilder: ``Placeholder``, ``Parameter``,
``Module``, ``Linear`` ...), ``get_relax_matmul_module`` (a matmul with optional bias,
activation and residual epilogue), ``vm`` (the ``test.vm.*`` global functions and
``check_saved_func``), ``transform.ApplyEmptyCppMutator``, ``dump_ast`` (an expression's
nodes as nested text, :mod:`.ast_printer`) and ``runtime_builtin`` (the shape builtins'
codes).  TVM's attention helpers are not here (minitvm has no ``R.nn.attention``).
"""

from __future__ import annotations

from . import ast_printer, nn, runtime_builtin, transform, vm
from .ast_printer import dump_ast
from .matmul import get_relax_matmul_module

__all__ = ["nn", "vm", "transform", "get_relax_matmul_module", "ast_printer", "dump_ast", "runtime_builtin"]
