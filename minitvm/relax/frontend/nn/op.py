"""Functional operators on :class:`nn.Tensor` (``nn.op.matmul(x, w)``, ``nn.op.split(x, 2, -1)``).

Each one builds a high-level Relax op call (``relax.op.*``) and emits it through the builder of
the function being exported; ``relax.get_pipeline("zero")`` legalizes them later.  Python numbers
are accepted where a tensor operand is, as constants of the other operand's dtype.  Escape
hatches, as in TVM: :func:`tensor_expr_op` (a TE function), :func:`tensor_ir_op` (a PrimFunc)
and :func:`extern` (a registered packed function, destination-passing).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ....tir.expr import FloatImm, IntImm, PrimExpr
from ....tir.function import PrimFunc
from ... import expr as rx
from ... import op as _op
from .core import Tensor, current_builder, wrap_nested

__all__ = ["add", "subtract", "multiply", "divide", "negative", "maximum", "minimum", "matmul",
           "linear", "permute_dims", "permute", "reshape", "take", "mean", "sum", "max", "min", "sqrt",
           "rsqrt", "exp", "log", "floor", "square", "tanh", "sigmoid", "astype", "relu", "gelu", "silu",
           "softmax", "layer_norm", "conv1d", "conv2d", "group_norm", "rms_norm", "split", "chunk", "concat",
           "unsqueeze",
           "squeeze", "repeat", "broadcast_to", "where", "triu", "full", "arange", "empty", "zeros", "ones", "less",
           "less_equal", "greater", "greater_equal", "equal", "not_equal", "tensor_expr_op",
           "tensor_ir_op", "tensor_ir_inplace_op", "extern", "wrap_nested", "sort", "argsort", "topk"]


def _emit(expr: rx.Expr, name: str = "") -> Tensor:
    return Tensor(_expr=current_builder().emit(expr, name))


def _pair(a: Any, b: Any) -> tuple[rx.Expr, rx.Expr]:
    """Relax operands for a binary op; a Python number takes the tensor operand's dtype."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a._expr, b._expr
    if isinstance(a, Tensor):
        return a._expr, _scalar(b, a)
    if isinstance(b, Tensor):
        return _scalar(a, b), b._expr
    raise TypeError(f"nn.op: expected an nn.Tensor operand, got {type(a).__name__} and {type(b).__name__}")


def _scalar(value: Any, like: Tensor) -> rx.Constant:
    """A Python number as a 0-d constant of ``like``'s dtype (it broadcasts)."""
    if isinstance(value, (IntImm, FloatImm)):
        value = value.value
    if not isinstance(value, (int, float, bool, np.number)):
        raise TypeError(f"nn.op: expected an nn.Tensor or a number, got {type(value).__name__}")
    return rx.const(np.array(value, dtype=like.dtype))


def _binary(fn: Any, default_name: str) -> Any:
    def op(a: Any, b: Any, name: str = default_name) -> Tensor:
        x, y = _pair(a, b)
        return _emit(fn(x, y), name)
    op.__name__ = fn.__name__
    op.__doc__ = f"Element-wise ``{fn.__name__}`` with broadcasting (relax.op.{fn.__name__})."
    return op


add = _binary(_op.add, "add")
subtract = _binary(_op.subtract, "subtract")
multiply = _binary(_op.multiply, "mul")
divide = _binary(_op.divide, "divide")
maximum = _binary(_op.maximum, "maximum")
minimum = _binary(_op.minimum, "minimum")
less = _binary(_op.less, "less")
less_equal = _binary(_op.less_equal, "less_equal")
greater = _binary(_op.greater, "greater")
greater_equal = _binary(_op.greater_equal, "greater_equal")
equal = _binary(_op.equal, "equal")
not_equal = _binary(_op.not_equal, "not_equal")


def _unary(fn: Any, default_name: str) -> Any:
    def op(x: Tensor, name: str = default_name) -> Tensor:
        return _emit(fn(x._expr), name)
    op.__name__ = fn.__name__
    op.__doc__ = f"Element-wise ``{fn.__name__}`` (relax.op.{fn.__name__})."
    return op


negative = _unary(_op.negative, "neg")
sqrt = _unary(_op.sqrt, "sqrt")
rsqrt = _unary(_op.rsqrt, "rsqrt")
exp = _unary(_op.exp, "exp")
log = _unary(_op.log, "log")
floor = _unary(_op.floor, "floor")
square = _unary(_op.square, "square")
tanh = _unary(_op.tanh, "tanh")
sigmoid = _unary(_op.sigmoid, "sigmoid")
relu = _unary(_op.nn.relu, "relu")
silu = _unary(_op.nn.silu, "silu")


def gelu(x: Tensor, approximate: str | None = None, name: str = "gelu") -> Tensor:
    """GELU; ``approximate="tanh"`` uses the tanh approximation."""
    if approximate == "tanh":
        return _emit(_op.nn.gelu_tanh(x._expr), name)
    return _emit(_op.nn.gelu(x._expr), name)


def matmul(a: Tensor, b: Tensor, out_dtype: str | None = None, name: str = "matmul") -> Tensor:
    """``a @ b`` (numpy.matmul semantics, batched)."""
    return _emit(_op.matmul(a._expr, b._expr, out_dtype), name)


def permute_dims(x: Tensor, axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
    axes = list(axes) if axes else None
    return _emit(_op.permute_dims(x._expr, axes), name or "permute_dims")


def permute(x: Tensor, axes: Sequence[int] | None, name: str = "permute") -> Tensor:
    return permute_dims(x, axes, name)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, out_dtype: str | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features): emitted
    as permute_dims, matmul, add (as nn.Linear does)."""
    out = matmul(x, permute_dims(weight), out_dtype)
    return out if bias is None else add(out, bias)


def reshape(x: Tensor, shape: Sequence[Any], name: str = "reshape") -> Tensor:
    return _emit(_op.reshape(x._expr, tuple(shape)), name)


def take(x: Tensor, indices: Tensor, axis: int | None = None, name: str = "take") -> Tensor:
    return _emit(_op.take(x._expr, indices._expr, axis), name)


def mean(x: Tensor, axis: Any = None, keepdims: bool = False, name: str = "mean") -> Tensor:
    return _emit(_op.mean(x._expr, axis, keepdims), name)


def sum(x: Tensor, axis: Any = None, keepdims: bool = False, name: str = "sum") -> Tensor:  # noqa: A001
    return _emit(_op.sum(x._expr, axis, keepdims), name)


def max(x: Tensor, axis: Any = None, keepdims: bool = False, name: str = "max") -> Tensor:  # noqa: A001
    return _emit(_op.max(x._expr, axis, keepdims), name)


def min(x: Tensor, axis: Any = None, keepdims: bool = False, name: str = "min") -> Tensor:  # noqa: A001
    return _emit(_op.min(x._expr, axis, keepdims), name)


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    if x.dtype == dtype:
        return x  # TVM emits nothing for a no-op cast either
    return _emit(_op.astype(x._expr, dtype), name)


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    return _emit(_op.nn.softmax(x._expr, axis), name)


def layer_norm(x: Tensor, normalized_shape: Any = None, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, name: str = "layer_norm", *, axes: Any = None) -> Tensor:
    """Layer normalization over the last ``len(normalized_shape)`` axes (or ``axes``)."""
    if isinstance(normalized_shape, Tensor):  # the older (x, weight, bias, axes, eps) order
        normalized_shape, weight, bias, axes, eps = None, normalized_shape, weight, bias, eps
    if axes is None:
        n = 1 if normalized_shape is None or isinstance(normalized_shape, int) else len(normalized_shape)
        axes = list(range(-n, 0))
    if weight is None or bias is None:
        raise ValueError("nn.op.layer_norm: weight and bias are required")
    return _emit(_op.nn.layer_norm(x._expr, weight._expr, bias._expr, axes, eps), name)


def rms_norm(x: Tensor, weight: Tensor, axes: int | Sequence[int] = -1, epsilon: float = 1e-5,
             name: str = "rms_norm") -> Tensor:
    """``x / sqrt(mean(x**2, axes) + epsilon) * weight`` (``R.nn.rms_norm``)."""
    return _emit(_op.nn.rms_norm(x._expr, weight._expr, axes, epsilon), name)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1, name: str = "conv2d") -> Tensor:
    """NCHW convolution with an OIHW ``weight``; ``bias`` of shape (out_channels,)."""
    out = _emit(_op.nn.conv2d(x._expr, weight._expr, stride, padding, dilation, groups), name)
    if bias is None:
        return out
    return add(out, reshape(bias, (1, bias.shape[0], 1, 1)))


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1, name: str = "conv1d") -> Tensor:
    """NCW convolution with an OIW ``weight``; ``bias`` of shape (out_channels,)."""
    out = _op.nn.conv1d(x._expr, weight._expr, stride, padding, dilation, groups)
    if bias is not None:
        out = _op.add(out, _op.reshape(bias._expr, [1, bias.shape[0], 1]))
    return wrap_nested(out, name)


def group_norm(x: Tensor, num_groups: int, weight: Tensor, bias: Tensor, eps: float = 1e-5,
               channel_axis: int = 1, axes: Sequence[int] | None = None, name: str = "group_norm") -> Tensor:
    """Group normalization: channels in ``num_groups`` groups, each normalized over itself and
    ``axes`` (default: every axis after the first two)."""
    if weight is None or bias is None:
        raise NotImplementedError("nn.op.group_norm without weight and bias (affine=False)")
    axes = list(range(2, x.ndim)) if axes is None else list(axes)
    return wrap_nested(_op.nn.group_norm(x._expr, weight._expr, bias._expr, num_groups, channel_axis, axes, eps),
                       name)


def split(ary: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0,
          name: str = "split") -> tuple[Tensor, ...]:
    """``ary`` cut along ``axis`` into equal sections or at the given indices: a tuple of Tensors."""
    return wrap_nested(_op.split(ary._expr, indices_or_sections, axis), name)


def sort(x: Tensor, axis: int = -1, descending: bool = False, name: str = "sort") -> Tensor:
    """``x`` sorted along ``axis`` (stable)."""
    return wrap_nested(_op.sort(x._expr, axis, descending), name)


def argsort(data: Tensor, axis: int = -1, descending: bool = False, dtype: str = "int32",
            name: str = "argsort") -> Tensor:
    """The indices that sort ``data`` along ``axis``, as ``dtype``."""
    return wrap_nested(_op.argsort(data._expr, axis, descending, dtype), name)


def topk(data: Tensor, k: int = 1, axis: int = -1, ret_type: str = "both", largest: bool = True,
         dtype: str = "int32", name: str = "topk") -> Any:
    """The ``k`` largest (smallest unless ``largest``) elements along ``axis`` and their
    indices: a pair of Tensors, or one with ``ret_type`` "values"/"indices"."""
    return wrap_nested(_op.topk(data._expr, k, axis, ret_type, largest, dtype), name)


def chunk(x: Tensor, chunks: int, dim: int = 0, name: str = "chunk") -> tuple[Tensor, ...]:
    return split(x, chunks, dim, name)


def concat(x: Sequence[Tensor], dim: int, name: str = "concat") -> Tensor:
    return _emit(_op.concat([t._expr for t in x], dim), name)


def unsqueeze(x: Tensor, dim: int, name: str = "unsqueeze") -> Tensor:
    return _emit(_op.expand_dims(x._expr, dim), name)


def squeeze(x: Tensor, axis: int = -1, name: str = "squeeze") -> Tensor:
    return _emit(_op.squeeze(x._expr, axis), name)


def repeat(x: Tensor, repeats: int, axis: int | None = None, name: str = "repeat") -> Tensor:
    return _emit(_op.repeat(x._expr, repeats, axis), name)


def broadcast_to(x: Tensor, shape: Sequence[Any], name: str = "broadcast_to") -> Tensor:
    return _emit(_op.broadcast_to(x._expr, tuple(shape)), name)


def where(condition: Tensor, x1: Tensor, x2: Tensor, name: str = "where") -> Tensor:
    return _emit(_op.where(condition._expr, x1._expr, x2._expr), name)


def triu(x: Tensor, diagonal: int = 0, name: str = "triu") -> Tensor:
    return _emit(_op.triu(x._expr, diagonal), name)


def full(shape: Sequence[Any], fill_value: Any, dtype: str = "float32", name: str = "full") -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value`` (a number, a tir constant or a 0-d Tensor)."""
    if isinstance(fill_value, (IntImm, FloatImm)):
        fill_value = fill_value.value
    fill = fill_value._expr if isinstance(fill_value, Tensor) else rx.const(np.array(fill_value, dtype=dtype))
    return _emit(_op.full(tuple(shape), fill, dtype), name)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: str = "float32", name: str = "arange") -> Tensor:
    """``numpy.arange(start, end, step)`` as a 1-D tensor of ``dtype``."""
    return _emit(_op.arange(start, end, step, dtype), name)


def empty(shape: Sequence[Any], dtype: str = "float32", name: str = "empty") -> Tensor:
    """An uninitialized tensor (``R.builtin.alloc_tensor``)."""
    return _emit(_op.builtin.alloc_tensor(rx.ShapeExpr(list(shape)), dtype, 0), name)


def zeros(shape: Sequence[Any], dtype: str = "float32", name: str = "zeros") -> Tensor:
    return _emit(_op.zeros(tuple(shape), dtype), name)


def ones(shape: Sequence[Any], dtype: str = "float32", name: str = "ones") -> Tensor:
    return _emit(_op.ones(tuple(shape), dtype), name)


# -- escape hatches: TE, TIR and packed functions --------------------------------------------

def tensor_expr_op(tensor_expr_func: Callable, name_hint: str, args: Sequence[Any], *,
                   attrs: dict[str, Any] | None = None) -> Any:
    """Call ``tensor_expr_func`` on TE placeholders of ``args`` (Tensors; tir expressions and ints
    pass through) and emit the PrimFunc it describes as ``R.call_tir`` (named ``name_hint``)."""
    call_args = [a._expr if isinstance(a, Tensor) else a for a in args]
    bb = current_builder()
    var = bb.emit_te(tensor_expr_func, *call_args, primfunc_name_hint=name_hint, primfunc_attrs=attrs)
    return wrap_nested(var, name_hint)


def _tir_call_args(args: Any, what: str) -> list[Any]:
    """call_tir arguments in the PrimFunc's order: tensors, and tir expressions (a ShapeExpr's
    values each) as ``R.prim_value`` where the PrimFunc takes a scalar."""
    out: list[Any] = []
    for a in args if isinstance(args, (tuple, list)) else [args]:
        if isinstance(a, Tensor):
            out.append(a._expr)
        elif isinstance(a, rx.ShapeExpr):
            out.extend(rx.PrimValue(v) for v in a.values)
        elif isinstance(a, PrimExpr):
            out.append(rx.PrimValue(a))
        else:
            raise TypeError(f"nn.op.{what}: arguments are Tensors, ShapeExprs or tir expressions, got "
                            f"{type(a).__name__}")
    return out


def _scalar_layout(func: PrimFunc, call_args: list[Any], n_outs: int, what: str) -> bool:
    """Whether ``func`` takes its scalars after its outputs (TVM before 0.26, which passed them as
    ``tir_vars``; TVM's own ``llama_rope`` kernel is still written so) instead of in the order the
    arguments are given (TVM 0.26 on).  Refuses a PrimFunc that fits neither."""
    is_buffer = [p in func.buffer_map for p in func.params]
    given = [not isinstance(a, rx.PrimValue) for a in call_args]
    if is_buffer == given + [True] * n_outs:
        return False
    if is_buffer == [g for g in given if g] + [True] * n_outs + [False] * given.count(False):
        return True
    raise TypeError(f"nn.op.{what}: the PrimFunc takes {len(is_buffer)} parameters "
                    f"({''.join('B' if b else 's' for b in is_buffer)}: B a buffer, s a scalar), but the call passes "
                    f"{''.join('B' if g else 's' for g in given)} followed by {n_outs} output buffer(s)")


def _call_tir_parts(func: PrimFunc, name_hint: str, args: Any, out: Any, what: str) -> tuple:
    """(GlobalVar of ``func`` in the module, call arguments, tir_vars or None, output struct info)."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"nn.op.{what}: expected a tir.PrimFunc, got {type(func).__name__}")
    call_args = _tir_call_args(args, what)
    outs = [out] if isinstance(out, Tensor) else list(out)
    sinfo = [o._expr.struct_info for o in outs]
    n_new = len(outs) if what == "tensor_ir_op" else None
    tir_vars = None
    if n_new is not None and _scalar_layout(func, call_args, n_new, what):
        tir_vars = [a.value for a in call_args if isinstance(a, rx.PrimValue)]
        call_args = [a for a in call_args if not isinstance(a, rx.PrimValue)]
    gvar = current_builder().add_func(func, name_hint)
    return gvar, call_args, tir_vars, sinfo if len(sinfo) > 1 else sinfo[0]


def tensor_ir_op(func: PrimFunc, name_hint: str, args: Any, out: Any) -> Any:
    """``R.call_tir`` of the PrimFunc ``func`` (added to the module as ``name_hint``); ``out``
    is a placeholder Tensor (or a list) describing the result; ``args`` are Tensors and tir
    expressions in the PrimFunc's parameter order (as TVM 0.26 on), or, for a PrimFunc whose
    scalar parameters come after its outputs, passed there as ``tir_vars`` (older TVM)."""
    gvar, call_args, tir_vars, sinfo = _call_tir_parts(func, name_hint, args, out, "tensor_ir_op")
    call = _op.call_tir(gvar, call_args, sinfo, tir_vars=tir_vars)
    return wrap_nested(current_builder().emit(call, name_hint), name_hint)


def tensor_ir_inplace_op(func: PrimFunc, name_hint: str, args: Any, inplace_indices: int | list[int],
                         out: Any) -> Any:
    """As :func:`tensor_ir_op`, but output ``k`` overwrites argument ``inplace_indices[k]``."""
    gvar, call_args, _, sinfo = _call_tir_parts(func, name_hint, args, out, "tensor_ir_inplace_op")
    call = _op.call_tir_inplace(gvar, call_args, inplace_indices, sinfo)
    return wrap_nested(current_builder().emit(call, name_hint), name_hint)


def _extern_arg(arg: Any) -> rx.Expr:
    if isinstance(arg, Tensor):
        return arg._expr
    if isinstance(arg, bool) or not isinstance(arg, (int, float, str, PrimExpr, tuple, list)):
        raise TypeError(f"nn.op.extern: unsupported argument {arg!r}")
    if isinstance(arg, int):
        return rx.PrimValue(IntImm("int64", arg))
    if isinstance(arg, float):
        return rx.PrimValue(FloatImm("float64", arg))
    if isinstance(arg, str):
        return rx.StringImm(arg)
    if isinstance(arg, PrimExpr):
        return rx.PrimValue(arg)
    return rx.Tuple([_extern_arg(a) for a in arg])


def extern(name: str, args: Sequence[Any], out: Any) -> Any:
    """Call the registered function ``name`` destination-passing style (``R.call_dps_packed``):
    it receives ``args`` and the output tensors to fill, described by ``out`` (placeholders)."""
    outs = [out] if isinstance(out, Tensor) else list(out)
    sinfo = [o._expr.struct_info for o in outs]
    call = _op.call_dps_packed(name, rx.Tuple([_extern_arg(a) for a in args]),
                               sinfo if len(sinfo) > 1 else sinfo[0])
    return wrap_nested(call, name)
