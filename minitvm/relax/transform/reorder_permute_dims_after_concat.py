"""ReorderPermuteDimsAfterConcat: ``concat([permute_dims(a), permute_dims(b)], axis)`` becomes
``permute_dims(concat([a, b], axis'))`` when every ``permute_dims`` applies the same
permutation (``axis'`` is the input axis that lands at ``axis``).  One transpose instead of
several, and the concatenation of the untransposed weights is what CombineParallelMatmul
and weight lifting can then fold (TVM's pass of the same name)."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..dpl import DFPattern, is_op, is_tuple, rewrite_call, wildcard
from ..expr import Function, Tuple, struct_info_of
from ..op.manipulate import concat, permute_dims
from ._util import map_functions

__all__ = ["ReorderPermuteDimsAfterConcat"]

_MIN, _MAX = 2, 12  # concatenations of this many transposed tensors (TVM's bounds)
_ARGS = [wildcard() for _ in range(_MAX)]
_PERMUTES = [is_op("relax.permute_dims")(a) for a in _ARGS]


def _pattern() -> DFPattern:
    pattern = None
    for n in range(_MIN, _MAX):
        one = is_op("relax.concat")(is_tuple(_PERMUTES[:n]))
        pattern = one if pattern is None else pattern | one
    return pattern


_PATTERN = _pattern()


def _axes(call: Any) -> list[int]:
    axes = call.attrs["axes"]
    if axes is not None:
        return [int(a) for a in axes]
    ndim = struct_info_of(call.args[0]).ndim
    if ndim < 0:
        raise ValueError(f"ReorderPermuteDimsAfterConcat: permute_dims of {call.args[0]!r} without axes "
                         "needs a known rank")
    return list(range(ndim - 1, -1, -1))


def _rewrite(expr: Any, matches: dict) -> Any:
    permutes = [matches[p] for p in _PERMUTES if p in matches]
    args = [matches[a] for a, p in zip(_ARGS, _PERMUTES) if p in matches]
    first = _axes(permutes[0])
    if any(_axes(p) != first for p in permutes[1:]):
        return expr
    axis = expr.attrs["axis"]
    return permute_dims(concat(Tuple(args), first[0 if axis is None else axis]), permutes[0].attrs["axes"])


@module_pass(opt_level=1, name="ReorderPermuteDimsAfterConcat")
class ReorderPermuteDimsAfterConcat:
    """``ReorderPermuteDimsAfterConcat()``: see the module docstring."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda func, m: rewrite_call(_PATTERN, _rewrite, func)
                             if isinstance(func, Function) else func)
