"""From a tensor-expression function over Relax values to ``R.call_tir`` of a PrimFunc
(what ``bb.call_te`` / ``bb.emit_te`` do).

Relax tensors become ``te.placeholder``s with their shapes — a symbolic dimension is
the same ``tir.Var`` in every placeholder and in the Relax struct info, so the PrimFunc
and the Relax function agree on it.  Symbolic variables the PrimFunc needs but cannot
read off its input buffers (a dimension appearing only in an output, a scalar variable
passed explicitly) become trailing scalar parameters, passed from Relax as
``tir_vars`` (an ``R.shape([...])``), as in TVM.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import te
from ..tir import op as tir_op
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from .expr import Call, Expr, Var, struct_info_of
from .op.base import call_tir
from .struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo

__all__ = ["te_to_call_tir"]


class _ArgConverter:
    """Relax values -> TE values; remembers the placeholders in argument order."""

    def __init__(self, bb: Any):
        self.bb = bb
        self.placeholders: list[te.Tensor] = []
        self.relax_args: list[Expr] = []
        self.scalar_vars: list[TirVar] = []

    def convert(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return type(value)(self.convert(v) for v in value)
        if isinstance(value, dict):
            return {k: self.convert(v) for k, v in value.items()}
        if isinstance(value, PrimExpr):
            self._note_vars(value)
            return value
        if not isinstance(value, Expr):
            return value
        value = self.bb.normalize(value)
        sinfo = struct_info_of(value)
        if isinstance(sinfo, TensorStructInfo):
            return self._placeholder(value, sinfo)
        if isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
            for v in sinfo.values:
                self._note_vars(v)
            return list(sinfo.values)
        if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
            self._note_vars(sinfo.value)
            return sinfo.value
        if isinstance(sinfo, PrimStructInfo) and sinfo.dtype != "void":
            return self._scalar_param(value, sinfo)
        raise TypeError(f"emit_te: cannot pass a value of struct info {sinfo!r} to a TE function "
                        "(tensors need a known shape, shapes and scalars known values)")

    def _placeholder(self, value: Expr, sinfo: TensorStructInfo) -> te.Tensor:
        # each occurrence is its own parameter (R.add(y, y) makes add(y1, y2, out)), as in TVM
        if sinfo.shape_values is None:
            what = value.name if isinstance(value, Var) else "a tensor argument"
            raise ValueError(f"emit_te: {what} has no known shape ({sinfo!r}); "
                             "give it one with bb.match_cast(x, R.Tensor((n, m), dtype)) first")
        if sinfo.is_unknown_dtype:
            raise ValueError(f"emit_te: argument {value!r} has an unknown dtype")
        name = value.name if isinstance(value, Var) else f"arg{len(self.placeholders)}"
        t = te.placeholder(sinfo.shape_values, sinfo.dtype, name=name)
        self.placeholders.append(t)
        self.relax_args.append(value)
        return t

    def _scalar_param(self, value: Expr, sinfo: PrimStructInfo) -> TirVar:
        """A scalar known only at run time (``R.Prim("float32")``) becomes a scalar
        parameter of the PrimFunc, passed by the call like a tensor, as in TVM."""
        name = value.name if isinstance(value, Var) else "abcdefghijklmnopqrstuvwxyz"[len(self.placeholders) % 26]
        param = TirVar(name, sinfo.dtype)
        self.placeholders.append(param)
        self.relax_args.append(value)
        return param

    def _note_vars(self, e: PrimExpr) -> None:
        for v in _vars_of(e):
            if all(v is not s for s in self.scalar_vars):
                self.scalar_vars.append(v)


def _vars_of(e: PrimExpr) -> list[TirVar]:
    out: list[TirVar] = []
    post_order_visit(e, lambda n: out.append(n)
                     if isinstance(n, TirVar) and all(n is not o for o in out) else None)
    return out


def _int64(d: PrimExpr) -> PrimExpr:
    """A TE dimension as Relax wants it: int64 (TE code may compute in int32)."""
    if isinstance(d, IntImm) or d.dtype == "int64":
        return d
    return tir_op.cast(d, "int64")


def te_to_call_tir(bb: Any, func: Callable, args: tuple, kwargs: dict) -> Call:
    """Build the PrimFunc of ``func(*args, **kwargs)``, add it to ``bb``'s module, and
    return the ``R.call_tir`` of it on the Relax arguments."""
    name_hint = kwargs.pop("primfunc_name_hint", None) or getattr(func, "__name__", "te_func")
    extra_attrs = kwargs.pop("primfunc_attrs", None) or {}
    conv = _ArgConverter(bb)
    te_args = conv.convert(list(args))
    te_kwargs = conv.convert(dict(kwargs))
    result = func(*te_args, **te_kwargs)
    outs = [result] if isinstance(result, te.Tensor) else list(result or ())
    if not outs or not all(isinstance(o, te.Tensor) for o in outs):
        raise TypeError(f"emit_te: {name_hint} must return a te.Tensor or a list of them, got {result!r}")
    # no tensor argument at all is fine (a kernel that fills a constant), as in TVM

    # symbolic variables that are a whole dimension of some input or output buffer are bound
    # by that buffer (and scalar parameters by themselves); the others are passed as tir_vars
    # (a variable seen only inside an expression, y: (n * 2 + 1,), is not readable)
    tensors = [t for t in conv.placeholders if isinstance(t, te.Tensor)]
    bound = [d for t in [*tensors, *outs] for d in t.shape if isinstance(d, TirVar)]
    bound += [p for p in conv.placeholders if isinstance(p, TirVar)]
    needed = list(conv.scalar_vars)
    for t in [*tensors, *outs]:
        for d in t.shape:
            needed += [v for v in _vars_of(d) if all(v is not n for n in needed)]
    tir_vars = [v for v in needed if all(v is not d for d in bound)]

    prim = te.create_prim_func([*conv.placeholders, *outs, *tir_vars], index_dtype_override="int64")
    # private, as TVM's emit_te makes it: the module's GlobalVar names it
    attrs = {k: v for k, v in prim.attrs.items() if k != "global_symbol"}
    attrs.update(extra_attrs)
    prim = PrimFunc(prim.params, prim.buffer_map, prim.body, prim.ret_type, attrs)
    gv = bb.add_func(prim, name_hint)

    out_sinfo = [TensorStructInfo([_int64(d) for d in t.shape], t.dtype) for t in outs]
    return call_tir(gv, conv.relax_args, out_sinfo, tir_vars=tir_vars or None)
