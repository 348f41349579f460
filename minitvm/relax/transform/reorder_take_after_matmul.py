"""ReorderTakeAfterMatmul: ``matmul(x, take(W, idx, axis=-1))`` becomes
``take(matmul(x, W), idx, axis=-1)`` (TVM's ``relax.transform.ReorderTakeAfterMatmul``):
the product is computed with the whole weight table and the wanted columns picked from the
result, so the weight need not be gathered first.  Batched LoRA tables (``W: [table, in,
out]`` taken on axis 0 by a per-batch index) are multiplied as one fused weight, then the
batch's own slice is picked with an einsum."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..dpl.pattern import is_op, wildcard
from ..dpl.rewrite import rewrite_call
from ..expr import ShapeExpr, Tuple, struct_info_of
from ..op import einsum, matmul, permute_dims, reshape, take
from ..struct_info import TensorStructInfo
from ._util import map_functions

__all__ = ["ReorderTakeAfterMatmul"]


def _tensor(expr: Any) -> TensorStructInfo | None:
    sinfo = struct_info_of(expr)
    return sinfo if isinstance(sinfo, TensorStructInfo) and sinfo.ndim >= 0 else None


def _rewrite(expr: Any, matches: dict, pats: dict) -> Any:
    lhs, weights, indices = matches[pats["lhs"]], matches[pats["weights"]], matches[pats["indices"]]
    axis = matches[pats["take"]].attrs.get("axis")
    ls, ws, isi, ms = _tensor(lhs), _tensor(weights), _tensor(indices), _tensor(expr)
    if None in (ls, ws, isi, ms) or axis is None:
        return expr
    axis = int(axis)
    if isi.ndim == 1 and axis + 1 == ws.ndim:
        return take(matmul(lhs, weights), indices, axis=ms.ndim - 1)
    if (ls.ndim == 3 and ws.ndim == 3 and isi.ndim == 1 and axis == 0
            and ws.shape_values is not None and ls.shape_values is not None):
        lsh, wsh = ls.shape_values, ws.shape_values
        fused = reshape(permute_dims(weights, [1, 0, 2]), ShapeExpr([wsh[1], wsh[0] * wsh[2]]))
        indexed = reshape(matmul(lhs, fused), ShapeExpr([lsh[0], lsh[1], wsh[0], wsh[2]]))
        return einsum(Tuple([take(indexed, indices, axis=2)]), "ijik->ijk")
    return expr


@module_pass(opt_level=1, name="ReorderTakeAfterMatmul")
class ReorderTakeAfterMatmul:
    """``ReorderTakeAfterMatmul()``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        def run(func: Any, m: IRModule) -> Any:
            pats = {"lhs": wildcard(), "weights": wildcard(), "indices": wildcard()}
            pats["take"] = is_op("relax.take")(pats["weights"], pats["indices"])
            pattern = is_op("relax.matmul")(pats["lhs"], pats["take"])
            return rewrite_call(pattern, lambda e, mt: _rewrite(e, mt, pats), func)
        return map_functions(mod, run)
