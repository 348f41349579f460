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
``relax.analysis.has_reshape_pattern``).
"""

from __future__ import annotations

import math
from typing import Any

from ...arith.analyzer import Analyzer
from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.expr import BufferLoad, IntImm, IterVar, Range
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.op import floordiv, floormod
from ...tir.stmt import Block, BlockRealize, BufferStore, For
from ...transform import PassContext, module_pass
from ..expr import Call, DataflowVar, Function, ShapeExpr, Tuple, VarBinding, struct_info_of
from ..expr_functor import ExprMutator
from ..op import reshape
from ..struct_info import TensorStructInfo
from ._util import map_functions

__all__ = ["RewriteDataflowReshape", "has_reshape_pattern"]


def _flat_index(shape: tuple, indices: tuple) -> Any:
    flat: Any = IntImm("int64", 0)
    for extent, index in zip(shape, indices):
        flat = flat * extent + index
    return flat


def _innermost_store(stmt: Any, analyzer: Analyzer) -> BufferStore | None:
    """The single BufferStore at the bottom of a nest of loops and data-parallel blocks, its
    loop and block variables bound in ``analyzer``; None for any other structure."""
    while True:
        if isinstance(stmt, For):
            analyzer.bind(stmt.loop_var, Range.from_min_extent(stmt.min, stmt.extent), allow_override=True)
            stmt = stmt.body
        elif isinstance(stmt, BlockRealize):
            stmt = stmt.block
        elif isinstance(stmt, Block):
            if stmt.init is not None or any(iv.iter_type != IterVar.DataPar for iv in stmt.iter_vars):
                return None
            for iv in stmt.iter_vars:
                analyzer.bind(iv.var, iv.dom, allow_override=True)
            stmt = stmt.body
        else:
            return stmt if isinstance(stmt, BufferStore) else None


def has_reshape_pattern(func: PrimFunc) -> bool:
    """True when ``func`` copies its first buffer into its last, every element to the same
    row-major position (what a legalized ``reshape`` does)."""
    buffers = func.buffers
    if len(buffers) < 2:
        return False
    src, dst = buffers[0], buffers[-1]
    analyzer = Analyzer()
    store = _innermost_store(func.body, analyzer)
    if store is None or store.buffer is not dst or not isinstance(store.value, BufferLoad) \
            or store.value.buffer is not src:
        return False
    if len(store.indices) != len(dst.shape) or len(store.value.indices) != len(src.shape):
        return False
    dst_index = _flat_index(dst.shape, store.indices)
    return _is_unravel(analyzer, store.value.indices, src.shape, dst_index)


def _is_unravel(analyzer: Analyzer, indices: tuple, shape: tuple, flat: Any) -> bool:
    """True when ``indices`` are the row-major position of ``flat`` in ``shape``: index ``k`` is
    ``flat // stride_k % shape[k]`` (the first may omit the ``%``, as ``flat`` stays below the
    total size).  Comparing index by index keeps each proof within what the simplifier does;
    the flattened sum of the indices is beyond it once divisions nest."""
    stride: Any = IntImm("int64", 1)
    for k in reversed(range(len(shape))):
        quotient = floordiv(flat, stride) if k < len(shape) - 1 else flat
        forms = [floormod(quotient, shape[k])] + ([quotient] if k == 0 else [])
        if not any(analyzer.can_prove_equal(indices[k], form) for form in forms):
            return False
        stride = stride * shape[k]
    return True


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
        read = _read_buffers(func)
        used = [i for i, p in enumerate(func.params[:len(args)])
                if p in func.buffer_map and func.buffer_map[p] in read]
        if len(used) != 1 or not has_reshape_pattern(func):
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


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _ReshapeRewriter(mod).visit_expr(func)


@module_pass(opt_level=0, name="RewriteDataflowReshape")
class RewriteDataflowReshape:
    """``call_tir`` of a reshape kernel in a dataflow block -> ``R.reshape``: ``RewriteDataflowReshape()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
