"""ExpandMatmulOfSum: ``matmul(x, A + B)`` becomes ``matmul(x, A) + matmul(x, B)`` (TVM's
``relax.transform.ExpandMatmulOfSum``), also through a ``permute_dims`` of the sum.  A LoRA
weight ``W + A @ B`` then splits into a product with ``W`` and a cheap low-rank product.  A
sum known at compile time (both terms after ``num_input``) stays, to be lifted out whole."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..dpl.pattern import is_op, wildcard
from ..dpl.rewrite import rewrite_call
from ..expr import Function, Var
from ..op import add, matmul, permute_dims
from ._util import map_functions
from .adjust_matmul_order import computable_at_compile_time

__all__ = ["ExpandMatmulOfSum"]


def _rewrite_function(func: Function) -> Function:
    known = computable_at_compile_time(func)
    lhs, a, b = wildcard(), wildcard(), wildcard()
    total = is_op("relax.add")(a, b)
    permuted = is_op("relax.permute_dims")(total)
    pattern = is_op("relax.matmul")(lhs, total | permuted)

    def rewrite(expr: Any, matches: dict) -> Any:
        x, ra, rb = matches[lhs], matches[a], matches[b]
        if all(isinstance(e, Var) and id(e) in known for e in (ra, rb)):
            return expr
        if permuted in matches:
            axes = matches[permuted].attrs["axes"]
            ra, rb = permute_dims(ra, axes), permute_dims(rb, axes)
        return add(matmul(x, ra), matmul(x, rb))

    return rewrite_call(pattern, rewrite, func)


@module_pass(opt_level=1, name="ExpandMatmulOfSum")
class ExpandMatmulOfSum:
    """``ExpandMatmulOfSum()``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: _rewrite_function(f))
