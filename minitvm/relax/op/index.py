"""Indexing: ``take`` (gather along an axis) and ``strided_slice``."""

from __future__ import annotations

from typing import Any, Sequence

from ...ir import dtype as _dt
from ...ir.op import Op
from ...tir.expr import IntImm, PrimExpr
from ...tir.op import logical_and as tir_and
from ...topi.transform import slice_extent, slice_length
from ..analysis.struct_info_analysis import prove_dim_differ
from ..expr import Call, Expr, PrimValue, Tuple, struct_info_of
from ..struct_info import (
    PrimStructInfo,
    StructInfo,
    StructInfoError,
    StructInfoTypeError,
    TensorStructInfo,
    shape_text,
    struct_info_text,
)
from ._utils import _ANALYZER, expr_dims, normalize_axis
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["take", "strided_slice"]


@register("relax.take", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_take(call: Call, ctx: Any) -> StructInfo:
    """``x``'s shape with dimension ``axis`` replaced by the indices' shape (axis None: a
    1-D ``x``, the indices' shape)."""
    op = "relax.take"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "x")
    if call.attrs.get("mode", "fast") not in _TAKE_MODES:
        raise StructInfoError(f"{op}: mode must be one of {', '.join(_TAKE_MODES)}, got {call.attrs['mode']!r}")
    scalar = struct_info_of(call.args[1])
    if isinstance(scalar, PrimStructInfo):
        # one index (R.Prim): the axis disappears, as with a 0-d index tensor
        if not _dt.is_int(scalar.dtype):
            raise StructInfoError(f"{op}: the index must be an integer, got {struct_info_text(scalar)}")
        idx = TensorStructInfo([], scalar.dtype)
    else:
        idx = tensor_arg(call, 1, op, "indices")
    if not idx.is_unknown_dtype and not _dt.is_int(idx.dtype):
        raise StructInfoError(f"{op}: indices must be an integer tensor, got dtype {idx.dtype}")
    axis = call.attrs["axis"]
    if axis is None and x.ndim != 1:
        raise StructInfoError(f"{op}: without an axis the data must be 1-D, got {struct_info_text(x)}")
    if x.ndim == -1 or idx.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    axis = 0 if axis is None else normalize_axis(op, axis, x.ndim)
    xv, iv = expr_dims(x), expr_dims(idx)
    if xv is None or iv is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, x.ndim - 1 + idx.ndim)
    return TensorStructInfo(list(xv[:axis]) + list(iv) + list(xv[axis + 1:]), x.dtype, x.vdevice)


_TAKE_MODES = ("fast", "clip", "wrap")


def take(x: Expr, indices: Expr, axis: int | None = None, mode: str = "fast") -> Call:
    """The elements of ``x`` at ``indices`` (a tensor, or one R.Prim index) along ``axis``
    (embedding lookups).  ``mode`` says what an out-of-range index does: "fast" assumes
    there is none (TVM's default), "clip" clamps it, "wrap" wraps it around."""
    if mode not in _TAKE_MODES:
        raise ValueError(f"relax.take: mode must be one of {', '.join(_TAKE_MODES)}, got {mode!r}")
    return make_call("relax.take", x, indices, attrs={"axis": None if axis is None else int(axis), "mode": mode})


@register("relax.strided_slice", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_strided_slice(call: Call, ctx: Any) -> StructInfo:
    """``x[begin:end:strides]`` along ``axes``, bounds clamped as in numpy; symbolic bounds
    give a symbolic length (clamped into the axis unless ``assume_inbound``)."""
    op = "relax.strided_slice"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    a = call.attrs
    axes, begin, end, strides = a["axes"], a["begin"], a["end"], a["strides"]
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise StructInfoError(f"{op}: axes, begin, end and strides must have equal lengths, got "
                              f"{len(axes)}, {len(begin)}, {len(end)} and {len(strides)}")
    if any(s == 0 for s in strides):
        raise StructInfoError(f"{op}: a stride of 0 is not allowed")
    vals = x.shape_values
    if not axes:  # as TVM: nothing sliced, the shape's values written out where known
        return TensorStructInfo(list(vals) if vals is not None else x.shape, x.dtype, x.vdevice,
                                x.ndim if vals is None and x.shape is None else -1)
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    norm = [normalize_axis(op, ax, x.ndim) for ax in axes]
    if len(set(norm)) != len(norm):
        raise StructInfoError(f"{op}: axes {list(axes)} repeat an axis")
    if vals is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, x.ndim)
    out = list(vals)
    for ax, b, e, s in zip(norm, begin, end, strides):
        inbound = a.get("assume_inbound", False)
        start_len = slice_extent(vals[ax], b, e, s, inbound)
        out[ax] = start_len[1] if start_len is not None else _symbolic_length(vals[ax], b, e, s, inbound)
    return TensorStructInfo(out, x.dtype, x.vdevice)


def _symbolic_length(dim: Any, b: Any, e: Any, s: int, inbound: bool) -> Any:
    """A slice length the bounds leave symbolic, simplified as TVM's struct info does (the
    bounds are known to lie inside the axis when ``assume_inbound``)."""
    length = slice_length(dim, b, e, s, inbound)
    if not inbound:
        return _ANALYZER.simplify(length)
    bb, ee = (IntImm("int64", v) if isinstance(v, int) else v for v in (b, e))
    zero = IntImm("int64", 0)
    with _ANALYZER.constraint_scope(tir_and(tir_and(zero <= bb, bb <= dim), tir_and(zero <= ee, ee <= dim))):
        return _ANALYZER.simplify(length)


def _prim_values(v: Any) -> Any:
    fields = v.fields if isinstance(v, Tuple) else v
    if isinstance(fields, (list, tuple)) and fields and all(isinstance(f, PrimValue) for f in fields):
        return [f.value for f in fields]
    return v


def strided_slice(x: Expr, axes: Sequence[int], begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None, assume_inbound: bool = False) -> Call:
    """``x[begin:end:strides]`` along ``axes`` (strides default to 1).  ``assume_inbound``
    promises the bounds are inside the axes (no clamping needed)."""
    # TVM's printer writes the lists as tuples of R.prim_value (its strided_slice takes them as
    # arguments); read them back as the lists they are
    axes, begin, end, strides = (_prim_values(v) for v in (axes, begin, end, strides))
    for name, v in (("axes", axes), ("begin", begin), ("end", end), ("strides", strides)):
        if isinstance(v, Expr):  # a tensor of bounds: TVM's strided_slice refuses it too
            raise StructInfoError(f"relax.strided_slice: {name} must be a list of integers, got the Relax "
                                  f"expression {v}; for bounds held in tensors use relax.op.dynamic_strided_slice")
    strides = [1] * len(axes) if strides is None else strides
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise StructInfoError(f"relax.strided_slice: axes, begin, end and strides must have equal lengths, "
                              f"got {len(axes)}, {len(begin)}, {len(end)} and {len(strides)}")
    # a bound may be symbolic (end=[8, n]); constants are kept as ints
    bound = lambda v: v if isinstance(v, PrimExpr) and not isinstance(v, IntImm) else int(v)  # noqa: E731
    return make_call("relax.strided_slice", x, attrs={
        "axes": tuple(int(v) for v in axes), "begin": tuple(bound(v) for v in begin),
        "end": tuple(bound(v) for v in end), "strides": tuple(int(v) for v in strides),
        "assume_inbound": bool(assume_inbound)})


# -- gather / scatter along one axis (torch's gather, scatter, scatter_add) ----------------------

def _index_tensor(call: Call, k: int, op: str, name: str) -> TensorStructInfo:
    idx = tensor_arg(call, k, op, name)
    if not idx.is_unknown_dtype and not _dt.is_int(idx.dtype):
        raise StructInfoError(f"{op}: {name} must be an integer tensor, got dtype {idx.dtype}")
    return idx


@register("relax.gather_elements", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_gather_elements(call: Call, ctx: Any) -> StructInfo:
    """The data's dtype and device in the indices' shape; both have the same number of dimensions."""
    op = "relax.gather_elements"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    idx = _index_tensor(call, 1, op, "indices")
    if x.ndim == -1 or idx.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    normalize_axis(op, call.attrs["axis"], x.ndim)
    if x.ndim != idx.ndim:
        raise StructInfoError(f"{op}: data {struct_info_text(x)} and indices {struct_info_text(idx)} "
                              "must have the same number of dimensions")
    return TensorStructInfo(idx.shape, x.dtype, x.vdevice, idx.ndim if idx.shape is None else -1)


def gather_elements(data: Expr, indices: Expr, axis: int = 0) -> Call:
    """``out[i] = data[i with i[axis] = indices[i]]`` (torch's ``gather``)."""
    return make_call("relax.gather_elements", data, indices, attrs={"axis": int(axis)})


_SCATTER_REDUCTIONS = ("update", "add", "mul", "max", "min")


def _scatter_args(call: Call, op: str) -> tuple:
    """The struct infos of a scatter's data, indices and updates, its reduction checked."""
    check_num_args(call, op, 3)
    x = tensor_arg(call, 0, op, "data")
    idx = _index_tensor(call, 1, op, "indices")
    upd = tensor_arg(call, 2, op, "updates")
    if call.attrs["reduction"] not in _SCATTER_REDUCTIONS:
        raise StructInfoError(f"{op}: reduction must be one of {', '.join(_SCATTER_REDUCTIONS)}, "
                              f"got {call.attrs['reduction']!r}")
    return x, idx, upd


@register("relax.scatter_elements", pattern=OpPattern.OPAQUE, num_inputs=3)
def _infer_scatter_elements(call: Call, ctx: Any) -> StructInfo:
    """The data's struct info; indices and updates have one shape and the data's rank. As
    TVM, the reduction is read only when the op is legalized."""
    op = "relax.scatter_elements"
    check_num_args(call, op, 3)
    x = tensor_arg(call, 0, op, "data")
    idx = _index_tensor(call, 1, op, "indices")
    upd = tensor_arg(call, 2, op, "updates")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    if idx.ndim != -1 and upd.ndim != -1 and not x.ndim == idx.ndim == upd.ndim:
        raise StructInfoError(f"{op}: data, indices and updates must have the same number of dimensions, "
                              f"got {x.ndim}, {idx.ndim} and {upd.ndim}")
    if not x.is_unknown_dtype and not upd.is_unknown_dtype and x.dtype != upd.dtype:
        raise StructInfoTypeError(f"{op}: data is {x.dtype} but updates are {upd.dtype}")
    normalize_axis(op, call.attrs["axis"], x.ndim)
    iv, uv = expr_dims(idx), expr_dims(upd)
    if iv is not None and uv is not None and any(prove_dim_differ(i, u) for i, u in zip(iv, uv)):
        raise StructInfoError(f"{op}: indices {shape_text(iv)} and updates {shape_text(uv)} must have one shape")
    vals = expr_dims(x)
    return TensorStructInfo(None if vals is None else list(vals), x.dtype, x.vdevice, x.ndim if vals is None else -1)


def scatter_elements(data: Expr, indices: Expr, updates: Expr, axis: int = 0, reduction: str = "update") -> Call:
    """``data`` with ``updates[j]`` written (or combined by ``reduction``) at ``j`` with
    ``j[axis] = indices[j]`` (torch's ``scatter`` / ``scatter_add`` / ``scatter_reduce``)."""
    return make_call("relax.scatter_elements", data, indices, updates,
                     attrs={"axis": int(axis), "reduction": reduction})


__all__ += ["gather_elements", "scatter_elements"]


@register("relax.gather_nd", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_gather_nd(call: Call, ctx: Any) -> StructInfo:
    """``indices.shape[:-1] + data.shape[batch_dims + K:]`` with ``K = indices.shape[-1]``
    (a constant); indices are int64."""
    op = "relax.gather_nd"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    idx = tensor_arg(call, 1, op, "indices")
    batch = call.attrs["batch_dims"]
    if not idx.is_unknown_dtype and idx.dtype != "int64":
        raise StructInfoTypeError(f"{op}: indices must be int64, got {struct_info_text(idx)}")
    if x.ndim == -1 or idx.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    if batch > x.ndim or batch > idx.ndim - 1:
        raise StructInfoError(f"{op}: batch_dims {batch} must be at most the rank of data ({x.ndim}) "
                              f"and below the rank of indices ({idx.ndim})")
    iv, xv = expr_dims(idx), expr_dims(x)
    if iv is None or not isinstance(iv[-1], IntImm):
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    k = iv[-1].value
    if xv is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, idx.ndim + x.ndim - k - 1 - batch)
    if k > x.ndim - batch:
        raise StructInfoError(f"{op}: the last dimension of indices {shape_text(iv)} ({k}) exceeds the rank "
                              f"of data {shape_text(xv)} less batch_dims {batch}")
    return TensorStructInfo(list(iv[:-1]) + list(xv[batch + k:]), x.dtype, x.vdevice)


def gather_nd(data: Expr, indices: Expr, batch_dims: int = 0) -> Call:
    """``out[j] = data[b..., indices[j]...]``: ``indices``' last axis holds the ``K`` leading
    coordinates after ``batch_dims`` shared batch axes (ONNX's GatherND)."""
    if int(batch_dims) < 0:
        raise StructInfoError(f"relax.gather_nd: batch_dims must be non-negative, got {batch_dims}")
    return make_call("relax.gather_nd", data, indices, attrs={"batch_dims": int(batch_dims)})


__all__ += ["gather_nd"]


@register("relax.scatter_nd", pattern=OpPattern.OPAQUE, num_inputs=3)
def _infer_scatter_nd(call: Call, ctx: Any) -> StructInfo:
    """The data's struct info; with known shapes, ``updates.shape`` must be
    ``indices.shape[:-1] + data.shape[K:]`` where ``K = indices.shape[-1]`` (constant)."""
    op = "relax.scatter_nd"
    x, idx, upd = _scatter_args(call, op)
    if x.is_unknown_dtype or upd.is_unknown_dtype:
        raise StructInfoError(f"{op}: data and updates need known dtypes, got {x.dtype!r} and {upd.dtype!r}")
    if x.dtype != upd.dtype:
        raise StructInfoError(f"{op}: data is {x.dtype} but updates are {upd.dtype}")
    xv, iv, uv = x.shape_values, idx.shape_values, upd.shape_values
    if xv is not None and iv is not None and uv is not None:
        _check_scatter_nd_shapes(op, list(xv), list(iv), list(uv), ctx)
    return TensorStructInfo(list(xv), x.dtype) if xv is not None else TensorStructInfo(None, x.dtype, None, x.ndim)


def _check_scatter_nd_shapes(op: str, xv: list, iv: list, uv: list, ctx: Any) -> None:
    if not iv or not isinstance(iv[-1], IntImm):
        raise StructInfoError(f"{op}: the last axis of indices must have a constant length, got {shape_text(iv)}")
    k = iv[-1].value
    if len(xv) + len(iv) - k - 1 != len(uv):
        raise StructInfoError(f"{op}: updates must have rank rank(data) + rank(indices) - indices.shape[-1] - 1, "
                              f"got data {shape_text(xv)}, indices {shape_text(iv)}, updates {shape_text(uv)}")
    if k > len(xv):
        raise StructInfoError(f"{op}: indices.shape[-1] = {k} exceeds the rank of data {shape_text(xv)}")
    expected = iv[:-1] + xv[k:]
    if any(not _ANALYZER.can_prove_equal(a, b) for a, b in zip(expected, uv)):
        raise StructInfoError(f"{op}: updates.shape must be indices.shape[:-1] + data.shape[K:], got updates "
                              f"{shape_text(uv)}, indices {shape_text(iv)}, data {shape_text(xv)}")


def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "update") -> Call:
    """``data`` with ``updates[j]`` written (or combined by ``reduction``: update, add, mul,
    max, min) at ``data[indices[j]]``; ``indices``' last axis holds the ``K`` leading
    coordinates (ONNX's ScatterND)."""
    return make_call("relax.scatter_nd", data, indices, updates, attrs={"reduction": reduction})


__all__ += ["scatter_nd"]


@register("relax.dynamic_strided_slice", pattern=OpPattern.INJECTIVE, num_inputs=4)
def _infer_dynamic_strided_slice(call: Call, ctx: Any) -> StructInfo:
    """``x``'s dtype and rank (the extents are known only at run time); begin, end and strides
    are 1-d int64 tensors with one value per axis of ``x``."""
    op = "relax.dynamic_strided_slice"
    check_num_args(call, op, 4)
    x = tensor_arg(call, 0, op, "x")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    for k, name in enumerate(("begin", "end", "strides"), start=1):
        arg = tensor_arg(call, k, op, name)
        values = arg.shape_values
        if arg.ndim != 1 or values is None or not isinstance(values[0], IntImm):
            raise StructInfoError(f"{op}: {name} must be a 1-d tensor of constant length, got {struct_info_text(arg)}")
        if values[0].value != x.ndim:
            raise StructInfoError(f"{op}: {name} has {values[0].value} values but x has {x.ndim} axes")
        if not arg.is_unknown_dtype and arg.dtype != "int64":
            raise StructInfoError(f"{op}: {name} must be int64, got {arg.dtype}")
    return TensorStructInfo(None, x.dtype, None, x.ndim)


def dynamic_strided_slice(x: Expr, begin: Expr, end: Expr, strides: Expr) -> Call:
    """``x[begin:end:strides]`` with the bounds in 1-d int64 tensors (one value per axis of
    ``x``) read at run time; negative strides walk backwards, bounds are clamped as numpy does."""
    return make_call("relax.dynamic_strided_slice", x, begin, end, strides)


Op.get("relax.dynamic_strided_slice").set_attr("FDataDependent", True)
__all__ += ["dynamic_strided_slice"]
