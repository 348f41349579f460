"""RewriteDataflowReshape: a ``call_tir`` of a PrimFunc that only reshapes becomes ``R.reshape``.

After ``LegalizeOps`` (and fusion) a reshape is a kernel copying every element to the same
row-major position in a buffer of another shape.  Inside a dataflow block, such a call is
turned back into ``R.reshape(x, shape)``, which the VM runs as a view of ``x``
(``vm.builtin.reshape``, see ``LowerRuntimeBuiltin``) and which ``StaticPlanBlockMemory``
counts as the same storage as ``x``: no copy, no allocation.

As TVM's pass, it rewrites only bindings of dataflow variables inside dataflow blocks (a
dataflow block's output may be used outside it, where a view could be written through), and
only when the kernel reads exactly one of its tensor arguments, the dtypes match and the
element counts are provably equal (a strided slice also "reshapes" but drops elements).
``has_reshape_pattern(prim_func)`` is the kernel test (TVM's
``relax.analysis.has_reshape_pattern``, defined there).
"""

from __future__ import annotations

import math
from typing import Any

from ...arith.analyzer import Analyzer
from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.expr import BufferLoad, IntImm
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...transform import PassContext, module_pass
from ..analysis.reshape_pattern import has_reshape_pattern
from ..expr import Call, DataflowVar, Function, ShapeExpr, Tuple, VarBinding, struct_info_of
from ..expr_functor import ExprMutator
from ..op import reshape
from ..struct_info import TensorStructInfo
from ._util import map_functions

__all__ = ["RewriteDataflowReshape", "has_reshape_pattern"]


def _read_buffers(func: PrimFunc) -> set:
    loaded: set = set()
    post_order_visit(func.body, lambda n: loaded.add(n.buffer) if isinstance(n, BufferLoad) else None)
    return loaded


def _element_count(sinfo: TensorStructInfo) -> Any:
    return math.prod(sinfo.shape_values, start=IntImm("int64", 1))


class _ReshapeRewriter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        # per kernel (by identity, kept alive): the buffers it reads and whether it has the
        # reshape form -- the same kernel is called once per identical layer
        self._kernels: dict[int, tuple[PrimFunc, set, bool]] = {}

    def visit_var_binding_(self, binding: VarBinding) -> None:
        # a DataflowVar is bound only inside a dataflow block and never escapes it
        new = self.as_reshape(binding.value) if isinstance(binding.var, DataflowVar) else None
        if new is None:
            super().visit_var_binding_(binding)
        else:
            self.builder_.emit_normalized(VarBinding(binding.var, self.builder_.normalize(new)))

    def as_reshape(self, call: Any) -> Call | None:
        """``R.reshape(x, shape)`` for a ``call_tir`` of a reshape kernel, else None."""
        if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "relax.call_tir"
                and isinstance(call.args[0], GlobalVar) and isinstance(call.args[1], Tuple)):
            return None
        func = self.mod.functions.get(call.args[0])
        if not isinstance(func, PrimFunc):
            return None
        args = call.args[1].fields
        # FuseTIR may give a fused reshape several inputs (a flattened tuple); one must be read
        read, reshapes = self._facts(func)
        used = [i for i, p in enumerate(func.params[:len(args)])
                if p in func.buffer_map and func.buffer_map[p] in read]
        if len(used) != 1 or not reshapes:
            return None
        arg = args[used[0]]
        src, out = struct_info_of(arg), struct_info_of(call)
        if not (isinstance(src, TensorStructInfo) and isinstance(out, TensorStructInfo)) or src.is_unknown_dtype \
                or src.dtype != out.dtype or src.shape_values is None or out.shape_values is None:
            return None
        # a kernel of the reshape form that drops elements (a strided slice) is not a reshape
        if not Analyzer().can_prove_equal(_element_count(src), _element_count(out)):
            return None
        return reshape(arg, ShapeExpr(list(out.shape_values)))


    def _facts(self, func: PrimFunc) -> tuple[set, bool]:
        known = self._kernels.get(id(func))
        if known is None or known[0] is not func:
            known = self._kernels[id(func)] = (func, _read_buffers(func), has_reshape_pattern(func))
        return known[1], known[2]


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _ReshapeRewriter(mod).visit_expr(func)


@module_pass(opt_level=0, name="RewriteDataflowReshape")
class RewriteDataflowReshape:
    """``call_tir`` of a reshape kernel in a dataflow block -> ``R.reshape``: ``RewriteDataflowReshape()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
