"""OptimizeLayoutTransform: drop the layout_transform pairs AlterOpImpl leaves between two
replaced kernels (TVM's pass of the same name).

``layout_transform(layout_transform(x))`` whose result has ``x``'s shape is ``x``; so is the
transform back from a ``remove_pad`` kernel applied to a transformed ``x``.  What remains
after it is unused and removed (``rewrite_call`` tidies).
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...transform import PassContext, module_pass
from ..dpl import TuplePattern, is_op, rewrite_call, wildcard
from ..expr import Function, struct_info_of
from ._util import map_functions

__all__ = ["OptimizeLayoutTransform"]

_INPUT = wildcard()
_TRANSFORM = is_op("relax.layout_transform")(_INPUT)
_TWICE = is_op("relax.layout_transform")(_TRANSFORM)
_KERNEL = wildcard()
_AFTER_KERNEL = is_op("relax.layout_transform")(is_op("relax.call_tir")(_KERNEL, TuplePattern([_TRANSFORM])))
_PATTERN = _TWICE | _AFTER_KERNEL


def _shape(expr: Any) -> Any:
    return getattr(struct_info_of(expr), "shape", None)


def _optimize(func: Function, mod: IRModule) -> Function:
    if (func.attrs or {}).get("Primitive", 0):
        return func

    def rewrite(expr: Any, matches: dict) -> Any:
        result = matches[_PATTERN]
        source = matches[_INPUT]
        if _AFTER_KERNEL in matches:
            kernel = mod[matches[_KERNEL]] if matches[_KERNEL] in mod.functions else None
            if (getattr(kernel, "attrs", None) or {}).get("operator_name") != "remove_pad":
                source = matches[_KERNEL]  # as TVM: a kernel other than remove_pad has no shape to match
        a, b = _shape(result), _shape(source)
        if a is not None and b is not None and structural_equal(a, b):
            return source
        return expr

    return rewrite_call(_PATTERN, rewrite, func)


@module_pass(opt_level=0, name="OptimizeLayoutTransform")
class OptimizeLayoutTransform:
    """``OptimizeLayoutTransform()``: see the module docstring."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _optimize)
