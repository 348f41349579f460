"""Reasoning about struct infos, as TVM's ``relax.analysis`` does: is one more general than
another (``struct_info_base_check`` with its graded failures, ``is_base_of``), their least
common ancestor, erasing what cannot be known in a scope, and what calling a function returns."""

from __future__ import annotations

import enum
from typing import Any, Callable, Mapping

from ...arith import Analyzer
from ...ir.structural import structural_equal
from ...runtime.registry import get_global_func
from ...tir.expr import IntImm, PrimExpr, const
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit, substitute
from ..expr import Expr, ShapeExpr, Var, struct_info_of
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    StructInfoError,
    TensorStructInfo,
    TupleStructInfo,
    struct_info_text,
)

__all__ = ["is_base_of", "struct_info_lca", "erase_to_well_defined", "get_static_type",
           "tir_vars_in_struct_info", "definable_tir_vars_in_struct_info",
           "substitute_struct_info", "derive_call_ret_struct_info", "prove_dim_equal",
           "prove_dim_differ", "BaseCheckResult", "struct_info_base_check",
           "collect_non_negative_expressions", "can_prove_shape_equal"]


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


def can_prove_shape_equal(lhs: Any, rhs: Any, analyzer: Analyzer | None = None) -> bool:
    """Two shapes (value lists, or shape expressions) provably equal; False when unsure."""
    if lhs is rhs:
        return True
    if isinstance(lhs, Expr) or isinstance(rhs, Expr):
        if not (isinstance(lhs, ShapeExpr) and isinstance(rhs, ShapeExpr)):
            return False  # a shape-valued Var equals only itself, as far as can be proven
        lhs, rhs = lhs.values, rhs.values
    ana = analyzer or Analyzer()
    return len(lhs) == len(rhs) and all(prove_dim_equal(a, b, ana) for a, b in zip(lhs, rhs))


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


def collect_non_negative_expressions(sinfo: StructInfo) -> list[PrimExpr]:
    """The expressions ``sinfo`` implies are non-negative -- tensor and shape dimensions, not
    ``R.Prim`` values -- each once (structurally), in order, leaving out constants >= 0."""
    found: list[PrimExpr] = []

    def visit(s: StructInfo) -> None:
        if isinstance(s, TensorStructInfo):
            values = s.shape_values or ()
        elif isinstance(s, ShapeStructInfo):
            values = s.values or ()
        elif isinstance(s, TupleStructInfo):
            values = ()
            for f in s.fields:
                visit(f)
        elif isinstance(s, FuncStructInfo):
            values = ()
            for p in s.params or ():
                visit(p)
            visit(s.ret)
        else:  # an R.Prim value may be negative; R.Object says nothing
            values = ()
        for e in values:
            if isinstance(e, IntImm) and e.value >= 0:
                continue
            if not any(structural_equal(e, f) for f in found):
                found.append(e)

    visit(sinfo)
    return found


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

class _LazyAnalyzer:
    """An Analyzer made on first use: most checks compare constants and never need one."""

    def __init__(self, analyzer: Analyzer | None) -> None:
        self._analyzer = analyzer

    @property
    def ana(self) -> Analyzer:
        if self._analyzer is None:
            self._analyzer = Analyzer()
        return self._analyzer


class BaseCheckResult(enum.IntEnum):
    """How a base check failed, most certain first (TVM's grades): FAIL_L0, the two describe
    no value in common; FAIL_L1, the static information (kind, dtype, rank) already refutes it;
    FAIL_L2, only symbolic relations could not be proven; PASS."""

    FAIL_L0 = 0
    FAIL_L1 = 1
    FAIL_L2 = 2
    PASS = 3


_R = BaseCheckResult


def _combine(a: BaseCheckResult, b: BaseCheckResult) -> BaseCheckResult:
    return min(a, b)  # the grades are ordered: the more certain failure wins


def _vdevice_check(lhs: Any, rhs: Any) -> BaseCheckResult:
    if lhs is None:
        return _R.PASS
    if rhs is None:
        return _R.FAIL_L1
    lt, rt = getattr(lhs, "target", None), getattr(rhs, "target", None)
    if lt is not None and rt is None:
        return _R.FAIL_L1
    if lt is not None and rt is not None and (
            lt != rt or lhs.vdevice_id != rhs.vdevice_id
            or lhs.memory_scope != rhs.memory_scope):
        return _R.FAIL_L0
    return _R.PASS


class _BaseChecker(_LazyAnalyzer):
    """Is ``lhs`` a base of (more general than) ``other``, graded (TVM's StructInfoBaseChecker).
    Subclasses override the value checks (deriving a call's result binds variables there)."""

    def check(self, lhs: StructInfo, other: StructInfo) -> BaseCheckResult:
        if lhs is other:
            return _R.PASS
        return self.visit(lhs, other)

    def visit(self, lhs: StructInfo, other: StructInfo) -> BaseCheckResult:
        if isinstance(lhs, ObjectStructInfo):
            return _R.PASS
        if type(other) is not type(lhs):
            return _R.FAIL_L1 if isinstance(other, ObjectStructInfo) else _R.FAIL_L0
        if isinstance(lhs, PrimStructInfo):
            if lhs.dtype != other.dtype:
                return _R.FAIL_L0
            if lhs.value is None:
                return _R.PASS
            return _R.FAIL_L2 if other.value is None else self.prim_value_match(lhs.value, other.value)
        if isinstance(lhs, ShapeStructInfo):
            if lhs.ndim == -1:
                return _R.PASS
            if lhs.ndim != other.ndim:
                return _R.FAIL_L1 if other.ndim == -1 else _R.FAIL_L0
            if lhs.values is None:
                return _R.PASS
            return _R.FAIL_L2 if other.values is None else self.values_match(lhs.values, other.values)
        if isinstance(lhs, TensorStructInfo):
            return self._tensor(lhs, other)
        if isinstance(lhs, TupleStructInfo):
            return self.array_check(lhs.fields, other.fields)
        if isinstance(lhs, FuncStructInfo):
            return self._func(lhs, other)
        return _R.FAIL_L0

    def _tensor(self, lhs: TensorStructInfo, other: TensorStructInfo) -> BaseCheckResult:
        if not lhs.is_unknown_dtype and lhs.dtype != other.dtype:
            return _R.FAIL_L1 if other.is_unknown_dtype else _R.FAIL_L0
        if lhs.ndim != -1 and lhs.ndim != other.ndim:
            return _R.FAIL_L1 if other.ndim == -1 else _R.FAIL_L0
        vdev = _vdevice_check(lhs.vdevice, other.vdevice)
        if vdev != _R.PASS:
            return vdev
        if lhs.shape is None:
            return _R.PASS
        return _R.FAIL_L2 if other.shape is None else self.shape_match(lhs.shape, other.shape)

    def _func(self, lhs: FuncStructInfo, other: FuncStructInfo) -> BaseCheckResult:
        if lhs.purity and not other.purity:
            return _R.FAIL_L0  # a pure function type does not admit impure ones
        if lhs.is_opaque:
            return self.check(lhs.ret, other.ret)
        if other.is_opaque:
            return _R.FAIL_L2
        # parameters may use different symbolic variables for the same thing: only structural
        # equality (which maps them) proves it; otherwise a best-effort field-by-field check
        if structural_equal(lhs, other, map_free_vars=True):
            return _R.PASS
        return _combine(self.func_params_check(lhs.params, other.params), self.check(lhs.ret, other.ret))

    def prim_value_match(self, lhs: PrimExpr, rhs: PrimExpr) -> BaseCheckResult:
        if isinstance(lhs, IntImm) and isinstance(rhs, IntImm):
            return _R.PASS if lhs.value == rhs.value else _R.FAIL_L0
        return _R.PASS if self.ana.can_prove_equal(lhs, rhs) else _R.FAIL_L2

    def values_match(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        return _pairwise(lhs, rhs, self.prim_value_match)

    def shape_match(self, lhs: Expr, rhs: Expr) -> BaseCheckResult:
        if lhs is rhs:
            return _R.PASS
        if isinstance(lhs, ShapeExpr) and isinstance(rhs, ShapeExpr):
            return self.values_match(lhs.values, rhs.values)
        return _R.FAIL_L2

    def func_params_check(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        result = self.array_check(lhs, rhs)
        return _R.FAIL_L2 if result == _R.FAIL_L1 else result  # a static mismatch in params is L2

    def array_check(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        return _pairwise(lhs, rhs, self.check)


def _pairwise(lhs: tuple, rhs: tuple, check: Callable[[Any, Any], BaseCheckResult]) -> BaseCheckResult:
    """Element by element, the most certain failure; stops at the first L0 (as TVM's)."""
    if len(lhs) != len(rhs):
        return _R.FAIL_L0
    result = _R.PASS
    for a, b in zip(lhs, rhs):
        if result == _R.FAIL_L0:
            return result
        result = _combine(check(a, b), result)
    return result


def struct_info_base_check(base: StructInfo, derived: StructInfo,
                           analyzer: Analyzer | None = None) -> BaseCheckResult:
    """Whether ``base`` describes every value ``derived`` does, graded by how certain a
    failure is (:class:`BaseCheckResult`)."""
    return _BaseChecker(analyzer).check(base, derived)


def is_base_of(base: StructInfo, derived: StructInfo, analyzer: Analyzer | None = None) -> bool:
    """True when every value ``derived`` describes is also described by ``base``
    (``R.Tensor(ndim=2)`` is a base of ``R.Tensor((n, 4))``; ``R.Object`` of everything)."""
    return struct_info_base_check(base, derived, analyzer) == _R.PASS


def struct_info_lca(lhs: StructInfo, rhs: StructInfo, analyzer: Analyzer | None = None) -> StructInfo:
    """The most precise struct info describing both ``lhs`` and ``rhs`` (e.g. two If
    branches); ``lhs`` itself whenever it already is that."""
    return _LCA(analyzer).visit(lhs, rhs)


class _LCA(_LazyAnalyzer):
    def visit(self, lhs: StructInfo, rhs: StructInfo) -> StructInfo:
        if lhs is rhs or isinstance(lhs, ObjectStructInfo):
            return lhs
        if type(rhs) is not type(lhs):
            return ObjectStructInfo()
        if isinstance(lhs, PrimStructInfo):
            if lhs.dtype != rhs.dtype:
                return ObjectStructInfo()  # a boxed scalar of either dtype: only an object
            if lhs.value is None:
                return lhs
            if rhs.value is None or not self.ana.can_prove_equal(lhs.value, rhs.value):
                return PrimStructInfo(lhs.dtype)
            return lhs
        if isinstance(lhs, ShapeStructInfo):
            ndim = lhs.ndim if lhs.ndim == rhs.ndim else -1
            if lhs.ndim != rhs.ndim or lhs.values is None or rhs.values is None or \
                    not can_prove_shape_equal(lhs.values, rhs.values, self.ana):
                return lhs if lhs.values is None and lhs.ndim == ndim else ShapeStructInfo(None, ndim)
            return lhs
        if isinstance(lhs, TensorStructInfo):
            return self._tensor(lhs, rhs)
        if isinstance(lhs, TupleStructInfo):
            fields = self._array(lhs.fields, rhs.fields)
            if fields is None:
                return ObjectStructInfo()
            return lhs if all(a is b for a, b in zip(fields, lhs.fields)) else TupleStructInfo(fields)
        if isinstance(lhs, FuncStructInfo):
            return self._func(lhs, rhs)
        return ObjectStructInfo()

    def _tensor(self, lhs: TensorStructInfo, rhs: TensorStructInfo) -> StructInfo:
        dtype = lhs.dtype if lhs.dtype == rhs.dtype else "void"
        ndim = lhs.ndim if lhs.ndim == rhs.ndim else -1
        vdev = lhs.vdevice if lhs.vdevice is not None and rhs.vdevice is not None and \
            structural_equal(lhs.vdevice, rhs.vdevice) else None
        if lhs.ndim != rhs.ndim or lhs.shape is None or rhs.shape is None or \
                not can_prove_shape_equal(lhs.shape, rhs.shape, self.ana):
            if lhs.shape is None and lhs.dtype == dtype and lhs.ndim == ndim and \
                    (lhs.vdevice is None or vdev is not None):
                return lhs
            return TensorStructInfo(None, dtype, vdev, ndim)
        if lhs.dtype != dtype or (lhs.vdevice is not None and vdev is None):
            return TensorStructInfo(lhs.shape, dtype, vdev)
        return lhs

    def _func(self, lhs: FuncStructInfo, rhs: FuncStructInfo) -> StructInfo:
        purity = lhs.purity and rhs.purity
        if lhs.is_opaque or rhs.is_opaque:
            ret = self.visit(lhs.ret, rhs.ret)
            if lhs.is_opaque and ret is lhs.ret:
                return lhs
            return FuncStructInfo.opaque_func(ret, purity)
        if structural_equal(lhs, rhs, map_free_vars=True):
            return lhs
        params = self._array(lhs.params, rhs.params)
        ret = self.visit(lhs.ret, rhs.ret)
        if params is not None and all(a is b for a, b in zip(params, lhs.params)) and ret is lhs.ret:
            return lhs
        if params is None:
            return FuncStructInfo.opaque_func(ret, purity)
        return FuncStructInfo(params, ret, purity)

    def _array(self, lhs: tuple, rhs: tuple) -> list | None:
        if len(lhs) != len(rhs):
            return None
        return [self.visit(a, b) for a, b in zip(lhs, rhs)]


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
        if sinfo.is_opaque:
            return FuncStructInfo.opaque_func(ObjectStructInfo(), sinfo.purity)
        params = [get_static_type(p) for p in sinfo.params]
        return FuncStructInfo(params, get_static_type(sinfo.ret), sinfo.purity)
    return sinfo


# -- erasing what a scope cannot know ----------------------------------------------------

_Lookup = Callable[[Any], Any]


def _lookup(mapping: Mapping | _Lookup | None) -> _Lookup | None:
    if mapping is None:
        return None
    # (duck-typed: an isinstance test against the Mapping ABC churns the ABC caches)
    if callable(mapping) and not hasattr(mapping, "items"):
        return mapping
    if not mapping:
        return None
    by_id = {id(k): v for k, v in mapping.items()}  # variables are keys by identity
    return lambda var: by_id.get(id(var))


def erase_to_well_defined(sinfo: StructInfo, shape_var_map: Mapping | _Lookup | None = None,
                          var_map: Mapping | _Lookup | None = None,
                          analyzer: Analyzer | None = None) -> StructInfo:
    """``sinfo`` as seen where only the variables of the maps are defined: a symbolic variable
    (or shape-valued Relax variable) in ``shape_var_map`` (``var_map``) is replaced by its value
    there, and any part that mentions one in neither is forgotten (``R.Tensor((n, 4))`` becomes
    ``R.Tensor(ndim=2)``).  A map may also be a function returning the value, or None when the
    variable is undefined.  Function struct infos are kept: their parameters define their
    variables."""
    eraser = _Eraser(_lookup(shape_var_map), _lookup(var_map), analyzer)
    return eraser.visit(sinfo)


class _Eraser(_LazyAnalyzer):
    def __init__(self, f_shape: _Lookup | None, f_var: _Lookup | None, ana: Analyzer | None) -> None:
        super().__init__(ana)
        self.f_shape, self.f_var = f_shape, f_var

    def prim(self, e: PrimExpr) -> PrimExpr | None:
        """``e`` with its variables replaced, or None when one of them is undefined."""
        found: list[TirVar] = []
        post_order_visit(e, lambda n: found.append(n) if isinstance(n, TirVar) else None)
        values: dict[int, PrimExpr] = {}
        for v in found:
            value = self.f_shape(v) if self.f_shape is not None else None
            if value is None:
                return None
            if isinstance(value, int) and not isinstance(value, bool):
                value = const(value, "int64")
            elif isinstance(value, IntImm) and value.dtype != "int64":
                value = IntImm("int64", value.value)
            values[id(v)] = value
        if all(values[id(v)] is v for v in found):
            return e
        return self.ana.simplify(substitute(e, lambda v: values.get(id(v))))

    def values(self, vals: tuple) -> tuple | None:
        out = [self.prim(v) for v in vals]
        return None if any(v is None for v in out) else tuple(out)

    def visit(self, sinfo: StructInfo) -> StructInfo:
        if isinstance(sinfo, PrimStructInfo):
            if sinfo.value is None:
                return sinfo
            value = self.prim(sinfo.value)
            if value is None:
                return PrimStructInfo(sinfo.dtype)
            return sinfo if value is sinfo.value else PrimStructInfo(sinfo.dtype, value)
        if isinstance(sinfo, ShapeStructInfo):
            if sinfo.values is None:
                return sinfo
            values = self.values(sinfo.values)
            if values is None:
                return ShapeStructInfo(None, sinfo.ndim)
            return sinfo if _all_same(values, sinfo.values) else ShapeStructInfo(values)
        if isinstance(sinfo, TensorStructInfo):
            return self._tensor(sinfo)
        if isinstance(sinfo, TupleStructInfo):
            fields = [self.visit(f) for f in sinfo.fields]
            return sinfo if _all_same(fields, sinfo.fields) else TupleStructInfo(fields)
        return sinfo  # Object, and functions: their own parameters define their variables

    def _tensor(self, sinfo: TensorStructInfo) -> StructInfo:
        shape = sinfo.shape
        if shape is None:
            return sinfo
        if isinstance(shape, ShapeExpr):
            values = self.values(shape.values)
            if values is None:
                return TensorStructInfo(None, sinfo.dtype, sinfo.vdevice, sinfo.ndim)
            if _all_same(values, shape.values):
                return sinfo
            return TensorStructInfo(values, sinfo.dtype, sinfo.vdevice)
        value = self.f_var(shape) if self.f_var is not None else None
        if value is None:
            return TensorStructInfo(None, sinfo.dtype, sinfo.vdevice, sinfo.ndim)
        if not isinstance(value, (Var, ShapeExpr)):
            raise TypeError(f"erase_to_well_defined: shape variable {shape.name} may map only to a "
                            f"Var or a ShapeExpr, got {value!r}")
        return sinfo if value is shape else TensorStructInfo(value, sinfo.dtype, sinfo.vdevice)


def _all_same(new: Any, old: Any) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


# -- calls -------------------------------------------------------------------------------

class _CallRetDeriver(_BaseChecker):
    """The base check of each parameter against its argument, binding the callee's symbolic
    variables (and shape-valued parameters) to what the arguments say on the way."""

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        super().__init__(analyzer)
        self.populate = True
        self.shape_vars: dict[int, PrimExpr] = {}
        self.vars: dict[int, Expr] = {}

    def check(self, lhs: StructInfo, other: StructInfo) -> BaseCheckResult:
        return self.visit(lhs, other)  # no shortcut: every pair is visited to bind variables

    def prim_value_match(self, param: PrimExpr, arg: PrimExpr) -> BaseCheckResult:
        if not self.populate or not isinstance(param, TirVar):
            # an expression of the parameters (n + 1) may use a variable bound only later
            return super().prim_value_match(param, arg)
        bound = self.shape_vars.get(id(param))
        if bound is None:
            self.shape_vars[id(param)] = arg
            return _R.PASS
        return _R.PASS if self.ana.can_prove_equal(bound, arg) else _R.FAIL_L2

    def shape_match(self, lhs: Expr, rhs: Expr) -> BaseCheckResult:
        if not self.populate:
            return super().shape_match(lhs, rhs)
        if isinstance(lhs, Var):
            bound = self.vars.get(id(lhs))
            if bound is None:
                self.vars[id(lhs)] = rhs
                return _R.PASS
            return _R.PASS if can_prove_shape_equal(bound, rhs, self.ana) else _R.FAIL_L2
        if not isinstance(rhs, ShapeExpr):
            return _R.FAIL_L2
        return self.values_match(lhs.values, rhs.values)

    def func_params_check(self, lhs: tuple, rhs: tuple) -> BaseCheckResult:
        # a function-typed parameter's own signature binds nothing of the callee's
        saved, self.populate = self.populate, False
        try:
            return super().func_params_check(lhs, rhs)
        finally:
            self.populate = saved


def derive_call_ret_struct_info(func_sinfo: FuncStructInfo, call: Any, ctx: Any = None) -> StructInfo:
    """The struct info of ``call`` to a function of ``func_sinfo``.

    Each argument must fit its parameter: a certain mismatch (kind, dtype, rank, a constant
    dimension) raises; one that only cannot be proven (a symbolic dimension) is let through.
    The callee's symbolic variables are bound from the arguments (``f(x: R.Tensor((n, 4)))``
    called with a ``(8, 4)`` tensor binds ``n = 8``) and substituted into the return struct
    info; what stays unbound is erased.
    """
    if func_sinfo.is_opaque:
        if func_sinfo.derive_func is not None:
            name = getattr(func_sinfo.derive_func, "value", func_sinfo.derive_func)  # a node keeps it as a StringImm
            return get_global_func(str(name))(call, ctx)
        return func_sinfo.ret
    name = _callee_name(call)
    params, args = func_sinfo.params, call.args
    if len(args) != len(params):
        raise StructInfoError(
            f"number of arguments and parameters mismatch: {name} has struct info "
            f"{struct_info_text(func_sinfo)} and takes {len(params)} parameter"
            f"{'s' if len(params) != 1 else ''}, but was called with {len(args)} argument"
            f"{'s' if len(args) != 1 else ''}")
    deriver = _CallRetDeriver()
    for i, (param, arg) in enumerate(zip(params, args)):
        arg_sinfo = struct_info_of(arg)
        if arg_sinfo is None:
            raise StructInfoError(f"{name}: argument {i} has no struct info (normalize it first)")
        if deriver.check(param, arg_sinfo) in (_R.FAIL_L0, _R.FAIL_L1):
            raise StructInfoError(f"{name}: argument {i} type mismatch: expected "
                                  f"{struct_info_text(param)}, given {struct_info_text(arg_sinfo)}")
    return erase_to_well_defined(func_sinfo.ret, lambda v: deriver.shape_vars.get(id(v)),
                                 lambda v: deriver.vars.get(id(v)))


def _callee_name(call: Any) -> str:
    op = call.op
    return getattr(op, "name_hint", None) or getattr(op, "global_symbol", None) or type(op).__name__
