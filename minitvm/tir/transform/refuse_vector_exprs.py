"""RefuseVectorExprs: stop a function with vector expressions before lowering, by name.

TVMScript reads, prints and compares TVM's vector expressions (``T.Ramp``, ``T.Broadcast``,
``B[0:4] = A[0:4] + 1``, predicated ``vload``/``vstore``), but minitvm's lowering, interpreter
and LLVM codegen compute with scalars: vectors come from ``T.vectorized`` loops, which the
vector emitter turns into vector instructions.  A vector expression reaching them would fail
deep inside (an out-of-bounds proof, a type mismatch); this pass names it instead.
"""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ...ir import dtype as _dt
from ..expr import PrimExpr
from ..function import PrimFunc
from ..functor import pre_order_visit
from .function_pass import prim_func_pass

__all__ = ["RefuseVectorExprs", "first_vector_expr"]


def first_vector_expr(func: PrimFunc) -> PrimExpr | None:
    """The first expression of ``func``'s body whose dtype has more than one lane, if any."""
    found: list[PrimExpr] = []

    def visit(n: Any) -> bool:
        if found:
            return False
        if isinstance(n, PrimExpr) and _dt.lanes(n.dtype) > 1:
            found.append(n)
            return False
        return True

    pre_order_visit(func.body, visit)
    return found[0] if found else None


@prim_func_pass(opt_level=0, name="tir.RefuseVectorExprs")
class RefuseVectorExprs:
    """Raise a TVMError naming the first vector expression of a function; pass it through otherwise."""

    def transform_function(self, func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        vector = first_vector_expr(func)
        if vector is not None:
            name = func.attrs.get("global_symbol", "a PrimFunc")
            raise TVMError(f"{name}: {vector.script()} is a vector expression ({vector.dtype}); minitvm compiles "
                           "scalar TIR only -- write the loop over the lanes and mark it T.vectorized "
                           "(sch.vectorize), which codegen turns into vector instructions")
        return func
