"""AdjustMatmulOrder: re-associate a chain of two matrix products to the cheaper order
(TVM's ``relax.transform.AdjustMatmulOrder``).

``matmul(matmul(A, B), C)`` and ``matmul(A, matmul(B, C))`` (also with the inner product
transposed by ``permute_dims``, as LoRA weights appear) are rewritten to whichever order
needs provably fewer multiply-adds per matrix (batch axes not counted, as TVM);
symbolic extents are at least 1, and a function's ``tir_var_upper_bound`` /
``tir_var_lower_bound`` attributes bound them.  When two of the three operands are known at
compile time (parameters after ``num_input``, and what only they compute), those two are
multiplied first, so the product can be lifted out; when all three are, nothing changes.
Unprovable cases keep their order.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir.module import IRModule
from ...tir import expr as tir
from ...transform import PassContext, module_pass
from ..analysis import computable_at_compile_time as _known_vars
from ..analysis import tir_vars_in_struct_info
from ..dpl.pattern import is_op, wildcard
from ..dpl.rewrite import rewrite_call
from ..expr import Function, Var, struct_info_of
from ..op import matmul, permute_dims
from ..struct_info import TensorStructInfo
from ._util import map_functions

__all__ = ["AdjustMatmulOrder", "computable_at_compile_time"]


def computable_at_compile_time(func: Function) -> set[int]:
    """ids of the variables known at compile time (see ``relax.analysis``'s function)."""
    return {id(v) for v in _known_vars(func)}


def _shape(expr: Any) -> list | None:
    sinfo = struct_info_of(expr)
    if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None:
        return list(sinfo.shape_values)
    return None


def _transposed(expr: Any) -> Any:
    ndim = len(_shape(expr))
    if ndim == 2:
        return permute_dims(expr)
    axes = list(range(ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return permute_dims(expr, axes)


def _bounds_constraint(func: Function) -> Any:
    attrs = func.attrs or {}
    upper, lower = attrs.get("tir_var_upper_bound"), attrs.get("tir_var_lower_bound")
    cond = tir.const(True, "bool")
    if not upper and not lower:
        return cond
    names = {}
    for p in func.params:
        for v in tir_vars_in_struct_info(p.struct_info):
            names[v.name] = v
            cond = tir.And(cond, tir.IntImm(v.dtype, 0) <= v)
    for key, bound in (lower or {}).items():
        if str(key) in names:
            cond = tir.And(cond, tir.IntImm(names[str(key)].dtype, int(bound)) <= names[str(key)])
    for key, bound in (upper or {}).items():
        if str(key) in names:
            cond = tir.And(cond, names[str(key)] < tir.IntImm(names[str(key)].dtype, int(bound)))
    return cond


def _make_rewriter(func: Function, pats: dict) -> Any:
    known = computable_at_compile_time(func)
    bounds = _bounds_constraint(func)

    def compile_time(e: Any) -> bool:
        return isinstance(e, Var) and id(e) in known

    def rewrite(expr: Any, matches: dict) -> Any:
        a, b, c = matches[pats["a"]], matches[pats["b"]], matches[pats["c"]]
        if compile_time(a) and compile_time(b) and compile_time(c):
            return expr  # the whole chain is lifted out: the order does not matter
        sa, sb, sc = _shape(a), _shape(b), _shape(c)
        if sa is None or sb is None or sc is None:
            return expr
        if pats["perm_lhs"] in matches:
            if len(sa) < 2 or len(sb) < 2:
                return expr
            a, b = _transposed(a), _transposed(b)
            sa, sb = sa[:-2] + [sa[-1], sa[-2]], sb[:-2] + [sb[-1], sb[-2]]
        elif pats["perm_rhs"] in matches:
            if len(sb) < 2 or len(sc) < 2:
                return expr
            b, c = _transposed(b), _transposed(c)
            sb, sc = sb[:-2] + [sb[-1], sb[-2]], sc[:-2] + [sc[-1], sc[-2]]
        if compile_time(a) and compile_time(b):
            return matmul(matmul(a, b), c)
        if compile_time(b) and compile_time(c):
            return matmul(a, matmul(b, c))
        return _cheaper(expr, (a, b, c), (sa, sb, sc), pats["on_lhs"] in matches, bounds)

    return rewrite


def _cheaper(expr: Any, operands: tuple, shapes: tuple, on_lhs: bool, bounds: Any) -> Any:
    """The order with provably fewer multiply-adds, or ``expr`` when neither is proven.  As
    TVM's, the count is per matrix: batch axes are left out (a broadcast batch of
    activations times a product of two weights favours multiplying the activations first)."""
    a, b, c = operands
    sa, sb, sc = shapes
    one = tir.IntImm("int64", 1)
    if len(sa) == 1:
        sa = [one, sa[0]]
    if len(sb) == 1:
        sb = [sb[0], one] if on_lhs else [one, sb[0]]
    if len(sc) == 1:
        sc = [sc[0], one]
    n, r, m, k = sa[-2], sa[-1], sc[-2], sc[-1]
    lhs_first = (r + k) * n * m
    rhs_first = (m + n) * r * k
    analyzer = Analyzer()
    positive = tir.And(bounds, tir.And(tir.And(n > 0, r > 0), tir.And(m > 0, k > 0)))
    with analyzer.constraint_scope(positive):
        if analyzer.can_prove(lhs_first < rhs_first):
            return matmul(matmul(a, b), c)
        if analyzer.can_prove(rhs_first < lhs_first):
            return matmul(a, matmul(b, c))
    return expr


def _patterns() -> tuple[Any, dict]:
    a, b, c = wildcard(), wildcard(), wildcard()
    mm, perm = is_op("relax.matmul"), is_op("relax.permute_dims")
    on_lhs, on_rhs = mm(mm(a, b), c), mm(a, mm(b, c))
    perm_lhs, perm_rhs = mm(perm(mm(b, a)), c), mm(a, perm(mm(c, b)))
    pats = {"a": a, "b": b, "c": c, "on_lhs": on_lhs, "on_rhs": on_rhs, "perm_lhs": perm_lhs, "perm_rhs": perm_rhs}
    return on_lhs | on_rhs | perm_lhs | perm_rhs, pats


@module_pass(opt_level=1, name="AdjustMatmulOrder")
class AdjustMatmulOrder:
    """``AdjustMatmulOrder()``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        def run(func: Function, m: IRModule) -> Function:
            pattern, pats = _patterns()
            return rewrite_call(pattern, _make_rewriter(func, pats), func)
        return map_functions(mod, run)
