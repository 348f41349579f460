"""Reasoning about struct infos: is one more general than another, their common
generalization, erasing what cannot be known, and what calling a function returns."""

from __future__ import annotations

from typing import Any, Callable

from ...arith import Analyzer
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit, substitute
from ..expr import ShapeExpr, Var, struct_info_of
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    StructInfoError,
    TensorStructInfo,
    TupleStructInfo,
    shape_text,
    struct_info_text,
)

__all__ = ["is_base_of", "struct_info_lca", "erase_to_well_defined", "get_static_type",
           "tir_vars_in_struct_info", "definable_tir_vars_in_struct_info",
           "substitute_struct_info", "derive_call_ret_struct_info", "prove_dim_equal",
           "prove_dim_differ"]


def prove_dim_equal(a: PrimExpr, b: PrimExpr, analyzer: Analyzer | None = None) -> bool:
    """True when two dimensions are provably equal (same constant, same variable, or
    equal after simplification)."""
    if a is b:
        return True
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return (analyzer or Analyzer()).can_prove_equal(a, b)


def prove_dim_differ(a: PrimExpr, b: PrimExpr, analyzer: Analyzer | None = None) -> bool:
    """True when two dimensions are provably different (two different constants)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value != b.value
    return (analyzer or Analyzer()).can_prove(a != b)


# -- symbolic variables ------------------------------------------------------------------

def _prim_exprs(sinfo: StructInfo) -> list[PrimExpr]:
    if isinstance(sinfo, TensorStructInfo):
        return list(sinfo.shape_values or ())
    if isinstance(sinfo, ShapeStructInfo):
        return list(sinfo.values or ())
    if isinstance(sinfo, PrimStructInfo):
        return [sinfo.value] if sinfo.value is not None else []
    if isinstance(sinfo, TupleStructInfo):
        return [e for f in sinfo.fields for e in _prim_exprs(f)]
    if isinstance(sinfo, FuncStructInfo):
        return [e for p in (sinfo.params or ()) for e in _prim_exprs(p)] + _prim_exprs(sinfo.ret)
    return []


def tir_vars_in_struct_info(sinfo: StructInfo) -> list[TirVar]:
    """Symbolic variables used anywhere in ``sinfo``, in order of first appearance."""
    seen: dict[int, TirVar] = {}

    def visit(n: Any) -> None:
        if isinstance(n, TirVar) and id(n) not in seen:
            seen[id(n)] = n

    for e in _prim_exprs(sinfo):
        post_order_visit(e, visit)
    return list(seen.values())


def definable_tir_vars_in_struct_info(sinfo: StructInfo) -> list[TirVar]:
    """Variables that matching a value against ``sinfo`` would define: bare dimensions
    (``n`` in ``(n, 4)``), not ones only inside expressions (``n * 2``)."""
    seen: dict[int, TirVar] = {}
    for e in _prim_exprs(sinfo):
        if isinstance(e, TirVar):
            seen.setdefault(id(e), e)
    return list(seen.values())


def substitute_struct_info(sinfo: StructInfo, fmap: Callable[[TirVar], PrimExpr | None]) -> StructInfo:
    """``sinfo`` with symbolic variables replaced (``fmap`` returns None to keep one)."""
    ana = Analyzer()

    def sub(v: PrimExpr) -> PrimExpr:
        new = substitute(v, fmap)
        return new if new is v else ana.simplify(new)  # (3 * 2 -> 6)

    def sub_all(values: tuple) -> list[PrimExpr]:
        return [sub(v) for v in values]

    if isinstance(sinfo, TensorStructInfo):
        if isinstance(sinfo.shape, ShapeExpr):
            return TensorStructInfo(sub_all(sinfo.shape.values), sinfo.dtype, sinfo.vdevice)
        return sinfo
    if isinstance(sinfo, ShapeStructInfo):
        return ShapeStructInfo(sub_all(sinfo.values)) if sinfo.values is not None else sinfo
    if isinstance(sinfo, PrimStructInfo):
        return PrimStructInfo(sinfo.dtype, sub(sinfo.value)) if sinfo.value is not None else sinfo
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo([substitute_struct_info(f, fmap) for f in sinfo.fields])
    if isinstance(sinfo, FuncStructInfo) and sinfo.params is not None:
        return FuncStructInfo([substitute_struct_info(p, fmap) for p in sinfo.params],
                              substitute_struct_info(sinfo.ret, fmap), sinfo.purity)
    return sinfo


# -- generality --------------------------------------------------------------------------

def _values_base_of(base: tuple | None, derived: tuple | None, ana: Analyzer) -> bool:
    if base is None:
        return True
    if derived is None or len(base) != len(derived):
        return False
    return all(prove_dim_equal(a, b, ana) for a, b in zip(base, derived))


def is_base_of(base: StructInfo, derived: StructInfo, analyzer: Analyzer | None = None) -> bool:
    """True when every value ``derived`` describes is also described by ``base``
    (``R.Tensor(ndim=2)`` is a base of ``R.Tensor((n, 4))``; ``R.Object`` of everything)."""
    ana = analyzer or Analyzer()
    if isinstance(base, ObjectStructInfo):
        return True
    if type(base) is not type(derived):
        return False
    if isinstance(base, TensorStructInfo):
        if not base.is_unknown_dtype and base.dtype != derived.dtype:
            return False
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        if base.shape_values is None:
            return True
        return _values_base_of(base.shape_values, derived.shape_values, ana)
    if isinstance(base, ShapeStructInfo):
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        return _values_base_of(base.values, derived.values, ana)
    if isinstance(base, PrimStructInfo):
        if base.dtype != "void" and base.dtype != derived.dtype:
            return False
        if base.value is None:
            return True
        return derived.value is not None and prove_dim_equal(base.value, derived.value, ana)
    if isinstance(base, TupleStructInfo):
        return len(base.fields) == len(derived.fields) and all(
            is_base_of(a, b, ana) for a, b in zip(base.fields, derived.fields))
    if isinstance(base, FuncStructInfo):
        if base.purity and not derived.purity:
            return False
        if base.params is None:
            return is_base_of(base.ret, derived.ret, ana)
        if derived.params is None or len(base.params) != len(derived.params):
            return False
        # parameters are contravariant: derived must accept whatever base accepts
        return all(is_base_of(d, b, ana) for b, d in zip(base.params, derived.params)) \
            and is_base_of(base.ret, derived.ret, ana)
    return False


def struct_info_lca(a: StructInfo, b: StructInfo) -> StructInfo:
    """The most precise struct info describing both ``a`` and ``b`` (e.g. two If branches)."""
    if is_base_of(a, b):
        return a
    if is_base_of(b, a):
        return b
    if type(a) is not type(b):
        return ObjectStructInfo()
    if isinstance(a, TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else "void"
        ndim = a.ndim if a.ndim == b.ndim else -1
        return TensorStructInfo(None, dtype, None, ndim)
    if isinstance(a, ShapeStructInfo):
        return ShapeStructInfo(None, a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, PrimStructInfo):
        return PrimStructInfo(a.dtype if a.dtype == b.dtype else "void")
    if isinstance(a, TupleStructInfo) and len(a.fields) == len(b.fields):
        return TupleStructInfo([struct_info_lca(x, y) for x, y in zip(a.fields, b.fields)])
    if isinstance(a, FuncStructInfo):
        return FuncStructInfo.opaque_func(purity=a.purity and b.purity)
    return ObjectStructInfo()


def get_static_type(sinfo: StructInfo) -> StructInfo:
    """``sinfo`` with every value forgotten: only kinds, dtypes and ranks remain
    (what TVM's static types say; here expressed as struct infos)."""
    if isinstance(sinfo, TensorStructInfo):
        return TensorStructInfo(None, sinfo.dtype, None, sinfo.ndim)
    if isinstance(sinfo, ShapeStructInfo):
        return ShapeStructInfo(None, sinfo.ndim)
    if isinstance(sinfo, PrimStructInfo):
        return PrimStructInfo(sinfo.dtype)
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo([get_static_type(f) for f in sinfo.fields])
    if isinstance(sinfo, FuncStructInfo):
        params = None if sinfo.params is None else [get_static_type(p) for p in sinfo.params]
        return FuncStructInfo(params, get_static_type(sinfo.ret), sinfo.purity)
    return sinfo


def erase_to_well_defined(sinfo: StructInfo, is_defined: Callable[[TirVar], bool],
                          is_var_defined: Callable[[Var], bool] | None = None) -> StructInfo:
    """Forget the parts of ``sinfo`` that mention symbolic variables (or shape-valued
    Relax variables) not defined in the scope where ``sinfo`` is used."""
    def ok(values: tuple | None) -> bool:
        return values is None or all(is_defined(v) for e in values for v in _vars_of(e))

    if isinstance(sinfo, TensorStructInfo):
        if isinstance(sinfo.shape, Var) and is_var_defined is not None and not is_var_defined(sinfo.shape):
            return TensorStructInfo(None, sinfo.dtype, sinfo.vdevice, sinfo.ndim)
        if ok(sinfo.shape_values):
            return sinfo
        return TensorStructInfo(None, sinfo.dtype, sinfo.vdevice, sinfo.ndim)
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo if ok(sinfo.values) else ShapeStructInfo(None, sinfo.ndim)
    if isinstance(sinfo, PrimStructInfo):
        return sinfo if sinfo.value is None or ok((sinfo.value,)) else PrimStructInfo(sinfo.dtype)
    if isinstance(sinfo, TupleStructInfo):
        fields = [erase_to_well_defined(f, is_defined, is_var_defined) for f in sinfo.fields]
        if all(a is b for a, b in zip(fields, sinfo.fields)):
            return sinfo
        return TupleStructInfo(fields)
    if isinstance(sinfo, FuncStructInfo) and sinfo.params is not None:
        # the function's own signature defines its symbolic variables
        own = {id(v) for p in sinfo.params for v in definable_tir_vars_in_struct_info(p)}
        return FuncStructInfo(
            [erase_to_well_defined(p, lambda v: id(v) in own or is_defined(v), is_var_defined)
             for p in sinfo.params],
            erase_to_well_defined(sinfo.ret, lambda v: id(v) in own or is_defined(v), is_var_defined),
            sinfo.purity)
    return sinfo


def _vars_of(e: PrimExpr) -> list[TirVar]:
    out: list[TirVar] = []
    post_order_visit(e, lambda n: out.append(n) if isinstance(n, TirVar) else None)
    return out


# -- calls -------------------------------------------------------------------------------

def derive_call_ret_struct_info(func_sinfo: FuncStructInfo, call: Any, ctx: Any = None) -> StructInfo:
    """The struct info of ``call`` to a function of ``func_sinfo``.

    Symbolic variables of the callee's signature are matched against the arguments
    (``f(x: R.Tensor((n, 4)))`` called with a ``(8, 4)`` tensor binds ``n = 8``) and
    substituted into the return struct info; what stays unknown is erased.
    """
    name = _callee_name(call)
    if func_sinfo.params is None:
        return func_sinfo.ret
    args = call.args
    if len(args) != len(func_sinfo.params):
        raise StructInfoError(f"{name} takes {len(func_sinfo.params)} argument"
                              f"{'s' if len(func_sinfo.params) != 1 else ''} but {len(args)} were given")
    ana = Analyzer()
    bound: dict[int, PrimExpr] = {}
    for i, (param, arg) in enumerate(zip(func_sinfo.params, args)):
        arg_sinfo = struct_info_of(arg)
        if arg_sinfo is None:
            raise StructInfoError(f"{name}: argument {i} has no struct info (normalize it first)")
        _match(param, arg_sinfo, bound, ana, f"{name}: argument {i}")
    ret = substitute_struct_info(func_sinfo.ret, lambda v: bound.get(id(v)))
    defined_in_sig = {id(v) for p in func_sinfo.params for v in definable_tir_vars_in_struct_info(p)}
    # variables of the callee not bound by the arguments cannot be known at the call site
    return erase_to_well_defined(ret, lambda v: id(v) not in defined_in_sig)


def _match(param: StructInfo, arg: StructInfo, bound: dict[int, PrimExpr], ana: Analyzer, where: str) -> None:
    def fail(why: str) -> None:
        raise StructInfoError(f"{where} has struct info {struct_info_text(arg)} but the parameter "
                              f"expects {struct_info_text(param)}: {why}")

    if isinstance(param, ObjectStructInfo):
        return
    if type(param) is not type(arg):
        if isinstance(arg, ObjectStructInfo):
            return  # not known statically; checked at run time
        fail("kinds differ")
    if isinstance(param, TensorStructInfo):
        if not param.is_unknown_dtype and not arg.is_unknown_dtype and param.dtype != arg.dtype:
            fail(f"dtype {arg.dtype} vs {param.dtype}")
        if param.ndim != -1 and arg.ndim != -1 and param.ndim != arg.ndim:
            fail(f"{arg.ndim} vs {param.ndim} dimensions")
        _match_values(param.shape_values, arg.shape_values, bound, ana, fail)
    elif isinstance(param, ShapeStructInfo):
        if param.ndim != -1 and arg.ndim != -1 and param.ndim != arg.ndim:
            fail(f"{arg.ndim} vs {param.ndim} dimensions")
        _match_values(param.values, arg.values, bound, ana, fail)
    elif isinstance(param, PrimStructInfo):
        if param.value is not None and arg.value is not None:
            _match_values((param.value,), (arg.value,), bound, ana, fail)
    elif isinstance(param, TupleStructInfo):
        if len(param.fields) != len(arg.fields):
            fail(f"{len(arg.fields)} vs {len(param.fields)} fields")
        for k, (p, a) in enumerate(zip(param.fields, arg.fields)):
            _match(p, a, bound, ana, f"{where} field {k}")


def _match_values(params: tuple | None, args: tuple | None, bound: dict[int, PrimExpr],
                  ana: Analyzer, fail: Callable[[str], None]) -> None:
    if params is None or args is None:
        return
    for p, a in zip(params, args):
        if isinstance(p, TirVar) and id(p) not in bound:
            bound[id(p)] = a
            continue
        expected = substitute(p, lambda v: bound.get(id(v)))
        if prove_dim_differ(expected, a, ana):
            fail(f"shape {shape_text(args)} does not match {shape_text(params)}")


def _callee_name(call: Any) -> str:
    op = call.op
    return getattr(op, "name_hint", None) or getattr(op, "global_symbol", None) or type(op).__name__
