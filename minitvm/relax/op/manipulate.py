"""Tensor manipulation (TVM's ``relax.op.manipulate``): changing shape and layout
(permute_dims, reshape, flatten, expand_dims, squeeze, concat, split, broadcast_to),
rearranging elements (repeat, tile, flip) and the reductions back to a broadcast source
(collapse_sum_like, collapse_sum_to)."""

from __future__ import annotations

from typing import Any, Sequence

from ...arith import Analyzer, ConstIntBound
from ...ir.structural import structural_equal
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit
from ...tir.op import max as tir_max
from ...tir.op import min as tir_min
from ..analysis.struct_info_analysis import prove_dim_differ, prove_dim_equal
from ..expr import Call, Expr, Tuple, struct_info_of
from ..struct_info import (
    StructInfo,
    StructInfoError,
    TensorStructInfo,
    TupleStructInfo,
    dim_text,
    shape_text,
    struct_info_text,
)
from ._utils import as_shape_expr, const_dim, normalize_axes, normalize_axis, product, same_dtype, shape_arg, simplify
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["permute_dims", "reshape", "flatten", "expand_dims", "squeeze", "concat", "split",
           "broadcast_to", "repeat", "tile", "flip", "collapse_sum_like", "collapse_sum_to"]


# -- permute_dims ------------------------------------------------------------------------

@register("relax.permute_dims", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_permute_dims(call: Call, ctx: Any) -> StructInfo:
    """The input's dimensions reordered: output dimension k is input dimension axes[k]."""
    op = "relax.permute_dims"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axes = call.attrs["axes"]
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1 if axes is None else len(axes))
    if axes is None:
        axes = list(reversed(range(x.ndim)))
    elif len(axes) != x.ndim or sorted(normalize_axis(op, a, x.ndim) for a in axes) != list(range(x.ndim)):
        raise StructInfoError(f"{op}: axes {list(axes)} are not a permutation of the {x.ndim} "
                              f"dimensions of shape {shape_text(x.shape_values)}")
    vals = x.shape_values
    if vals is None:
        return TensorStructInfo(None, x.dtype, None, x.ndim)
    return TensorStructInfo([vals[a % x.ndim] for a in axes], x.dtype)


def permute_dims(x: Expr, axes: Sequence[int] | None = None) -> Call:
    """``x`` with its dimensions permuted (None: reversed, a transpose)."""
    return make_call("relax.permute_dims", x, attrs={"axes": None if axes is None else tuple(int(a) for a in axes)})


# -- reshape -------------------------------------------------------------------------------

@register("relax.reshape", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_reshape(call: Call, ctx: Any) -> StructInfo:
    """The new shape (one -1 is inferred from the element count); the element counts of
    the input and the new shape must agree."""
    op = "relax.reshape"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "x")
    new = shape_arg(call, 1, op)
    if new is None:
        return TensorStructInfo(None, x.dtype, None, struct_info_of(call.args[1]).ndim)
    holes = [k for k, d in enumerate(new) if const_dim(d) == -1]
    if len(holes) > 1 or any(const_dim(d) is not None and const_dim(d) < -1 for d in new):
        raise StructInfoError(f"{op}: the new shape {shape_text(new)} may hold one -1 and no other negative")
    vals = x.shape_values
    if vals is None:
        if holes:
            return TensorStructInfo(None, x.dtype, None, len(new))
        return TensorStructInfo(list(new), x.dtype)
    total = product(vals)
    if holes:
        known = product([d for k, d in enumerate(new) if k != holes[0]])
        if const_dim(known) == 0:
            raise StructInfoError(f"{op}: cannot infer the -1 of {shape_text(new)} from a zero-size shape")
        if const_dim(total) is not None and const_dim(known) is not None and const_dim(total) % const_dim(known):
            raise StructInfoError(f"{op}: cannot reshape {shape_text(vals)} to {shape_text(new)}: "
                                  f"{const_dim(total)} elements do not divide by {const_dim(known)}")
        new = list(new)
        new[holes[0]] = _infer_hole(vals, [d for k, d in enumerate(new) if k != holes[0]])
    elif not prove_dim_equal(total, product(new)) and prove_dim_differ(total, product(new)):
        raise StructInfoError(f"{op}: cannot reshape {shape_text(vals)} to {shape_text(new)}: "
                              f"{dim_text(total)} elements against {dim_text(product(new))}")
    return TensorStructInfo(list(new), x.dtype)


def _infer_hole(dims: Sequence, others: Sequence) -> Any:
    """The dimension that makes ``others`` hold as many elements as ``dims``: equal
    symbolic factors cancel (``(n, 3, 4)`` to ``(n, -1)`` gives 12, not ``n*12 // n``)."""
    num = [d for d in dims if const_dim(d) is None]
    den = [d for d in others if const_dim(d) is None]
    for d in list(den):
        match = next((m for m in num if prove_dim_equal(m, d)), None)
        if match is not None:
            num.remove(match)
            den.remove(d)
    cnum = 1
    for d in dims:
        cnum *= const_dim(d) if const_dim(d) is not None else 1
    cden = 1
    for d in others:
        cden *= const_dim(d) if const_dim(d) is not None else 1
    if not den and cnum % cden == 0:
        return simplify(product(num) * (cnum // cden))
    return simplify(product(num) * cnum // (product(den) * cden))


def reshape(x: Expr, shape: Any) -> Call:
    """``x`` viewed with ``shape`` (row-major; one dimension may be -1)."""
    return make_call("relax.reshape", x, as_shape_expr(shape, "relax.reshape"))


# -- flatten -------------------------------------------------------------------------------

@register("relax.flatten", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_flatten(call: Call, ctx: Any) -> StructInfo:
    """A 1-D tensor of all the elements (TVM's relax.flatten)."""
    op = "relax.flatten"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    vals = x.shape_values
    if vals is None:
        return TensorStructInfo(None, x.dtype, None, 1)
    return TensorStructInfo([product(vals)], x.dtype)


def flatten(x: Expr) -> Call:
    """All elements of ``x`` in one dimension (for ``(N, C, H, W) -> (N, C*H*W)`` use
    ``relax.op.reshape(x, (N, -1))``)."""
    return make_call("relax.flatten", x)


# -- expand_dims / squeeze -------------------------------------------------------------------

@register("relax.expand_dims", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_expand_dims(call: Call, ctx: Any) -> StructInfo:
    """New dimensions of size 1 at the listed positions of the output."""
    op = "relax.expand_dims"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axes = call.attrs["axis"]
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    out_ndim = x.ndim + len(axes)
    positions = normalize_axes(op, axes, out_ndim)
    vals = x.shape_values
    if vals is None:
        return TensorStructInfo(None, x.dtype, None, out_ndim)
    it = iter(vals)
    return TensorStructInfo([1 if k in positions else next(it) for k in range(out_ndim)], x.dtype)


def expand_dims(x: Expr, axis: int | Sequence[int]) -> Call:
    """``x`` with a dimension of size 1 inserted at each output position in ``axis``."""
    axes = (int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis)
    return make_call("relax.expand_dims", x, attrs={"axis": axes})


@register("relax.squeeze", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_squeeze(call: Call, ctx: Any) -> StructInfo:
    """The input without the listed dimensions of size 1 (None: every constant 1)."""
    op = "relax.squeeze"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axes = call.attrs["axis"]
    vals = x.shape_values
    if vals is None:
        ndim = -1 if x.ndim == -1 or axes is None else x.ndim - len(axes)
        return TensorStructInfo(None, x.dtype, None, ndim)
    if axes is None:
        drop = [k for k, d in enumerate(vals) if const_dim(d) == 1]
    else:
        drop = normalize_axes(op, axes, x.ndim)
        for k in drop:
            if const_dim(vals[k]) is not None and const_dim(vals[k]) != 1:
                raise StructInfoError(f"{op}: cannot squeeze axis {k} of shape {shape_text(vals)}: "
                                      f"its length is {const_dim(vals[k])}, not 1")
    return TensorStructInfo([d for k, d in enumerate(vals) if k not in drop], x.dtype)


def squeeze(x: Expr, axis: int | Sequence[int] | None = None) -> Call:
    """``x`` without dimensions of size 1 (those in ``axis``, or all)."""
    axes = None if axis is None else ((int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis))
    return make_call("relax.squeeze", x, attrs={"axis": axes})


# -- concat / split ---------------------------------------------------------------------------

def _tuple_fields(call: Call, op: str) -> list[TensorStructInfo]:
    sinfo = struct_info_of(call.args[0])
    if not isinstance(sinfo, TupleStructInfo):
        raise StructInfoError(f"{op} expects a tuple of tensors, got {struct_info_text(sinfo)}")
    fields = list(sinfo.fields)
    if not fields:
        raise StructInfoError(f"{op}: the tuple of tensors is empty")
    for f in fields:
        if not isinstance(f, TensorStructInfo):
            raise StructInfoError(f"{op} expects a tuple of tensors, got a field {struct_info_text(f)}")
    return fields


def _same_rank_fields(call: Call, op: str) -> tuple[list[TensorStructInfo], str, int]:
    """The tuple's tensors, their one dtype and their one rank (-1: unknown) for concat and stack."""
    check_num_args(call, op, 1)
    xs = _tuple_fields(call, op)
    dtype = same_dtype(op, xs)
    ndims = {x.ndim for x in xs if x.ndim != -1}
    if len(ndims) > 1:
        raise StructInfoError(f"{op}: tensors of different ranks {sorted(ndims)}: "
                              f"{', '.join(shape_text(x.shape_values) for x in xs)}")
    return xs, dtype, ndims.pop() if ndims else -1


@register("relax.concat", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_concat(call: Call, ctx: Any) -> StructInfo:
    """The tensors joined along ``axis``; every other dimension must agree."""
    op = "relax.concat"
    xs, dtype, ndim = _same_rank_fields(call, op)
    if ndim == -1:
        return TensorStructInfo(None, dtype, None, -1)
    if call.attrs["axis"] is None and ndim != 1:
        # as TVM: without an axis the tensors must already be flattened
        raise StructInfoError(f"{op}: without an axis the tensors must be 1-D (flattened), got "
                              f"{', '.join(shape_text(x.shape_values) for x in xs)}")
    axis = normalize_axis(op, 0 if call.attrs["axis"] is None else call.attrs["axis"], ndim)
    shapes = [x.shape_values for x in xs]
    if any(s is None for s in shapes):
        return TensorStructInfo(None, dtype, None, ndim)
    first = shapes[0]
    for s in shapes[1:]:
        for k in range(ndim):
            if k != axis and not prove_dim_equal(first[k], s[k]) and prove_dim_differ(first[k], s[k]):
                raise StructInfoError(f"{op}: cannot concatenate shapes {shape_text(first)} and "
                                      f"{shape_text(s)} along axis {axis}: dimension {k} differs")
    out = list(first)
    out[axis] = _concat_length([s[axis] for s in shapes])
    return TensorStructInfo(out, dtype)


def _concat_length(dims: list[PrimExpr]) -> PrimExpr:
    """The joined axis's length as TVM writes it, constants folded but not simplified further:
    equal lengths give ``d * count``, others the running sum (``640 + M``, not ``M + 640``)."""
    if all(structural_equal(d, dims[0]) for d in dims[1:]):
        return dims[0] * IntImm("int64", len(dims))
    total: PrimExpr = IntImm("int64", 0)
    for d in dims:
        total = total + d
    return total


def concat(tensors: Any, axis: int | None = 0) -> Call:
    """The tensors joined along ``axis`` (a list, a Relax Tuple, or a tuple-valued var);
    ``axis=None`` joins 1-D (flattened) tensors."""
    if isinstance(tensors, (list, tuple)):
        tensors = Tuple(list(tensors))
    return make_call("relax.concat", tensors, attrs={"axis": None if axis is None else int(axis)})


@register("relax.stack", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_stack(call: Call, ctx: Any) -> StructInfo:
    """The tensors joined along a new dimension at ``axis``; their shapes must be equal."""
    op = "relax.stack"
    xs, dtype, ndim = _same_rank_fields(call, op)
    if ndim == -1:
        return TensorStructInfo(None, dtype, None, -1)
    axis = normalize_axis(op, call.attrs["axis"], ndim + 1)  # a position in the output
    shapes = [x.shape_values for x in xs]
    if any(s is None for s in shapes):
        return TensorStructInfo(None, dtype, None, ndim + 1)
    for s in shapes[1:]:
        for k in range(ndim):
            if not prove_dim_equal(shapes[0][k], s[k]) and prove_dim_differ(shapes[0][k], s[k]):
                raise StructInfoError(f"{op}: cannot stack shapes {shape_text(shapes[0])} and "
                                      f"{shape_text(s)}: dimension {k} differs")
    out = list(shapes[0])
    out.insert(axis, IntImm("int64", len(xs)))
    return TensorStructInfo(out, dtype)


def stack(tensors: Any, axis: int = 0) -> Call:
    """The tensors (equal shapes) joined along a new dimension at ``axis`` (numpy.stack)."""
    if isinstance(tensors, (list, tuple)):
        tensors = Tuple(list(tensors))
    return make_call("relax.stack", tensors, attrs={"axis": int(axis)})


@register("relax.split", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_split(call: Call, ctx: Any) -> StructInfo:
    """A tuple of pieces along ``axis``: equal sections (an int) or cut at indices."""
    op = "relax.split"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    spec, axis = call.attrs["indices_or_sections"], call.attrs["axis"]
    count = spec if isinstance(spec, int) else len(spec) + 1
    if count < 1:
        raise StructInfoError(f"{op}: the number of sections must be positive, got {spec}")
    vals = x.shape_values
    if vals is None:
        return TupleStructInfo([TensorStructInfo(None, x.dtype, None, x.ndim)] * count)
    axis = normalize_axis(op, axis, x.ndim)
    dim = vals[axis]
    if isinstance(spec, int):
        n = const_dim(dim)
        if n is None:
            piece = simplify(dim // spec) if spec > 1 else dim
            sizes = [piece] * spec
        else:
            # as TVM: sections of ceil(n / count), the last one what remains
            size = -(-n // spec)
            sizes = [IntImm("int64", max(0, min(size, n - k * size))) for k in range(spec)]
    else:
        n = const_dim(dim)
        if n is None:
            sizes = _symbolic_pieces(dim, spec)
        else:
            # as TVM: indices are clamped to [0, n], each piece runs from one to the next and
            # is empty when they are out of order
            bounds = [0] + [min(max(int(i), 0), n) for i in spec] + [n]
            sizes = [IntImm("int64", max(0, e - b)) for b, e in zip(bounds[:-1], bounds[1:])]
    fields = []
    for size in sizes:
        out = list(vals)
        out[axis] = size
        fields.append(TensorStructInfo(out, x.dtype))
    return TupleStructInfo(fields)


def _symbolic_pieces(dim: PrimExpr, indices: Sequence[int]) -> list[PrimExpr]:
    """The lengths of the pieces of a symbolic axis cut at constant indices, as TVM: each
    index clamped to [0, dim], each piece max(right - left, 0), simplified knowing that the
    axis's variables (shape dimensions) are not negative -- so (640 + M) cut at 640 is 640, M."""
    analyzer = Analyzer()

    def non_negative(n: Any) -> None:
        if isinstance(n, TirVar):
            analyzer.update(n, ConstIntBound(0, ConstIntBound.POS_INF))

    post_order_visit(dim, non_negative)

    def clamp(e: Any) -> PrimExpr:
        return tir_min(tir_max(e, 0), dim)

    bounds = [IntImm("int64", 0), *(clamp(IntImm("int64", int(i))) for i in indices), dim]
    return [analyzer.simplify(tir_max(e - b, 0)) for b, e in zip(bounds[:-1], bounds[1:])]


def split(x: Expr, indices_or_sections: int | Sequence[int], axis: int = 0) -> Call:
    """``x`` cut along ``axis`` into equal sections or at the given indices: a tuple."""
    spec = int(indices_or_sections) if isinstance(indices_or_sections, int) \
        else tuple(int(i) for i in indices_or_sections)
    return make_call("relax.split", x, attrs={"indices_or_sections": spec, "axis": int(axis)})


# -- broadcast_to -----------------------------------------------------------------------------

@register("relax.broadcast_to", pattern=OpPattern.BROADCAST, num_inputs=2)
def _infer_broadcast_to(call: Call, ctx: Any) -> StructInfo:
    """The target shape; each input dimension must be 1 or equal to the target's."""
    op = "relax.broadcast_to"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "x")
    target = shape_arg(call, 1, op)
    if target is None:
        return TensorStructInfo(None, x.dtype, None, struct_info_of(call.args[1]).ndim)
    vals = x.shape_values
    if vals is not None:
        if len(vals) > len(target):
            raise StructInfoError(f"{op}: cannot broadcast shape {shape_text(vals)} to the "
                                  f"smaller rank of {shape_text(target)}")
        for k in range(1, len(vals) + 1):
            d, t = vals[-k], target[-k]
            if const_dim(d) != 1 and not prove_dim_equal(d, t) and prove_dim_differ(d, t):
                raise StructInfoError(f"{op}: cannot broadcast shape {shape_text(vals)} to "
                                      f"{shape_text(target)}: dimension {dim_text(d)} against {dim_text(t)}")
    return TensorStructInfo(list(target), x.dtype)


def broadcast_to(x: Expr, shape: Any) -> Call:
    """``x`` repeated along dimensions of size 1 to ``shape``."""
    return make_call("relax.broadcast_to", x, as_shape_expr(shape, "relax.broadcast_to"))


# -- repeat / tile / flip ------------------------------------------------------------------

def _times(d: PrimExpr, r: int, first: bool) -> PrimExpr:
    """``d`` repeated ``r`` times (constants folded; TVM writes repeat as r * d, tile as d * r)."""
    if r == 1:
        return d
    if isinstance(d, IntImm):
        return IntImm("int64", d.value * r)
    return IntImm("int64", r) * d if first else d * IntImm("int64", r)


@register("relax.repeat", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_repeat(call: Call, ctx: Any) -> StructInfo:
    """Each element repeated along ``axis`` (None: of the flattened tensor)."""
    op = "relax.repeat"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]
    if repeats < 1:
        raise StructInfoError(f"{op}: repeats must be positive, got {repeats}")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, 1 if axis is None else -1)
    vals = x.shape_values
    if axis is None:
        if vals is None:
            return TensorStructInfo(None, x.dtype, None, 1)
        return TensorStructInfo([simplify(product(vals) * repeats)], x.dtype)
    axis = normalize_axis(op, axis, x.ndim)
    if vals is None:
        return TensorStructInfo(None, x.dtype, None, x.ndim)
    out = list(vals)
    out[axis] = _times(vals[axis], repeats, True)
    return TensorStructInfo(out, x.dtype)


def repeat(data: Expr, repeats: int, axis: int | None = None) -> Call:
    """Each element of ``data`` repeated ``repeats`` times along ``axis`` (numpy.repeat)."""
    return make_call("relax.repeat", data, attrs={"repeats": int(repeats),
                                                  "axis": None if axis is None else int(axis)})


@register("relax.tile", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_tile(call: Call, ctx: Any) -> StructInfo:
    """The tensor repeated ``repeats[k]`` times along each dimension (numpy.tile)."""
    op = "relax.tile"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    reps = list(call.attrs["repeats"])
    if any(r < 1 for r in reps):
        raise StructInfoError(f"{op}: repeats must be positive, got {reps}")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    ndim = max(x.ndim, len(reps))
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, None, ndim)
    dims = [IntImm("int64", 1)] * (ndim - x.ndim) + list(x.shape_values)
    reps = [1] * (ndim - len(reps)) + reps
    return TensorStructInfo([_times(d, r, False) for d, r in zip(dims, reps)], x.dtype)


def tile(data: Expr, repeats: int | Sequence[int]) -> Call:
    """``data`` repeated along each dimension (numpy.tile)."""
    reps = (int(repeats),) if isinstance(repeats, int) else tuple(int(r) for r in repeats)
    return make_call("relax.tile", data, attrs={"repeats": reps})


@register("relax.flip", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_flip(call: Call, ctx: Any) -> StructInfo:
    """The tensor with ``axis`` reversed: the same struct info."""
    op = "relax.flip"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if x.ndim != -1:
        normalize_axis(op, call.attrs["axis"], x.ndim)
    return x


def flip(data: Expr, axis: int) -> Call:
    """``data`` with the order of ``axis`` reversed (numpy.flip)."""
    return make_call("relax.flip", data, attrs={"axis": int(axis)})


# -- collapse_sum_like / collapse_sum_to ---------------------------------------------------

def _collapse_target(op: str, x: TensorStructInfo, target: tuple | None) -> None:
    """``target`` must be a shape ``x`` broadcasts from (numpy rules, checked where known)."""
    if x.shape_values is None or target is None:
        return
    vals = x.shape_values
    if len(target) > len(vals):
        raise StructInfoError(f"{op}: cannot collapse {struct_info_text(x)} to the larger rank shape {list(target)}")
    for k in range(1, len(target) + 1):
        t, d = const_dim(target[-k]), const_dim(vals[-k])
        if t is not None and d is not None and t not in (1, d):
            raise StructInfoError(f"{op}: {struct_info_text(x)} does not broadcast from shape {list(target)}")


@register("relax.collapse_sum_like", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_collapse_sum_like(call: Call, ctx: Any) -> StructInfo:
    """``data`` summed down to the shape of ``collapse_target`` (which it broadcasts from)."""
    op = "relax.collapse_sum_like"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    like = tensor_arg(call, 1, op, "collapse_target")
    _collapse_target(op, x, like.shape_values)
    if like.shape_values is None:
        return TensorStructInfo(None, x.dtype, None, like.ndim)
    return TensorStructInfo(list(like.shape_values), x.dtype)


def collapse_sum_like(data: Expr, collapse_target: Expr) -> Call:
    """``data`` summed over the axes that broadcasting ``collapse_target`` to it added."""
    return make_call("relax.collapse_sum_like", data, collapse_target)


@register("relax.collapse_sum_to", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_collapse_sum_to(call: Call, ctx: Any) -> StructInfo:
    """``data`` summed down to ``shape`` (which it broadcasts from)."""
    op = "relax.collapse_sum_to"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    target = shape_arg(call, 1, op)
    _collapse_target(op, x, target)
    if target is None:
        return TensorStructInfo(None, x.dtype, None, -1)
    return TensorStructInfo(list(target), x.dtype)


def collapse_sum_to(data: Expr, shape: Any) -> Call:
    """``data`` summed over the axes that broadcasting ``shape`` to it added."""
    return make_call("relax.collapse_sum_to", data, as_shape_expr(shape, "relax.collapse_sum_to"))
