"""``R.memory.view``: the same memory seen with another shape, dtype or byte offset (TVM's
``relax.op.memory.view``), and ``R.memory.ensure_zero_offset``.

A view copies nothing: ``LowerRuntimeBuiltin`` turns it into a call of the runtime function
``runtime.TVMTensorCreateView``. Its struct info is checked where it can be: a view that
provably ends past the viewed array's bytes is refused; one that depends on run-time values
is left to the runtime check.
"""

from __future__ import annotations

import re
from typing import Any

from ...ir.op import Op
from ...runtime.registry import register_func
from ...tir.expr import IntImm, PrimExpr
from ..expr import (
    Call,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    PrimValue,
    ShapeExpr,
    Tuple,
    Var,
    _set_struct_info,
    struct_info_of,
)
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    StructInfoError,
    StructInfoTypeError,
    TensorStructInfo,
    TupleStructInfo,
    struct_info_text,
)
from ._utils import _ANALYZER, product
from .registry import make_call, register

__all__ = ["view", "ensure_zero_offset", "VIEW", "VIEW_RUNTIME_FUNC"]

VIEW = "relax.memory.view"
VIEW_RUNTIME_FUNC = "runtime.TVMTensorCreateView"
VIEW_DERIVE_FUNC = "tvm.relax.struct_info.infer_view_sinfo"


def _is_void(arg: Expr) -> bool:
    """An argument left out: an empty tuple (TVM's void value)."""
    sinfo = struct_info_of(arg)
    return isinstance(sinfo, TupleStructInfo) and not sinfo.fields


def _bound_value(arg: Expr, ctx: Any) -> Expr:
    """What a variable is bound to in the block being built (as far as that is known)."""
    while isinstance(arg, Var) and ctx is not None and hasattr(ctx, "lookup_binding"):
        bound = ctx.lookup_binding(arg)
        if bound is None:
            break
        arg = bound
    return arg


def _view_dtype(arg: Expr, ctx: Any) -> tuple[bool, str | None]:
    """(whether a dtype was given, the dtype when known)."""
    if _is_void(arg):
        return False, None
    value = _bound_value(arg, ctx)
    if isinstance(value, Call) and getattr(value.op, "name", None) == "relax.null_value":
        return False, None
    if isinstance(value, DataTypeImm):
        if str(value.value) in ("", "void"):
            raise StructInfoTypeError(f"{VIEW}: the dtype must be a concrete tensor dtype, not void; "
                                      "leave it out to keep the input's")
        return True, str(value.value)
    sinfo = struct_info_of(arg)
    if isinstance(sinfo, ObjectStructInfo):
        return True, None
    raise StructInfoTypeError(f"{VIEW}: the dtype must be R.dtype(...), got {struct_info_text(sinfo)}")


def _view_offset(arg: Expr) -> PrimExpr | None:
    """The relative byte offset (0 when left out; None when only known at run time)."""
    if _is_void(arg):
        return IntImm("int64", 0)
    sinfo = struct_info_of(arg)
    if not isinstance(sinfo, PrimStructInfo):
        raise StructInfoTypeError(f"{VIEW}: relative_byte_offset must be an int64 R.prim_value, "
                                  f"got {struct_info_text(sinfo)}")
    if sinfo.dtype != "int64":
        raise StructInfoTypeError(f"{VIEW}: relative_byte_offset must be int64, got {sinfo.dtype}")
    return None if isinstance(arg, DataflowVar) else sinfo.value


def _element_bytes(dtype: str | None) -> int | None:
    match = re.search(r"(\d+)(x\d+)?$", dtype or "")
    if dtype in (None, "void") or (match is None and dtype != "bool"):
        return None
    return 1 if dtype == "bool" else -(-int(match.group(1)) // 8) * int((match.group(2) or "x1")[1:])


@register(VIEW, num_inputs=4)
def _infer_view(call: Call, ctx: Any) -> StructInfo:
    """The view's shape (else the input's) and dtype (else the input's), on the input's device."""
    if len(call.args) != 4:
        raise StructInfoError(f"{VIEW} takes 4 arguments (data, shape, dtype, relative_byte_offset), "
                              f"got {len(call.args)}")
    data, shape_arg, dtype_arg, offset_arg = call.args
    x = struct_info_of(data)
    if not isinstance(x, TensorStructInfo):
        raise StructInfoTypeError(f"{VIEW} expects a tensor, got {struct_info_text(x)}")
    shape = None if _is_void(shape_arg) else struct_info_of(shape_arg)
    if shape is not None and not isinstance(shape, ShapeStructInfo):
        raise StructInfoTypeError(f"{VIEW}: the shape must be R.shape(...) or left out, got {struct_info_text(shape)}")
    has_dtype, dtype = _view_dtype(dtype_arg, ctx)
    offset = _view_offset(offset_arg)
    in_shape = x.shape_values
    if shape is not None:
        out_shape, out_ndim = shape.values, shape.ndim
    else:
        out_shape, out_ndim = in_shape, x.ndim
    out_dtype = dtype if has_dtype else (None if x.is_unknown_dtype else x.dtype)
    _check_view_bounds(x, in_shape, out_shape, _element_bytes(None if x.is_unknown_dtype else x.dtype),
                       _element_bytes(out_dtype), offset, shape is not None, has_dtype)
    out_dtype = out_dtype or "void"
    if out_shape is not None:
        return TensorStructInfo(list(out_shape), out_dtype, x.vdevice)
    return TensorStructInfo(None, out_dtype, x.vdevice, out_ndim)


def _check_view_bounds(x: TensorStructInfo, in_shape: Any, out_shape: Any, in_size: int | None,
                       out_size: int | None, offset: PrimExpr | None, has_shape: bool, has_dtype: bool) -> None:
    """Refuse a view that provably ends past the viewed array (as TVM, from what is known)."""
    def refuse(what: str) -> None:
        raise StructInfoError(f"{VIEW}: a view must stay inside the array it views ({struct_info_text(x)}): {what}")

    n_in = None if in_shape is None else product(in_shape)
    n_out = None if out_shape is None else product(out_shape)
    if n_in is not None and n_out is not None and in_size and out_size:
        end = n_out * out_size + (offset if offset is not None else 0)
        if _ANALYZER.can_prove(end > n_in * in_size):
            refuse(f"it would end at byte {_ANALYZER.simplify(end)} of {_ANALYZER.simplify(n_in * in_size)}")
    elif in_size and out_size and not has_shape:
        if out_size > in_size:
            refuse(f"each element grows from {in_size} to {out_size} bytes; give a smaller shape too")
    elif n_in is not None and n_out is not None and not has_dtype:
        if _ANALYZER.can_prove(n_out > n_in):
            refuse(f"{_ANALYZER.simplify(n_out)} elements viewed in {_ANALYZER.simplify(n_in)}")
    elif offset is not None and not has_shape and not has_dtype:
        if _ANALYZER.can_prove(offset > 0):
            refuse(f"a byte offset of {offset} without fewer or smaller elements")


def _arg(value: Any, kind: str) -> Expr:
    """A view argument as TVM stores it: left out -> an empty tuple."""
    if value is None:
        return Tuple([])
    if isinstance(value, Expr):
        return value
    if kind == "shape":
        return ShapeExpr(list(value))
    if kind == "dtype":
        return DataTypeImm(str(value))
    return PrimValue(IntImm("int64", int(value)) if isinstance(value, int) else value)


def view(data: Expr, shape: Any = None, dtype: Any = None, relative_byte_offset: Any = None) -> Call:
    """``data``'s memory seen with a new ``shape``, ``dtype`` and/or ``relative_byte_offset``
    (bytes from where ``data`` starts); each left out keeps ``data``'s."""
    return make_call(VIEW, data, _arg(shape, "shape"), _arg(dtype, "dtype"), _arg(relative_byte_offset, "offset"))


@register("relax.memory.ensure_zero_offset", num_inputs=1)
def _infer_ensure_zero_offset(call: Call, ctx: Any) -> StructInfo:
    """The input's struct info (the runtime copies a view with an offset to fresh memory)."""
    if len(call.args) != 1:
        raise StructInfoError(f"relax.memory.ensure_zero_offset takes 1 argument, got {len(call.args)}")
    return struct_info_of(call.args[0])


def ensure_zero_offset(x: Expr) -> Call:
    """``x`` itself, or a copy when it is a view starting past its memory's beginning."""
    return make_call("relax.memory.ensure_zero_offset", x)


def _lower_view(bb: Any, call: Call) -> Expr:
    """``runtime.TVMTensorCreateView(data, shape, dtype, offset)`` with each left-out argument
    filled from the input (nothing left to change: the input itself)."""
    data, shape, dtype, offset = call.args
    no_dtype = _is_void(dtype) or (isinstance(_bound_value(dtype, bb), Call)
                                   and getattr(_bound_value(dtype, bb).op, "name", None) == "relax.null_value")
    if _is_void(shape) and no_dtype and _is_void(offset):
        return data
    x = struct_info_of(data)
    if _is_void(shape):
        if x.shape_values is None:
            raise StructInfoError(f"{VIEW}: lowering needs the view's shape or a known input shape, got "
                                  f"{struct_info_text(x)}")
        shape = ShapeExpr(list(x.shape_values))
    if no_dtype:
        if x.is_unknown_dtype:
            raise StructInfoError(f"{VIEW}: lowering needs the view's dtype or a known input dtype, got "
                                  f"{struct_info_text(x)}")
        dtype = DataTypeImm(x.dtype)
    if _is_void(offset):
        offset = PrimValue(IntImm("int64", 0))
    # as TVM: an opaque pure function whose result the view's own inference works out per call
    callee = ExternFunc(VIEW_RUNTIME_FUNC)
    _set_struct_info(callee, FuncStructInfo.opaque_func(purity=True, derive_func=VIEW_DERIVE_FUNC))
    return Call(callee, [data, shape, dtype, offset])


def _lower_ensure_zero_offset(bb: Any, call: Call) -> Expr:
    return Call(ExternFunc("vm.builtin.ensure_zero_offset"), list(call.args), None, [call.struct_info])


register_func(VIEW_DERIVE_FUNC, _infer_view, override=True)  # override: re-imports are harmless
Op.get(VIEW).set_attr("FLowerBuiltin", _lower_view)
Op.get(VIEW).set_attr("RequiresArgumentShapes", False)
Op.get("relax.memory.ensure_zero_offset").set_attr("FLowerBuiltin", _lower_ensure_zero_offset)
