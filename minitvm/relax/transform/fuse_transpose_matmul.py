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
from ...tir.expr import IntImm
from ...transform import PassContext, module_pass
from ..block_builder import BlockBuilder
from ..dpl import DFPattern, is_const, is_op, rewrite_call, wildcard
from ..expr import Function, struct_info_of
from ..struct_info import TensorStructInfo
from ._util import keeps_input_dtype

__all__ = ["FuseTransposeMatmul"]

#: fuse when x has at most this many rows (measured: at 64 rows transpose + tiled matmul is faster)
MAX_ROWS = 8

_x, _w = wildcard(), ~is_const()  # a constant weight's transpose is FoldConstant's
_transpose = is_op("relax.permute_dims")(_w)
_PATTERN = is_op("relax.matmul")(_x, _transpose)


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


def _fuse_function(func: Function, bb: BlockBuilder, max_rows: int) -> Function:
    def fuse(expr: Any, m: dict[DFPattern, Any]) -> Any:
        w_sinfo, rows = struct_info_of(m[_w]), _static_rows(struct_info_of(m[_x]))
        axes = m[_transpose].attrs.get("axes")
        swapped = axes is None or [int(a) for a in axes] == [1, 0]
        if getattr(w_sinfo, "ndim", -1) != 2 or not swapped or rows is None or rows > max_rows or \
                not keeps_input_dtype(expr):
            return expr
        return bb.call_te(topi.nn.matmul, m[_x], m[_w], transpose_b=True, primfunc_name_hint="NT_matmul")

    return rewrite_call(_PATTERN, fuse, func)


@module_pass(opt_level=0, name="FuseTransposeMatmul")
class FuseTransposeMatmul:
    """``FuseTransposeMatmul(max_rows=8)``: ``matmul(x, permute_dims(w))`` -> ``call_tir(NT_matmul, (x, w))``
    for a 2-D, non-constant ``w`` and at most ``max_rows`` static rows of ``x``."""

    def __init__(self, max_rows: int = MAX_ROWS):
        self.max_rows = max_rows

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        bb = BlockBuilder(mod)  # collects the NT_matmul PrimFuncs the rewrites make
        changed = False
        for gv, func in list(mod.functions.items()):
            new = _fuse_function(func, bb, self.max_rows) if isinstance(func, Function) else func
            if new is not func:
                bb.update_func(gv, new)
                changed = True
        return bb.get() if changed else mod
