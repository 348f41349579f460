"""Each operator's gradient (``FPrimalGradient``, TVM's ``relax.op._op_gradient``).

A rule receives the variable bound to the forward call, the call, the gradient of that
variable and the BlockBuilder, and returns one gradient expression per argument of the call
(``no_grad(arg)`` for an argument with none: shapes, indices, masks).  A gradient is shaped
like its argument: where an argument was broadcast, the gradient is summed back
(``collapse_sum_to``).  Rules use the forward result where it is cheaper (``exp``' gradient is
``g * exp(x)``, the bound variable).
"""

from __future__ import annotations

from typing import Any, Callable

from ...arith import Analyzer
from ...ir.op import register_op_attr
from ..expr import Call, Expr, Var, const
from ..struct_info import TensorStructInfo
from . import binary as _b
from . import index, nn  # (imported first, their ops are registered before the rules below)
from . import unary as _u
from .create import triu, zeros_like
from .datatype import astype
from .grad import avg_pool2d_backward, max_pool2d_backward, nll_loss_backward, no_grad, take_backward
from .linear_algebra import matmul
from .manipulate import broadcast_to, collapse_sum_to, concat, expand_dims, flip, permute_dims, reshape, split, squeeze
from .search import where
from .statistical import cumsum, mean, sum

__all__ = ["register_gradient"]

Rule = Callable[[Var, Call, Var, Any], list]

_ANALYZER = Analyzer()


def register_gradient(op_name: str, rule: Rule | None = None, level: int = 10) -> Any:
    """Set ``op_name``'s ``FPrimalGradient`` (a decorator without ``rule``)."""
    return register_op_attr(op_name, "FPrimalGradient", rule, level)


def _sinfo(e: Expr) -> TensorStructInfo:
    return e.struct_info


def _c(value: float, like: Expr) -> Expr:
    """A scalar constant in ``like``'s dtype."""
    return const(value, _sinfo(like).dtype)


def _fit(ctx: Any, grad: Expr, arg: Expr) -> Expr:
    """``grad`` summed down to ``arg``'s shape (``collapse_sum_to``) unless the shapes are
    provably equal, as TVM's ``_fit_shape``; ``grad`` itself stays unbound."""
    have, want = _sinfo(ctx.normalize(grad)).shape_values, _sinfo(arg).shape_values
    if have is not None and want is not None and len(have) == len(want) and \
            all(_ANALYZER.can_prove_equal(a, b) for a, b in zip(have, want)):
        return grad
    return collapse_sum_to(grad, _sinfo(arg).shape)


def _binary(fx: Callable, fy: Callable) -> Rule:
    def rule(y: Var, call: Call, g: Var, ctx: Any) -> list:
        a, b = call.args
        return [_fit(ctx, fx(a, b, y, g), a), _fit(ctx, fy(a, b, y, g), b)]
    return rule


# each rule's expression as TVM writes it (the order of the operands decides the bindings a
# block builder emits for them, which TVM's tests compare)
for _name, _fx, _fy in [
    ("add", lambda a, b, y, g: g, lambda a, b, y, g: g),
    ("subtract", lambda a, b, y, g: g, lambda a, b, y, g: _u.negative(g)),
    ("multiply", lambda a, b, y, g: _b.multiply(g, b), lambda a, b, y, g: _b.multiply(g, a)),
    ("divide", lambda a, b, y, g: _b.divide(g, b),
     lambda a, b, y, g: _b.divide(_b.multiply(_u.negative(g), y), b)),
    ("power", lambda a, b, y, g: _b.multiply(_b.multiply(g, b), _b.power(a, _b.subtract(b, _c(1, b)))),
     lambda a, b, y, g: _b.multiply(_b.multiply(g, y), _u.log(a))),
    # ties go to the first operand, as TVM's rules send them
    ("maximum", lambda a, b, y, g: where(_b.less(a, b), _c(0, a), g),
     lambda a, b, y, g: where(_b.greater_equal(a, b), _c(0, a), g)),
    ("minimum", lambda a, b, y, g: where(_b.greater_equal(a, b), _c(0, a), g),
     lambda a, b, y, g: where(_b.less(a, b), _c(0, a), g)),
]:
    register_gradient(f"relax.{_name}", _binary(_fx, _fy))


def _no_grads(y: Var, call: Call, g: Var, ctx: Any) -> list:
    """Comparisons and creations: nothing flows back to any argument."""
    return [no_grad(a) for a in call.args]


for _name in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
              "zeros_like", "ones_like", "full_like", "zeros", "ones", "full"):
    register_gradient(f"relax.{_name}", _no_grads)


def _unary(f: Callable) -> Rule:
    def rule(y: Var, call: Call, g: Var, ctx: Any) -> list:
        return [f(call.args[0], y, g)]
    return rule


for _name, _f in [
    ("abs", lambda x, y, g: _b.multiply(g, where(_b.less(x, _c(0, x)), _u.negative(_c(1, x)), _c(1, x)))),
    ("cos", lambda x, y, g: _u.negative(_b.multiply(g, _u.sin(x)))),
    ("exp", lambda x, y, g: _b.multiply(g, y)),
    ("log", lambda x, y, g: _b.divide(g, x)),
    ("negative", lambda x, y, g: _u.negative(g)),
    ("sigmoid", lambda x, y, g: _b.multiply(g, _b.multiply(y, _b.subtract(_c(1, y), y)))),
    ("sin", lambda x, y, g: _b.multiply(g, _u.cos(x))),
    ("sqrt", lambda x, y, g: _b.divide(_b.multiply(g, _c(0.5, y)), y)),
    ("tanh", lambda x, y, g: _b.multiply(g, _b.subtract(_c(1, y), _b.multiply(y, y)))),
    # at 0 the gradient passes, as TVM's rule has it (a zero-initialized ReLU layer still learns)
    ("nn.relu", lambda x, y, g: where(_b.less(x, _c(0, x)), _c(0, x), g)),
    ("nn.silu", lambda x, y, g: _silu_grad(x, g)),
]:
    register_gradient(f"relax.{_name}", _unary(_f))


def _silu_grad(x: Expr, g: Expr) -> Expr:
    s = _u.sigmoid(x)  # silu' = s + x s (1 - s)
    return _b.multiply(g, _b.multiply(s, _b.add(_c(1, x), _b.multiply(x, _b.subtract(_c(1, x), s)))))


@register_gradient("relax.triu")
def _triu_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [triu(g, call.args[1])]


def _reduced_axes(call: Call) -> list[int]:
    ndim = _sinfo(call.args[0]).ndim
    axes = call.attrs["axis"]
    return list(range(ndim)) if axes is None else sorted(int(a) % ndim for a in axes)


def _spread(g: Expr, call: Call) -> Expr:
    """A reduction's gradient ``g`` broadcast back over the reduced axes (as TVM: the axes
    are put back only when the call named them)."""
    axis = call.attrs["axis"]
    if not call.attrs["keepdims"] and axis:
        g = expand_dims(g, axis)
    return broadcast_to(g, _sinfo(call.args[0]).shape)


def _count(call: Call) -> int:
    shape = _sinfo(call.args[0]).shape_values
    n = 1
    for a in _reduced_axes(call):
        n *= int(shape[a])
    return n


@register_gradient("relax.sum")
def _sum_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [_spread(g, call)]


@register_gradient("relax.mean")
def _mean_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [_spread(_b.divide(g, _c(_count(call), g)), call)]


@register_gradient("relax.variance")
def _variance_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    x = call.args[0]  # d var / dx = 2 (x - mean) / n
    centered = _b.subtract(x, mean(x, _reduced_axes(call), keepdims=True))
    return [_b.multiply(_spread(g, call), _b.multiply(centered, _c(2.0 / _count(call), x)))]


@register_gradient("relax.permute_dims")
def _permute_dims_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    axes = call.attrs["axes"]
    if not axes:  # reversed axes: their own inverse
        return [permute_dims(g)]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[int(a)] = i
    return [permute_dims(g, inverse)]


@register_gradient("relax.concat")
def _concat_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    fields = call.args[0].struct_info.fields
    axis = call.attrs["axis"]
    axis = 0 if axis is None else int(axis)
    bounds: list = []
    for f in fields[:-1]:
        at = f.shape_values[axis]
        bounds.append(at if not bounds else bounds[-1] + at)
    return [split(g, bounds, axis)]


@register_gradient("relax.split")
def _split_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [concat(g, call.attrs["axis"])]


@register_gradient("relax.expand_dims")
def _expand_dims_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [reshape(g, _sinfo(call.args[0]).shape)]


@register_gradient("relax.reshape")
def _reshape_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [reshape(g, _sinfo(call.args[0]).shape), no_grad(call.args[1])]


@register_gradient("relax.broadcast_to")
def _broadcast_to_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [collapse_sum_to(g, _sinfo(call.args[0]).shape), no_grad(call.args[1])]


@register_gradient("relax.cumsum")
def _cumsum_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    """Element i feeds every later sum: the gradient is the reversed cumulative sum."""
    x, axis = call.args[0], call.attrs["axis"]
    if call.attrs["exclusive"]:
        raise NotImplementedError("relax.cumsum: the gradient of an exclusive cumsum is not supported")
    along = 0 if axis is None else axis  # without an axis, x was flattened
    back = flip(cumsum(flip(g, along), along), along)
    return [reshape(back, _sinfo(x).shape) if axis is None else back]


@register_gradient("relax.take")
def _take_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    x, indices = call.args
    return [take_backward(g, x, indices, call.attrs["axis"]), no_grad(indices)]


@register_gradient("relax.where")
def _where_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    cond, a, b = call.args
    zero = zeros_like(g)
    return [no_grad(cond), _fit(ctx, where(cond, g, zero), a), _fit(ctx, where(cond, zero, g), b)]


@register_gradient("relax.astype")
def _astype_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [astype(g, _sinfo(call.args[0]).dtype)]


@register_gradient("relax.matmul")
def _matmul_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    """``da = g @ b^T`` and ``db = a^T @ g`` (the last two axes transposed), a vector operand
    made a matrix by an added axis, each summed over broadcast batch axes."""
    a, b = call.args
    na, nb = _sinfo(a).ndim, _sinfo(b).ndim

    def t(e: Expr, n: int) -> Expr:
        return permute_dims(e, [i if i < n - 2 else 2 * n - 3 - i for i in range(n)])

    if na > 1 and nb > 1:
        da, db = matmul(g, t(b, nb)), matmul(t(a, na), g)
    elif na == 1 and nb > 1:
        a_col, g_row = expand_dims(a, 1), expand_dims(g, -2)
        da, db = matmul(g_row, t(b, nb)), matmul(a_col, g_row)
    elif nb == 1 and na > 1:
        b_row, g_col = expand_dims(b, 0), expand_dims(g, -1)
        da, db = matmul(g_col, b_row), squeeze(matmul(t(a, na), g_col), axis=-1)
    else:
        da, db = _b.multiply(g, b), _b.multiply(g, a)
    return [_fit(ctx, da, a), _fit(ctx, db, b)]


@register_gradient("relax.nn.softmax")
def _softmax_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [_b.multiply(_b.subtract(g, sum(_b.multiply(g, y), call.attrs["axis"], True)), y)]


@register_gradient("relax.nn.log_softmax")
def _log_softmax_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    return [_b.subtract(g, _b.multiply(sum(g, call.attrs["axis"], True), _u.exp(y)))]


@register_gradient("relax.nn.cross_entropy_with_logits")
def _cross_entropy_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    """loss = -sum(x * labels), over the batch size when there is a batch."""
    x, labels = call.args
    if _sinfo(x).ndim > 1:
        g = _b.divide(g, _c(int(_sinfo(x).shape_values[0]), g))
    return [_b.multiply(_u.negative(g), labels), _b.multiply(_u.negative(g), x)]


@register_gradient("relax.nn.nll_loss")
def _nll_loss_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    a = call.attrs
    pred, targets, *weights = call.args
    back = nll_loss_backward(g, pred, targets, weights[0] if weights else None, a["reduction"], a["ignore_index"])
    return [back, no_grad(targets)] + [no_grad(w) for w in weights]



@register_gradient("relax.nn.conv2d")
def _conv2d_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    """NCHW data, OIHW weight.  The data's gradient is the transposed convolution of ``g``
    with the same weight (``output_padding`` restores rows the strides dropped); the weight's,
    group by group, a convolution of the data with ``g`` over the batch, strides and dilation
    exchanged, cut to the kernel size."""
    x, w = call.args
    a = call.attrs
    if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW" or a["out_layout"] != "NCHW":
        raise NotImplementedError("the gradient of relax.nn.conv2d is for NCHW data and OIHW weights only")
    (_, c, h, wd), (o, _, kh, kw) = (_ints(_sinfo(e)) for e in (x, w))
    oh, ow = _ints(_sinfo(y))[2:]
    (sh, sw), (dh, dw), pad, groups = a["strides"], a["dilation"], a["padding"], a["groups"]
    extra = [size - ((out - 1) * s - lo - hi + d * (k - 1) + 1)
             for size, out, s, lo, hi, d, k in ((h, oh, sh, pad[0], pad[2], dh, kh),
                                                (wd, ow, sw, pad[1], pad[3], dw, kw))]
    dx = nn.conv2d_transpose(g, w, (sh, sw), pad, extra, (dh, dw), groups)
    cg, og = c // groups, o // groups
    parts = []
    for gi in range(groups):
        xg = permute_dims(index.strided_slice(x, [1], [gi * cg], [(gi + 1) * cg]), [1, 0, 2, 3])
        gg = permute_dims(index.strided_slice(g, [1], [gi * og], [(gi + 1) * og]), [1, 0, 2, 3])
        full = nn.conv2d(xg, gg, strides=(dh, dw), padding=pad, dilation=(sh, sw))
        parts.append(permute_dims(index.strided_slice(full, [2, 3], [0, 0], [kh, kw]), [1, 0, 2, 3]))
    return [dx, parts[0] if groups == 1 else concat(parts, 0)]


def _ints(sinfo: TensorStructInfo) -> list[int]:
    if sinfo.static_shape is None:
        raise NotImplementedError(f"the gradient of relax.nn.conv2d needs static shapes, got {sinfo}")
    return list(sinfo.static_shape)


def _pool2d_grad(backward: Callable) -> Rule:
    def rule(y: Var, call: Call, g: Var, ctx: Any) -> list:
        a = call.attrs
        return [backward(g, call.args[0], a["pool_size"], a["strides"], a["padding"], a["dilation"], a["ceil_mode"],
                         a["count_include_pad"], a["layout"], a["out_layout"])]
    return rule


register_gradient("relax.nn.max_pool2d", _pool2d_grad(max_pool2d_backward))
register_gradient("relax.nn.avg_pool2d", _pool2d_grad(avg_pool2d_backward))


@register_gradient("relax.grad.start_checkpoint")
@register_gradient("relax.grad.end_checkpoint")
def _checkpoint_grad(y: Var, call: Call, g: Var, ctx: Any) -> list:
    """The marks are identities (minitvm keeps every forward value: nothing is recomputed)."""
    return [g]
