"""The TVMScript namespace for Relax: ``from minitvm.script import relax as R``.

Inside an ``@R.function`` the parser (:mod:`minitvm.script.relax_parser`) evaluates
these helpers: struct-info annotations (``R.Tensor((n, 784), "float32")``, ``R.Tuple``,
``R.Shape``, ``R.Prim``, ``R.Object``), scopes and markers (``with R.dataflow()``,
``R.output(gv)``, ``R.func_attr``, ``R.match_cast``), values (``R.const``, ``R.shape``,
``R.prim_value``, ``R.str``) and calls (``R.call_tir``, ``R.call_dps_packed``,
``R.call_pure_packed``, ``R.call_packed``).

Every operator of :mod:`minitvm.relax.op` is reachable as ``R.<name>`` (``R.add``,
``R.matmul``, ``R.exp``) and ``R.nn.<name>`` (``R.nn.relu``): the lookup is generic, so
operators added to ``relax.op`` later appear here without a change.

Symbolic dimensions: in a shape annotation, a string (``R.Tensor(("n", 784))``, the
spelling that also works in a function signature, which Python evaluates before the
parser sees it) or a name defined nowhere else declares an int64 ``tir.Var``; so does
``n = T.int64()`` in the body.  Every use of the name in one function is that variable.
"""

from __future__ import annotations

import ast as _ast
import contextvars
import sys
import typing
from dataclasses import dataclass
from typing import Any

from ..ir import global_info as _global_info
from ..ir.module import GlobalVar
from ..relax import op as _op
from ..relax.dpl.pattern_rewriter import PatternMatchingRewriter
from ..relax.expr import (
    Call,
    DataTypeImm,
    Expr,
    PrimValue,
    ShapeExpr,
    StringImm,
    TupleGetItem,
    Var,
    _as_expr,
)
from ..relax.expr import ExternFunc as _ExternFuncNode
from ..relax.expr import Tuple as _TupleExpr
from ..relax.expr import const as _const
from ..relax.expr import extern as _relax_extern
from ..relax.op import nn  # noqa: F401 - R.nn.<op>
from ..relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..relax.utils import convert_to_expr
from ..tir.expr import PrimExpr
from ..tir.expr import Var as TirVar
from . import tir as _T
from .diagnostics import Source, TVMScriptError
from .parser import DeferredFunction, _TIRParser
from .tir import Macro, _caller_namespace, _defined_in_class_body

__all__ = [
    "function", "Tensor", "Shape", "Tuple", "Object", "Prim", "Callable",
    "dataflow", "output", "func_attr", "match_cast", "const", "shape", "prim_value", "str",
    "dtype", "call_tir", "call_dps_packed", "call_pure_packed", "call_packed", "ExternFunc", "nn",
    "emit_te", "call_tir_inplace", "tuple", "TupleGetItem", "macro",
    "device", "cpu", "cuda", "opencl", "vulkan", "metal",
]

_builtin_str = str
_builtin_tuple = tuple

# -- symbolic dimensions ------------------------------------------------------------------------

#: while the parser reads a function, how a dimension written as a string becomes a PrimExpr
_DIM_RESOLVER: contextvars.ContextVar[typing.Callable[[str], PrimExpr] | None] = \
    contextvars.ContextVar("relax_dim_resolver", default=None)


def _dim(d: Any) -> Any:
    """A shape dimension: ints and PrimExprs as they are, ``"n"`` (or ``"n * 2"``) resolved."""
    if isinstance(d, _builtin_str):
        resolve = _DIM_RESOLVER.get()
        if resolve is None:  # outside the parser (e.g. Python evaluating a signature): new vars
            if d.isidentifier():
                return TirVar(d, "int64")
            return _fresh_dim_expr(d)
        return resolve(d)
    return d


def _fresh_dim_expr(text: str) -> PrimExpr:
    """``"m * 2"`` read outside a function being parsed (Python evaluating a ``def``'s
    annotations): each name a new int64 variable.  The parser reads the annotation again
    with the function's own variables, so these never reach the IR."""
    try:
        tree = _ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"symbolic dimension {text!r} is not an expression") from None
    fresh: dict[str, TirVar] = {}

    class _Fresh(dict):
        def __contains__(self, name: object) -> bool:
            return isinstance(name, _builtin_str) and name not in ("T",)

        def __getitem__(self, name: _builtin_str) -> TirVar:
            return fresh.setdefault(name, TirVar(name, "int64"))

    sub = _TIRParser(Source.from_text(text), {"T": _T})
    sub.scopes.append(_Fresh())
    return sub.eval(tree.body)


def _dims(values: Any, what: str) -> list:
    if isinstance(values, (int, PrimExpr, _builtin_str)):
        raise TypeError(f"{what}: the shape must be a tuple or list of dimensions, got {values!r}; "
                        f"write ({values!r},) for one dimension")
    return [_dim(d) for d in values]


# -- struct-info annotations --------------------------------------------------------------------

def Tensor(shape: Any = None, dtype: Any = None, vdevice: Any = None,  # noqa: N802 - TVMScript
           ndim: int = -1) -> TensorStructInfo:
    """``R.Tensor((n, 784), "float32")``; ``R.Tensor(dtype="float32", ndim=2)`` when only the
    rank is known; ``R.Tensor`` alone: any tensor."""
    if isinstance(shape, _builtin_str) and dtype is None:  # R.Tensor("float32")
        shape, dtype = None, shape
    if shape is not None and not isinstance(shape, (ShapeExpr, Var)):
        shape = _dims(shape, "R.Tensor")
    return TensorStructInfo(shape, dtype if dtype is not None else "void", _vdevice(vdevice), ndim)


def _vdevice(vdevice: Any) -> Any:
    """``"llvm"`` / ``"cuda:1"``: the module's virtual device of that kind and index, once the
    module is being parsed (Python also evaluates annotations earlier, when the class body runs:
    the text stays text then, as TVM's lookup outside a module finds nothing)."""
    if isinstance(vdevice, _builtin_str) and _global_info._PARSING:
        kind, index, _scope = _global_info.parse_vdevice_text(vdevice)
        return _global_info.lookup_vdevice(kind, index)
    return vdevice


def Shape(values: Any = None, ndim: int = -1) -> ShapeStructInfo:  # noqa: N802
    """``R.Shape([n, 4])``; ``R.Shape(ndim=2)``; ``R.Shape`` alone: any shape."""
    return ShapeStructInfo(None if values is None else _dims(values, "R.Shape"), ndim)


def Tuple(*fields: Any) -> TupleStructInfo:  # noqa: N802
    """``R.Tuple(R.Tensor((2,), "float32"), R.Shape([2]))``."""
    if len(fields) == 1 and isinstance(fields[0], (list, _builtin_tuple)):
        fields = _builtin_tuple(fields[0])
    return TupleStructInfo([_sinfo(f, "R.Tuple") for f in fields])


def Object() -> ObjectStructInfo:  # noqa: N802
    """Any value (``R.Object``)."""
    return ObjectStructInfo()


def Prim(dtype: Any = None, value: Any = None) -> PrimStructInfo:  # noqa: N802
    """A scalar: ``R.Prim("int64")``, or one known exactly, ``R.Prim(value=n)``."""
    if value is not None:
        value = _dim(value)
    return PrimStructInfo(dtype, value)


def ExternFunc(global_symbol: _builtin_str, struct_info: Any = None) -> Any:  # noqa: N802 - TVM's name
    """``R.ExternFunc("name")``: the packed function registered as ``name``; a second argument
    (an ``R.Callable``) describes it (``R.Callable(derive_func=...)``, say)."""
    return _relax_extern(global_symbol, None if struct_info is None else _sinfo(struct_info, "R.ExternFunc"))


def Callable(params: Any = None, ret: Any = None, purity: bool = True,  # noqa: N802
             derive_func: Any = None) -> FuncStructInfo:
    """A function value: ``R.Callable((R.Tensor(...),), R.Tensor(...))``; an opaque one may
    name a global function deriving each call's result (``derive_func="..."``)."""
    if params is not None:
        params = [_sinfo(p, "R.Callable") for p in params]
    if derive_func is not None and params is not None:
        raise TypeError("R.Callable: derive_func is for an opaque function (params=None)")
    derive_func = getattr(derive_func, "value", derive_func)  # the parser reads a string literal as R.str
    return FuncStructInfo(params, None if ret is None else _sinfo(ret, "R.Callable"), purity,
                          None if derive_func is None else str(derive_func))


#: annotation helpers that may be written without parentheses (``x: R.Object``)
_BARE_SINFO = (Tensor, Shape, Tuple, Object, Prim, Callable)


def _sinfo(value: Any, where: str) -> StructInfo:
    """A struct info from an annotation (``R.Tensor`` alone means ``R.Tensor()``)."""
    if any(value is f for f in _BARE_SINFO):
        value = value()
    if not isinstance(value, StructInfo):
        raise TypeError(f"{where}: expected a struct info such as R.Tensor((1, 784), \"float32\"), "
                        f"got {value!r}")
    return value


class entry:  # noqa: N801 - TVM's module name tvm.script.parser.relax.entry
    """TVM's struct-info proxy classes, by their names there: each is the ``R.`` maker
    (``entry.TensorProxy`` is ``R.Tensor``; bare, it means ``R.Tensor()``).  TVM's makers return a
    ``StructInfoProxy`` read by ``.as_struct_info()``; minitvm's return the struct info itself,
    so ``StructInfoProxy`` is ``StructInfo`` (whose ``as_struct_info`` is the identity)."""

    StructInfoProxy = StructInfo

    ObjectProxy = staticmethod(Object)
    TensorProxy = staticmethod(Tensor)
    CallableProxy = staticmethod(Callable)
    TupleProxy = staticmethod(Tuple)
    ShapeProxy = staticmethod(Shape)
    PrimProxy = staticmethod(Prim)


# -- scopes and markers (the parser acts on them) -----------------------------------------------

@dataclass(frozen=True)
class DataflowScope:
    """``with R.dataflow():`` — the bindings inside form a dataflow block."""


@dataclass(frozen=True)
class OutputMarker:
    """``R.output(gv, ...)``: the variables visible after the dataflow block."""

    vars: tuple


@dataclass(frozen=True)
class FuncAttrMarker:
    """``R.func_attr({...})``: attributes of the enclosing function."""

    attrs: dict


@dataclass(frozen=True)
class MatchCastValue:
    """``lv = R.match_cast(value, sinfo)``: a MatchCast binding of ``lv``."""

    value: Any
    struct_info: StructInfo


#: the IR builder's emitters reachable as ``R.<name>``, as TVM's ``R`` re-exports its builder
_BUILDER_ONLY = {"arg", "func_name", "func_ret_value", "func_ret_struct_info", "emit",
                 "emit_match_cast", "emit_var_binding"}


def _ir_builder() -> Any:
    """The IR builder's Relax emitters while an ``IRBuilder`` is open, else None: then
    ``R.dataflow()``/``R.output``/``R.func_attr`` act on its frames, as in TVM."""
    # lazy: cycle -- the builder's relax module reads this namespace's annotations
    from .ir_builder import IRBuilder
    from .ir_builder import relax as builder_relax

    return builder_relax if IRBuilder.is_in_scope() else None


def dataflow() -> DataflowScope:
    """Open a dataflow block: ``with R.dataflow(): ... R.output(gv)``."""
    builder = _ir_builder()
    return builder.dataflow() if builder is not None else DataflowScope()


def output(*vars: Any) -> OutputMarker:
    """Name the variables of a dataflow block used after it (the last statement of the block)."""
    builder = _ir_builder()
    if builder is not None:
        return builder.output(*vars)
    return OutputMarker(_builtin_tuple(vars))


def func_attr(attrs: dict) -> FuncAttrMarker:
    """Set attributes of the enclosing function (``{"global_symbol": "main"}`` ...)."""
    if not isinstance(attrs, dict):
        raise TypeError(f"R.func_attr takes a dict, got {attrs!r}")
    builder = _ir_builder()
    if builder is not None:
        return builder.func_attr(dict(attrs))
    return FuncAttrMarker(dict(attrs))


def match_cast(value: Any, struct_info: Any) -> MatchCastValue:
    """Check ``value`` against ``struct_info`` at run time and bind it with that struct info;
    new symbolic dimensions in ``struct_info`` are defined here."""
    return MatchCastValue(value, _sinfo(struct_info, "R.match_cast"))


# -- values ---------------------------------------------------------------------------------------

def const(value: Any, dtype: Any = None) -> Expr:
    """A constant tensor: ``R.const(1.0, "float32")``, ``R.const([[1, 2]], "int32")``."""
    return _const(value, dtype)


def tuple(*fields: Any) -> _TupleExpr:  # noqa: A001 - TVMScript spells it R.tuple
    """A tuple value: ``R.tuple(x, y)``, ``R.tuple()`` (the empty tuple)."""
    return _TupleExpr([_as_expr(f, "R.tuple") for f in fields])


def shape(values: Any) -> ShapeExpr:
    """A shape value: ``R.shape([n, 4])``."""
    return ShapeExpr(_dims(values, "R.shape"))


def prim_value(value: Any) -> PrimValue:
    """A scalar value: ``R.prim_value(3)`` (int64) or ``R.prim_value(T.float32(0.5))``."""
    return PrimValue(_dim(value))


def str(value: _builtin_str) -> StringImm:  # noqa: A001 - TVMScript spells it R.str
    """A string value (an argument of packed functions)."""
    return StringImm(value)


def dtype(value: _builtin_str) -> DataTypeImm:
    """A dtype value: ``R.dtype("float32")``."""
    return DataTypeImm(value)


# -- calls ----------------------------------------------------------------------------------------

def _out(out_sinfo: Any, what: str) -> Any:
    if isinstance(out_sinfo, (list, _builtin_tuple)):
        return [_sinfo(s, what) for s in out_sinfo]
    return _sinfo(out_sinfo, what)


def call_tir(gvar: GlobalVar, args: Any, out_sinfo: Any = None, tir_vars: Any = None, *,
             out_ty: Any = None) -> Call:
    """``R.call_tir(cls.linear0, (x, w), out_sinfo=R.Tensor((1, 128), "float32"))``."""
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("R.call_tir needs out_sinfo=R.Tensor(...) (the outputs' struct info)")
    if tir_vars is not None and not isinstance(tir_vars, Expr):
        tir_vars = shape(tir_vars)
    return _op.call_tir(gvar, args, _out(out_sinfo, "R.call_tir"), tir_vars)


def call_tir_inplace(gvar: GlobalVar, args: Any, inplace_indices: Any, out_sinfo: Any = None,
                     tir_vars: Any = None, *, out_ty: Any = None) -> Call:
    """``R.call_tir_inplace(cls.f, (x, y), out_sinfo=R.Tensor(...), inplace_indices=[0])``:
    the PrimFunc writes output k over argument ``inplace_indices[k]`` (-1: a new tensor)."""
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("R.call_tir_inplace needs out_sinfo=R.Tensor(...) (the outputs' struct info)")
    if isinstance(args, Var) and isinstance(args.struct_info, TupleStructInfo):
        # which argument is overwritten must be visible, so no variable holding a tuple (a tensor
        # variable is wrapped into a tuple of one, as TVM does)
        raise TypeError(f"R.call_tir_inplace takes its arguments as an in-line tuple such as (x, y), "
                        f"not the variable {args.name}")
    if tir_vars is not None and not isinstance(tir_vars, Expr):
        tir_vars = shape(tir_vars)
    return _op.call_tir_inplace(gvar, args, inplace_indices, _out(out_sinfo, "R.call_tir_inplace"), tir_vars)


def call_dps_packed(func: Any, args: Any, out_sinfo: Any = None, *, out_ty: Any = None) -> Call:
    """``R.call_dps_packed("env.linear", (x, w), out_sinfo=R.Tensor(...))``: a registered
    function writing into outputs the VM allocates."""
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("R.call_dps_packed needs out_sinfo=R.Tensor(...)")
    return _op.call_dps_packed(func, args, _out(out_sinfo, "R.call_dps_packed"))


def _packed_arg(value: Any, where: str) -> Any:
    """An argument of a packed call: a Python number becomes an int64/float64 ``R.prim_value``
    (TVM passes ``1`` to the function as the integer 1, not as a tensor), the rest as anywhere."""
    if isinstance(value, (bool, int, float)):
        return convert_to_expr(value)
    return _as_expr(value, where)


def call_pure_packed(func: Any, *args: Any, sinfo_args: Any) -> Call:
    """``R.call_pure_packed("f", x, sinfo_args=R.Tensor(...))``: a registered function
    declared free of side effects, returning its result."""
    args = [_packed_arg(a, "R.call_pure_packed") for a in args]
    return _op.call_pure_packed(func, *args, sinfo_args=_out(sinfo_args, "R.call_pure_packed"))


def call_inplace_packed(func: Any, *args: Any, inplace_indices: Any, sinfo_args: Any) -> Call:
    """``R.call_inplace_packed("f", x, y, inplace_indices=0, sinfo_args=R.Tensor(...))``: a registered
    function that writes result k over argument ``inplace_indices[k]`` (-1: a new value)."""
    args = [_packed_arg(a, "R.call_inplace_packed") for a in args]
    return _op.call_inplace_packed(func, *args, inplace_indices=inplace_indices,
                                   sinfo_args=_out(sinfo_args, "R.call_inplace_packed"))


def call_packed(func: Any, *args: Any, sinfo_args: Any = None) -> Call:
    """``R.call_packed("f", x, sinfo_args=R.Object)``: call a registered function (may have
    side effects; allowed in impure functions only)."""
    callee = _ExternFuncNode(func) if isinstance(func, _builtin_str) else func
    if sinfo_args is None:
        sinfo = []
    elif isinstance(sinfo_args, (list, _builtin_tuple)):  # TVM also takes a list
        sinfo = [_sinfo(s, "R.call_packed") for s in sinfo_args]
    else:
        sinfo = [_sinfo(sinfo_args, "R.call_packed")]
    return Call(callee, [_packed_arg(a, "R.call_packed") for a in args], None, sinfo)


@dataclass(frozen=True)
class EmitTEValue:
    """What ``R.emit_te(func, *args)`` says; the parser makes the PrimFunc and its call."""

    func: Any
    args: tuple
    kwargs: dict


def emit_te(func: Any, *args: Any, **kwargs: Any) -> EmitTEValue:
    """``lv = R.emit_te(topi.add, x, y)``: the tensor-expression function ``func`` becomes a
    PrimFunc of the module (``primfunc_name_hint=`` names it) and ``lv`` its ``R.call_tir``."""
    if not callable(func):
        raise TypeError(f"R.emit_te needs a tensor-expression function first, got {func!r}")
    return EmitTEValue(func, args, dict(kwargs))


# -- macros ------------------------------------------------------------------------------------------

def macro(*args: Any, hygienic: Any = True) -> Any:
    """``@R.macro`` or ``@R.macro(hygienic=False)``: a Relax fragment pasted where it is called
    inside an ``@R.function``; what it returns is the value of the call.  ``hygienic=True``
    (the default) reads the body's other names where the macro was defined, as they were
    then; ``hygienic=False`` where it is called."""
    caller = sys._getframe(1)
    if len(args) > 1 or (args and not callable(args[0])):
        raise ValueError("R.macro takes only keyword arguments: @R.macro or @R.macro(hygienic=...)")

    class RelaxMacro(Macro):
        def __call__(self, *a: Any, **k: Any) -> Any:
            raise TypeError(f"R.macro {self.__name__} can only be called inside an @R.function")

        def __repr__(self) -> _builtin_str:
            return f"R.macro {self.__name__}"

    def decorate(f: Any) -> Any:
        namespace = dict(getattr(f, "__globals__", {}))
        namespace.update(_caller_namespace(caller))
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:
                pass
        m = RelaxMacro(f, hygienic, namespace)
        m.dialect = "relax"
        return m

    return decorate(args[0]) if args else decorate


# -- the decorator ----------------------------------------------------------------------------------

def function(func: Any = None, *, pure: bool = True, private: bool = False,
             check_well_formed: bool = True) -> Any:
    """Parse the decorated Python function as a Relax function.

    ``@R.function(pure=False)`` allows side effects; ``private=True`` leaves out the
    ``global_symbol`` attribute; ``check_well_formed=False`` skips the well-formedness
    check of the parsed function.  Inside an ``@I.ir_module`` class the parsing waits for the
    module, so ``cls.other`` can name any function of it.
    """
    caller = sys._getframe(1)
    options = {"pure": pure, "private": private, "check_well_formed": check_well_formed}

    def decorate(f: Any) -> Any:
        # lazy: cycle -- relax_parser builds on this module (R.<op> names)
        from .relax_parser import parse_relax_python_function

        if _defined_in_class_body(f):
            return DeferredFunction(f, "relax", options, _caller_namespace(caller))
        try:
            return parse_relax_python_function(f, options, _caller_namespace(caller))
        except TVMScriptError as err:
            raise err.with_traceback(None) from None

    return decorate if func is None else decorate(func)


def rewriter(cls: type) -> Any:
    """``@R.rewriter`` on a class holding Relax functions ``pattern`` and ``replacement`` (and
    private subroutines): the rewrite rule they define (TVM's ``PatternMatchingRewriter.from_module``)."""
    from .ir import ir_module  # lazy: cycle -- the module builder parses with this module's R

    return PatternMatchingRewriter.from_module(ir_module(cls))


# -- every Relax operator as R.<name> ----------------------------------------------------------------

# -- devices for R.hint_on_device ---------------------------------------------------------------

def device(dev_type: int, index: int = 0) -> _builtin_tuple:
    """``R.device(1, 0)``: a device by DLPack type code and index, for ``R.hint_on_device``
    (any code, as the hint only names a device of the module's vdevice list)."""
    return (int(dev_type), int(index))


def cpu(index: int = 0) -> _builtin_tuple:
    return device(1, index)


def cuda(index: int = 0) -> _builtin_tuple:
    return device(2, index)


def opencl(index: int = 0) -> _builtin_tuple:
    return device(4, index)


def vulkan(index: int = 0) -> _builtin_tuple:
    return device(7, index)


def metal(index: int = 0) -> _builtin_tuple:
    return device(8, index)


def __getattr__(name: _builtin_str) -> Any:
    """``R.add``, ``R.matmul`` ...: looked up in :mod:`minitvm.relax.op` when asked for."""
    if not name.startswith("_"):
        value = getattr(_op, name, None)
        if value is not None:
            return value
        if name in _BUILDER_ONLY:
            # lazy: cycle -- the builder's relax module reads this namespace's annotations
            from .ir_builder import relax as builder_relax

            return getattr(builder_relax, name)
    raise AttributeError(f"R.{name} is not a Relax operator or TVMScript helper "
                         f"(minitvm.relax.op has no {name!r})")
