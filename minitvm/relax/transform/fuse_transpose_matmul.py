"""FuseTransposeMatmul: ``matmul(x, permute_dims(w))`` becomes one ``NT_matmul`` kernel.

``nn.Linear`` (and torch's ``linear`` after decomposition) multiplies by the *transposed*
weight.  Done as written, every call first copies the whole weight into its transpose and
only then multiplies: at batch 1 the copy costs far more than the product (the 784x256
MLP layer: about 60 us of transpose for about 10 us of arithmetic).  The fused kernel reads
``w[j, k]`` directly, ``C[i, j] = sum_k x[i, k] * w[j, k]``, a dot product of two
contiguous rows, which ``DefaultCPUSchedule`` vectorizes along ``k``.

The rewrite applies when it pays:

* ``w`` is not a constant (a constant's transpose is folded at compile time by
  ``FoldConstant``, which is cheaper still);
* the rows of ``x`` (its leading dimensions) are static and at most ``max_rows``: with many
  rows a transposed copy feeding the tiled matmul wins, because the copy is shared by
  every row.

::

    mod = relax.transform.FuseTransposeMatmul()(mod)   # then DeadCodeElimination
"""

from __future__ import annotations

from typing import Any

from ... import topi
from ...ir.module import IRModule
from ...ir.op import Op
from ...tir.expr import IntImm
from ...transform import PassContext, module_pass
from ..expr import Call, Constant, Expr, Var
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo
from ._util import rewrite_with_builder

__all__ = ["FuseTransposeMatmul"]

#: fuse when x has at most this many rows (measured: at 64 rows transpose + tiled matmul is faster)
MAX_ROWS = 8


def _swaps_last_two(axes: Any, ndim: int) -> bool:
    """True when ``permute_dims`` with ``axes`` only swaps the last two of ``ndim`` axes."""
    if axes is None:
        return ndim == 2
    return list(axes) == [*range(ndim - 2), ndim - 1, ndim - 2]


def _static_rows(sinfo: Any) -> int | None:
    """How many rows ``x`` has (the product of all but its last dimension), if static."""
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None or sinfo.ndim < 1:
        return None
    rows = 1
    for d in sinfo.shape_values[:-1]:
        if not isinstance(d, IntImm):
            return None
        rows *= d.value
    return rows


class _Fuser(ExprMutator):
    def __init__(self, mod: IRModule, max_rows: int) -> None:
        super().__init__(mod)
        self.max_rows = max_rows

    def visit_call_(self, op: Call) -> Expr:
        call = super().visit_call_(op)
        if not (isinstance(call, Call) and call.op == Op.get("relax.matmul")):
            return call
        x, wt = call.args
        transpose = self.lookup_binding(wt) if isinstance(wt, Var) else None
        if not (isinstance(transpose, Call) and transpose.op == Op.get("relax.permute_dims")):
            return call
        w = transpose.args[0]
        w_sinfo = w.struct_info
        if (isinstance(w, Constant) or isinstance(self.lookup_binding(w), Constant)
                or not isinstance(w_sinfo, TensorStructInfo) or w_sinfo.ndim != 2
                or not _swaps_last_two(transpose.attrs.get("axes"), 2)):
            return call
        rows = _static_rows(x.struct_info)
        if rows is None or rows > self.max_rows or call.attrs.get("out_dtype") not in (None, "", "void"):
            return call
        return self.builder_.call_te(topi.nn.matmul, x, w, transpose_b=True, primfunc_name_hint="NT_matmul")


@module_pass(opt_level=0, name="FuseTransposeMatmul")
class FuseTransposeMatmul:
    """``FuseTransposeMatmul(max_rows=8)``: ``matmul(x, permute_dims(w))`` -> ``call_tir(NT_matmul, (x, w))``
    for a 2-D, non-constant ``w`` and at most ``max_rows`` static rows of ``x``."""

    def __init__(self, max_rows: int = MAX_ROWS):
        self.max_rows = max_rows

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out, changed = rewrite_with_builder(mod, _Fuser(mod, self.max_rows))  # + the NT_matmul PrimFuncs
        return out if changed else mod
