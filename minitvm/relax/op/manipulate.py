"""Tensor manipulation (TVM's ``relax.op.manipulate``): changing shape and layout
(permute_dims, reshape, flatten, expand_dims, squeeze, concat, split, broadcast_to),
rearranging elements (repeat, tile, flip) and the reductions back to a broadcast source
(collapse_sum_like, collapse_sum_to)."""

from __future__ import annotations

from typing import Any, Sequence

from ...arith import Analyzer, ConstIntBound
from ...ir.structural import structural_equal
from ...tir.expr import IntImm, Mul, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit
from ...tir.op import ceildiv
from ...tir.op import max as tir_max
from ...tir.op import min as tir_min
from ..analysis.struct_info_analysis import prove_dim_differ, prove_dim_equal
from ..expr import Call, Expr, PrimValue, ShapeExpr, Tuple, Var, struct_info_of
from ..struct_info import (
    PrimStructInfo,
    StructInfo,
    StructInfoError,
    StructInfoTypeError,
    TensorStructInfo,
    TupleStructInfo,
    dim_text,
    shape_text,
    struct_info_text,
)
from ._utils import (
    AttrInt,
    as_shape_expr,
    const_dim,
    expr_dims,
    normalize_axes,
    normalize_axis,
    product,
    same_dtype,
    shape_arg,
    simplify,
)
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["permute_dims", "reshape", "flatten", "expand_dims", "squeeze", "concat", "split",
           "broadcast_to", "repeat", "tile", "flip", "collapse_sum_like", "collapse_sum_to"]


# -- permute_dims ------------------------------------------------------------------------

@register("relax.permute_dims", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_permute_dims(call: Call, ctx: Any) -> StructInfo:
    """The input's dimensions reordered: output dimension k is input dimension axes[k]; the
    identity permutation gives the input's struct info back (as TVM)."""
    op = "relax.permute_dims"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axes = call.attrs["axes"]
    if axes is None and x.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    if axes is not None and x.ndim != -1 and len(axes) != x.ndim:
        raise StructInfoError(f"{op}: {len(axes)} axes {list(axes)} for a tensor of {x.ndim} "
                              f"dimensions {struct_info_text(x)}")
    # an unknown rank refuses every axis here, as TVM's axis normalization does
    if axes is None:
        order = list(reversed(range(x.ndim)))
    else:
        order = [normalize_axis(op, a, x.ndim) for a in axes]
        if sorted(order) != list(range(x.ndim)):
            raise StructInfoError(f"{op}: axes {list(axes)} are not a permutation of the {x.ndim} "
                                  f"dimensions of shape {shape_text(x.shape_values)}")
    if order == list(range(x.ndim)):
        return x
    vals = expr_dims(x)
    if vals is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, x.ndim)
    return TensorStructInfo([vals[a] for a in order], x.dtype, x.vdevice)


def permute_dims(x: Expr, axes: Sequence[int] | None = None) -> Call:
    """``x`` with its dimensions permuted (None: reversed, a transpose)."""
    return make_call("relax.permute_dims", x, attrs={"axes": None if axes is None else tuple(int(a) for a in axes)})


# -- reshape -------------------------------------------------------------------------------

@register("relax.reshape", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_reshape(call: Call, ctx: Any) -> StructInfo:
    """The new shape (its -1 and 0 were resolved when the call was made); the element
    counts of the input and the new shape must not provably differ."""
    op = "relax.reshape"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "x")
    new = shape_arg(call, 1, op)
    vals = x.shape_values
    if new is not None and any(const_dim(d) is not None and const_dim(d) < 0 for d in new):
        # a -1 left by a call built before its input had struct info
        new = _resolve_new_shape(op, vals, list(new))
    if new is not None and vals is not None and prove_dim_differ(product(vals), product(new)):
        raise StructInfoError(f"{op}: cannot reshape {shape_text(vals)} to {shape_text(new)}: "
                              f"{dim_text(product(vals))} elements against {dim_text(product(new))}")
    target = call.args[1]
    if isinstance(target, ShapeExpr) and new is not None and list(new) != list(target.values):
        target = ShapeExpr(list(new))
    if isinstance(target, ShapeExpr) or (isinstance(target, Var) and new is None):
        return TensorStructInfo(target, x.dtype, x.vdevice)
    if new is not None:
        return TensorStructInfo(list(new), x.dtype, x.vdevice)
    return TensorStructInfo(None, x.dtype, x.vdevice, struct_info_of(call.args[1]).ndim)


def _factors(dims: Sequence) -> list:
    """The factors of a product of dimensions, products split apart."""
    out = []
    for d in dims:
        if isinstance(d, Mul):
            out.extend(_factors([d.a, d.b]))
        else:
            out.append(d)
    return out


def _infer_hole(dims: Sequence, others: Sequence) -> Any:
    """The dimension that makes ``others`` hold as many elements as ``dims``: equal
    symbolic factors cancel (``(n, 3, 4)`` to ``(n, -1)`` gives 12, not ``n*12 // n``)."""
    num = [d for d in _factors(dims) if const_dim(d) is None]
    den = [d for d in _factors(others) if const_dim(d) is None]
    for d in list(den):
        match = next((m for m in num if prove_dim_equal(m, d)), None)
        if match is not None:
            num.remove(match)
            den.remove(d)
    cnum = 1
    for d in _factors(dims):
        cnum *= const_dim(d) if const_dim(d) is not None else 1
    cden = 1
    for d in _factors(others):
        cden *= const_dim(d) if const_dim(d) is not None else 1
    if not den and cnum % cden == 0:
        return simplify(product(num) * (cnum // cden))
    return simplify(product(num) * cnum // (product(den) * cden))


def _resolve_new_shape(op: str, old: Sequence | None, new: list) -> list:
    """``new`` with its one -1 inferred and each 0 copied from ``old`` (TVM resolves them
    when the call is made, from the input's shape)."""
    holes = [k for k, d in enumerate(new) if const_dim(d) == -1]
    if len(holes) > 1 or any(const_dim(d) is not None and const_dim(d) < -1 for d in new):
        raise StructInfoError(f"{op}: the new shape {shape_text(new)} may hold one -1 and no other negative")
    zeros = [k for k, d in enumerate(new) if const_dim(d) == 0]
    if not holes and not zeros:
        return new
    if old is None:
        raise StructInfoError(f"{op}: the input's shape must be known to infer the -1 or 0 of the "
                              f"new shape {shape_text(new)}")
    for k in zeros:
        if k >= len(old):
            raise StructInfoError(f"{op}: the 0 at position {k} of {shape_text(new)} has no input "
                                  f"dimension to copy in {shape_text(old)}")
        new[k] = old[k]
    if holes:
        others = [d for k, d in enumerate(new) if k != holes[0]]
        if const_dim(product(others)) == 0:
            raise StructInfoError(f"{op}: cannot infer the -1 of {shape_text(new)} from a zero-size shape")
        new[holes[0]] = _infer_hole(old, others)
    return new


def _new_shape_dims(op: str, shape: Any) -> list:
    """The new shape of reshape as a list of integer dimensions, or a TypeError naming it."""
    if isinstance(shape, ShapeExpr):
        return list(shape.values)
    if isinstance(shape, (int, PrimExpr)) or not isinstance(shape, (list, tuple)):
        raise StructInfoTypeError(f"{op}: the new shape must be a tuple of dimensions or a shape "
                                  f"expression, got {shape!r}")
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, PrimExpr)) or \
                (isinstance(d, PrimExpr) and not str(d.dtype).startswith(("int", "uint"))):
            raise StructInfoTypeError(f"{op}: every dimension of the new shape must be an integer, "
                                      f"got {d!r} in {tuple(shape)!r}")
        dims.append(IntImm("int64", d) if isinstance(d, int) else d)
    return dims


def reshape(x: Expr, shape: Any) -> Call:
    """``x`` viewed with ``shape`` (row-major); one dimension may be -1 (inferred) and a 0
    copies the input's dimension there, both resolved now from ``x``'s shape, as TVM."""
    op = "relax.reshape"
    if isinstance(shape, Expr) and not isinstance(shape, ShapeExpr):
        return make_call(op, x, shape)
    dims = _new_shape_dims(op, shape)
    sinfo = struct_info_of(x) if isinstance(x, Expr) else None
    if isinstance(sinfo, TensorStructInfo):
        dims = _resolve_new_shape(op, sinfo.shape_values, dims)
    elif sinfo is not None:
        raise StructInfoTypeError(f"{op} expects a tensor, got {struct_info_text(sinfo)}")
    return make_call(op, x, ShapeExpr(dims))



# -- flatten -------------------------------------------------------------------------------

@register("relax.flatten", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_flatten(call: Call, ctx: Any) -> StructInfo:
    """A 1-D tensor of all the elements (TVM's relax.flatten)."""
    op = "relax.flatten"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    if x.ndim == 0:
        return TensorStructInfo([1], x.dtype, x.vdevice)
    if x.ndim == 1:
        return x
    vals = expr_dims(x)
    if vals is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, 1)
    return TensorStructInfo([product(vals)], x.dtype, x.vdevice)


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
    if not axes:
        return x
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    out_ndim = x.ndim + len(axes)
    positions = normalize_axes(op, axes, out_ndim)
    vals = expr_dims(x)
    if vals is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, out_ndim)
    it = iter(vals)
    return TensorStructInfo([1 if k in positions else next(it) for k in range(out_ndim)], x.dtype, x.vdevice)


def expand_dims(x: Expr, axis: int | Sequence[int]) -> Call:
    """``x`` with a dimension of size 1 inserted at each output position in ``axis``."""
    axes = (int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis)
    return make_call("relax.expand_dims", x, attrs={"axis": axes})


@register("relax.squeeze", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_squeeze(call: Call, ctx: Any) -> StructInfo:
    """The input without the listed dimensions of size 1 (None: every constant 1). As TVM,
    a listed axis of another constant length stays (a no-op there), a symbolic one goes."""
    op = "relax.squeeze"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axes = call.attrs["axis"]
    if axes is not None and not axes:
        return x
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    vals = x.shape_values
    if axes is not None:
        listed = normalize_axes(op, axes, x.ndim)
        if vals is None:
            return TensorStructInfo(None, x.dtype, x.vdevice, x.ndim - len(listed))
        drop = [k for k in listed if const_dim(vals[k]) in (None, 1)]
    else:
        if vals is None or any(const_dim(d) is None for d in vals):
            return TensorStructInfo(None, x.dtype, x.vdevice, -1)
        drop = [k for k, d in enumerate(vals) if const_dim(d) == 1]
    out = [d for k, d in enumerate(vals) if k not in drop]
    if isinstance(x.shape, Var):
        if len(out) == x.ndim:
            return x
        return TensorStructInfo(None, x.dtype, x.vdevice, len(out) if axes is not None else -1)
    return TensorStructInfo(out, x.dtype, x.vdevice)


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
    """The tensors joined along ``axis``; every other dimension must agree. ``axis=None``
    joins 1-D tensors; one tensor alone comes back as it is (as TVM)."""
    op = "relax.concat"
    check_num_args(call, op, 1)
    xs = _tuple_fields(call, op)
    dtype = same_dtype(op, xs)
    ndim = 1 if call.attrs["axis"] is None else -1
    for x in xs:
        if ndim == -1:
            ndim = x.ndim
        elif x.ndim not in (-1, ndim):
            ranks = sorted({t.ndim for t in xs if t.ndim != -1} | {ndim})
            raise StructInfoError(f"{op}: tensors of different ranks {ranks}"
                                  + (" (without an axis the tensors must be 1-D, flattened)"
                                     if call.attrs["axis"] is None else "") + ": "
                                  f"{', '.join(struct_info_text(t) for t in xs)}")
    vdevice = _common_vdevice(xs)
    if ndim == -1:
        return xs[0] if len(xs) == 1 else TensorStructInfo(None, dtype, vdevice, -1)
    axis = normalize_axis(op, 0 if call.attrs["axis"] is None else call.attrs["axis"], ndim)
    if len(xs) == 1:
        return xs[0]
    shapes = [x.shape_values for x in xs]
    known = [s for s in shapes if s is not None]
    for s in known[1:]:
        for k in range(ndim):
            if k != axis and prove_dim_differ(known[0][k], s[k]):
                raise StructInfoError(f"{op}: cannot concatenate shapes {shape_text(known[0])} and "
                                      f"{shape_text(s)} along axis {axis}: dimension {k} differs")
    written = [expr_dims(x) for x in xs]
    if any(s is None for s in written) or any(
            not prove_dim_equal(written[0][k], s[k]) for s in written[1:] for k in range(ndim) if k != axis):
        return TensorStructInfo(None, dtype, vdevice, ndim)
    out = list(written[0])
    out[axis] = _concat_length([s[axis] for s in written])
    return TensorStructInfo(out, dtype, vdevice)


def _common_vdevice(xs: Sequence[TensorStructInfo]) -> Any:
    """The one virtual device of ``xs`` (None when they name different ones or none)."""
    devices = [x.vdevice for x in xs if x.vdevice is not None]
    if not devices or any(not structural_equal(d, devices[0]) for d in devices[1:]):
        return None
    return devices[0]


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
    """A tuple of pieces along ``axis``: equal sections of ceil(n / count), the last one what
    remains (an int), or cut at indices clamped to [0, n]. One piece is the input itself."""
    op = "relax.split"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    spec, axis = call.attrs["indices_or_sections"], call.attrs["axis"]
    if x.ndim != -1:
        axis = normalize_axis(op, axis, x.ndim)
    count = int(spec) if isinstance(spec, int) else len(spec) + 1
    if count < 1:
        raise StructInfoError(f"{op}: the number of sections must be positive, got {spec}")
    if count == 1:
        return x
    vals = expr_dims(x)
    if vals is None:
        return TupleStructInfo([TensorStructInfo(None, x.dtype, x.vdevice, x.ndim)] * count)
    dim = vals[axis]
    if isinstance(spec, int):
        piece = simplify(ceildiv(dim, IntImm("int64", spec)))
        sizes = [piece] * (spec - 1) + [simplify(dim - piece * IntImm("int64", spec - 1))]
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
        fields.append(TensorStructInfo(out, x.dtype, x.vdevice))
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
    op = "relax.split"
    if isinstance(indices_or_sections, (list, tuple)):
        spec = tuple(AttrInt(_int_attr(op, "indices", i)) for i in indices_or_sections)
    else:
        spec = AttrInt(_int_attr(op, "indices_or_sections", indices_or_sections))
        if spec < 1:
            raise StructInfoError(f"{op}: the number of sections must be positive, got {int(spec)}")
    return make_call(op, x, attrs={"indices_or_sections": spec, "axis": int(axis)})


def _int_attr(op: str, name: str, value: Any) -> int:
    """``value`` as a Python int (an int or an integer constant); anything else is a TypeError."""
    if isinstance(value, IntImm) and str(value.dtype) != "bool":
        return int(value.value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise StructInfoTypeError(f"{op}: {name} must be an integer constant, got {value!r}")


# -- broadcast_to -----------------------------------------------------------------------------

@register("relax.broadcast_to", pattern=OpPattern.BROADCAST, num_inputs=2)
def _infer_broadcast_to(call: Call, ctx: Any) -> StructInfo:
    """The target shape; each input dimension must be 1 or not provably differ from the target's."""
    op = "relax.broadcast_to"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "x")
    target = shape_arg(call, 1, op)
    tgt_ndim = struct_info_of(call.args[1]).ndim
    if x.ndim != -1 and tgt_ndim != -1 and tgt_ndim < x.ndim:
        raise StructInfoError(f"{op}: cannot broadcast {struct_info_text(x)} to a shape of the "
                              f"smaller rank {tgt_ndim}")
    vals = x.shape_values
    if vals is not None and target is not None:
        for k in range(1, len(vals) + 1):
            d, t = vals[-k], target[-k]
            if const_dim(d) != 1 and prove_dim_differ(d, t):
                raise StructInfoError(f"{op}: cannot broadcast shape {shape_text(vals)} to "
                                      f"{shape_text(target)}: dimension {dim_text(d)} against {dim_text(t)}")
    return _shape_of_arg(call.args[1], x)


def _shape_of_arg(arg: Expr, x: TensorStructInfo) -> TensorStructInfo:
    """A tensor of ``x``'s dtype and device whose shape is the shape-valued ``arg`` itself."""
    if isinstance(arg, (ShapeExpr, Var)):
        return TensorStructInfo(arg, x.dtype, x.vdevice)
    sinfo = struct_info_of(arg)
    if sinfo.values is not None:
        return TensorStructInfo(list(sinfo.values), x.dtype, x.vdevice)
    return TensorStructInfo(None, x.dtype, x.vdevice, sinfo.ndim)


def broadcast_to(x: Expr, shape: Any) -> Call:
    """``x`` repeated along dimensions of size 1 to ``shape``."""
    return make_call("relax.broadcast_to", x, as_shape_expr(shape, "relax.broadcast_to"))


# -- repeat / tile / flip ------------------------------------------------------------------

def _times(d: PrimExpr, r: int) -> PrimExpr:
    """``d`` repeated ``r`` times (constants folded; TVM writes it d * r)."""
    if r == 1:
        return d
    if isinstance(d, IntImm):
        return IntImm("int64", d.value * r)
    return d * IntImm("int64", r)


@register("relax.repeat", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_repeat(call: Call, ctx: Any) -> StructInfo:
    """Each element repeated along ``axis`` (None: of the flattened tensor)."""
    op = "relax.repeat"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]
    if repeats < 1:
        raise StructInfoError(f"{op}: repeats must be positive, got {repeats}")
    if axis is not None and x.ndim != -1:
        axis = normalize_axis(op, axis, x.ndim)
    vals = expr_dims(x)
    if vals is None:
        if axis is None:
            return TensorStructInfo(None, x.dtype, x.vdevice, 1)
        return x if repeats == 1 else TensorStructInfo(None, x.dtype, x.vdevice, x.ndim)
    if axis is None:
        return TensorStructInfo([simplify(product(vals) * repeats)], x.dtype, x.vdevice)
    out = list(vals)
    out[axis] = _times(vals[axis], repeats)
    return TensorStructInfo(out, x.dtype, x.vdevice)


def repeat(data: Expr, repeats: int, axis: int | None = None) -> Call:
    """Each element of ``data`` repeated ``repeats`` times along ``axis`` (numpy.repeat)."""
    op = "relax.repeat"
    return make_call(op, data, attrs={"repeats": _int_attr(op, "repeats", repeats),
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
        return TensorStructInfo(None, x.dtype, x.vdevice, -1)
    ndim = max(x.ndim, len(reps))
    if expr_dims(x) is None:
        if len(reps) <= x.ndim and all(r == 1 for r in reps):
            return x
        return TensorStructInfo(None, x.dtype, x.vdevice, ndim)
    dims = [IntImm("int64", 1)] * (ndim - x.ndim) + list(expr_dims(x))
    reps = [1] * (ndim - len(reps)) + reps
    return TensorStructInfo([_times(d, r) for d, r in zip(dims, reps)], x.dtype, x.vdevice)


def tile(data: Expr, repeats: int | Sequence[int]) -> Call:
    """``data`` repeated along each dimension (numpy.tile)."""
    op = "relax.tile"
    reps = (repeats,) if not isinstance(repeats, (list, tuple)) else repeats
    return make_call(op, data, attrs={"repeats": tuple(_int_attr(op, "repeats", r) for r in reps)})


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
    """``target`` must be a shape ``x`` broadcasts from: from the last dimension on, each
    target dimension is 1 or provably equal to the data's (as TVM, a symbolic mismatch is
    refused too: match_cast first)."""
    vals = x.shape_values
    if vals is None or target is None:
        return
    t = len(target) - 1
    for k in range(len(vals) - 1, -1, -1):
        if t < 0:
            continue
        if prove_dim_equal(vals[k], target[t]) or const_dim(target[t]) == 1:
            t -= 1
        else:
            raise StructInfoError(f"{op}: {struct_info_text(x)} does not broadcast from shape "
                                  f"{shape_text(target)}: dimension {k} is {dim_text(vals[k])} against "
                                  f"{dim_text(target[t])} (for a symbolic one, match_cast first)")


@register("relax.collapse_sum_like", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_collapse_sum_like(call: Call, ctx: Any) -> StructInfo:
    """``data`` summed down to the shape of ``collapse_target`` (which it broadcasts from)."""
    op = "relax.collapse_sum_like"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    like = tensor_arg(call, 1, op, "collapse_target")
    _collapse_target(op, x, like.shape_values)
    return TensorStructInfo(like.shape, x.dtype, like.vdevice, like.ndim if like.shape is None else -1)


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
    return _shape_of_arg(call.args[1], x)


def collapse_sum_to(data: Expr, shape: Any) -> Call:
    """``data`` summed over the axes that broadcasting ``shape`` to it added."""
    return make_call("relax.collapse_sum_to", data, as_shape_expr(shape, "relax.collapse_sum_to"))


# -- meshgrid / one_hot ------------------------------------------------------------------------

@register("relax.meshgrid", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_meshgrid(call: Call, ctx: Any) -> StructInfo:
    """One tensor per 1-D input, each of shape (len0, len1, ...) ("ij"; "xy" swaps the first two)."""
    op = "relax.meshgrid"
    check_num_args(call, op, 1)
    xs = _tuple_fields(call, op)
    for k, x in enumerate(xs):
        if x.ndim != 1:
            raise StructInfoError(f"{op}: every input must be 1-D, got {struct_info_text(x)} at index {k}")
    dtype = same_dtype(op, xs)
    if dtype == "void":
        known = [x.dtype for x in xs if not x.is_unknown_dtype]
        dtype = known[0] if known else "void"
    vdevice = _common_vdevice(xs)
    dims = [expr_dims(x) for x in xs]
    if any(d is None for d in dims):
        return TupleStructInfo([TensorStructInfo(None, dtype, vdevice, len(xs)) for _ in xs])
    shape = [d[0] for d in dims]
    if call.attrs["indexing"] == "xy" and len(shape) > 1:
        # the kernel's (numpy's) shape; TVM's struct info keeps (len0, len1) and disagrees with its own kernel
        shape[0], shape[1] = shape[1], shape[0]
    return TupleStructInfo([TensorStructInfo(shape, dtype, vdevice) for _ in xs])


def meshgrid(tensors: Any, indexing: str | None = "ij") -> Call:
    """Coordinate grids from 1-D tensors (numpy.meshgrid): ``indexing`` "ij" (matrix) or
    "xy" (Cartesian: the first two output axes swapped)."""
    if indexing not in (None, "ij", "xy"):
        raise StructInfoError(f"relax.meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if isinstance(tensors, (list, tuple)):
        tensors = Tuple(list(tensors))
    return make_call("relax.meshgrid", tensors, attrs={"indexing": indexing})


@register("relax.one_hot", pattern=OpPattern.INJECTIVE, num_inputs=3)
def _infer_one_hot(call: Call, ctx: Any) -> StructInfo:
    """The indices' shape with ``depth`` inserted at ``axis``, of the on/off values' dtype."""
    op = "relax.one_hot"
    check_num_args(call, op, 3)
    idx = tensor_arg(call, 0, op, "indices")
    on, off = (struct_info_of(a) for a in call.args[1:])
    if not isinstance(on, PrimStructInfo) or not isinstance(off, PrimStructInfo):
        raise StructInfoTypeError(f"{op}: on_value and off_value must be scalars (R.prim_value), "
                                  f"got {struct_info_text(on)} and {struct_info_text(off)}")
    if on.dtype != off.dtype:
        raise StructInfoTypeError(f"{op}: on_value and off_value must have one dtype, got {on.dtype} and {off.dtype}")
    if not idx.is_unknown_dtype and not idx.dtype.startswith(("int", "uint")):
        raise StructInfoTypeError(f"{op}: indices must be integers, got {struct_info_text(idx)}")
    if idx.ndim == -1:
        return TensorStructInfo(None, on.dtype, idx.vdevice, -1)
    vals = expr_dims(idx)
    if vals is None:
        return TensorStructInfo(None, on.dtype, idx.vdevice, idx.ndim + 1)
    axis = normalize_axis(op, call.attrs["axis"], len(vals) + 1)
    out = list(vals)
    out.insert(axis, IntImm("int64", call.attrs["depth"]))
    return TensorStructInfo(out, on.dtype, idx.vdevice)


def one_hot(indices: Expr, on_value: Any, off_value: Any, depth: int, axis: int = -1) -> Call:
    """``on_value`` where the position along the new axis ``axis`` (of length ``depth``)
    equals the index, ``off_value`` elsewhere."""
    op = "relax.one_hot"
    on, off = (v if isinstance(v, Expr) else PrimValue(v) for v in (on_value, off_value))
    if int(depth) <= 0:
        raise StructInfoError(f"{op}: depth must be positive, got {depth}")
    return make_call(op, indices, on, off, attrs={"depth": int(depth), "axis": int(axis)})


__all__ += ["meshgrid", "one_hot"]
