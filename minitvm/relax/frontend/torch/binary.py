"""Element-wise operators of two operands (tensors or Python scalars) and matrix products."""

from __future__ import annotations

from ....tir.op_table import BINARY
from ... import op as _op
from ...expr import Tuple, struct_info_of
from .unary import log1p_of


def _compute_dtype(node, conv) -> str:
    """The dtype torch computes in: the result's, or for a comparison (a bool result) the
    operands' promoted dtype by torch's rules (``torch.result_type``: a bool tensor against
    the number 2 compares as int64, an int tensor against 1.5 as float32)."""
    out = conv.dtype_of(node)
    if out != "bool":
        return out
    import torch  # torch is optional and heavy: imported on first use

    def operand(x):
        val = getattr(x, "meta", {}).get("val")
        return val if isinstance(val, torch.Tensor) else conv.arg(x)

    return conv.dtype_name(torch.result_type(operand(node.args[0]), operand(node.args[1])))


def _binary(fn):
    def convert(node, conv):
        a, b = conv.operands(node.args[0], node.args[1], dtype=_compute_dtype(node, conv))
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1:
            b = _op.multiply(b, conv.scalar(alpha, b))
        return conv.bb.emit(fn(a, b))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def _logical(fn):
    """and / or / xor of bool tensors (``bitwise_and`` of two masks is the same thing, and
    xor of two masks is ``not_equal``); the other operand may be a Python bool."""
    def convert(node, conv):
        if conv.dtype_of(node) != "bool":
            raise ValueError(f"from_exported_program: {node.target} is supported on bool tensors only, "
                             f"got {conv.dtype_of(node)}")
        a, b = (_truth(conv, x) for x in conv.operands(node.args[0], node.args[1]))
        return conv.bb.emit(fn(a, b))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def _truth(conv, x):
    """A bool tensor as it is; another (``logical_and`` of two float tensors) as ``x != 0``."""
    dtype = struct_info_of(x).dtype
    return x if dtype == "bool" else conv.bb.emit(_op.not_equal(x, conv.scalar_of(0, dtype)))


def _bitwise(fn):
    """and / or / xor / shifts of integer or bool tensors (``&`` of two masks is ``and``)."""
    def convert(node, conv):
        a, b = conv.operands(node.args[0], node.args[1], dtype=_compute_dtype(node, conv))
        return conv.bb.emit(fn(a, b))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def div_mode(node, conv):
    """``torch.div(a, b, rounding_mode=None | "trunc" | "floor")``."""
    mode = node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)
    dtype = conv.dtype_of(node)
    a, b = conv.operands(node.args[0], node.args[1], dtype=dtype)
    if mode is None:
        return conv.bb.emit(_op.divide(a, b))
    if mode == "floor":
        return conv.bb.emit(_op.floor_divide(a, b))
    if dtype.startswith("float"):
        return conv.bb.emit(_op.trunc(_op.divide(a, b)))
    return conv.bb.emit(_op.divide(a, b))  # integer division truncates


def logaddexp(node, conv):
    """``log(exp(a) + exp(b))`` as ``m + log1p(exp(-|a - b|))`` with ``m = max(a, b)``;
    equal infinities give themselves."""
    a, b = conv.operands(node.args[0], node.args[1], dtype=conv.dtype_of(node))
    m = conv.bb.emit(_op.maximum(a, b))
    d = conv.bb.emit(_op.negative(_op.abs(_op.subtract(a, b))))
    out = _op.add(m, log1p_of(conv, conv.bb.emit(_op.exp(d))))
    return conv.bb.emit(_op.where(_op.isinf(m), m, out))


def outer(node, conv):
    """``a[:, None] * b[None, :]``."""
    a, b = conv.operands(node.args[0], node.args[1], dtype=conv.dtype_of(node))
    return conv.bb.emit(_op.multiply(_op.expand_dims(a, [1]), b))


def baddbmm(node, conv):
    """``beta * input + alpha * (b1 @ b2)`` (batched), emitted in TVM's order: the product,
    its scaling, the bias's scaling, the sum."""
    beta = node.kwargs.get("beta", node.args[3] if len(node.args) > 3 else 1)
    alpha = node.kwargs.get("alpha", node.args[4] if len(node.args) > 4 else 1)
    return _scaled_product_plus(node, conv, alpha, beta)


def _scaled_product_plus(node, conv, alpha, beta):
    """``beta * bias + alpha * (m1 @ m2)`` with the matmul's ``out_dtype`` set to the result's
    dtype, as TVM's importer sets it (to float32, the dtype its tests use)."""
    bias, m1, m2 = (conv.arg(a) for a in node.args[:3])
    res = None
    if alpha != 0:
        res = conv.bb.emit(_op.matmul(m1, m2, out_dtype=conv.dtype_of(node)))
        if alpha != 1:
            res = conv.bb.emit(_op.multiply(res, conv.scalar(alpha, res)))
    if beta != 0:
        if beta != 1:
            bias = conv.bb.emit(_op.multiply(bias, conv.scalar(beta, bias)))
        res = bias if res is None else conv.bb.emit(_op.add(bias, res))
    return res


def einsum(node, conv):
    equation = node.args[0]
    return conv.bb.emit(_op.einsum(Tuple([conv.arg(t) for t in node.args[1]]), equation))


def _nan_ignoring(fn):
    """fmax / fmin: the other operand where one is NaN."""
    def convert(node, conv):
        a, b = conv.operands(node.args[0], node.args[1], dtype=conv.dtype_of(node))
        if not conv.dtype_of(node).startswith("float"):
            return conv.bb.emit(fn(a, b))
        return conv.bb.emit(_op.where(_op.isnan(a), b, _op.where(_op.isnan(b), a, fn(a, b))))
    return convert


def addcmul_div(fn):
    """``input + value * fn(t1, t2)`` (addcmul: ``*``, addcdiv: ``/``)."""
    def convert(node, conv):
        dtype = conv.dtype_of(node)
        x, t1, t2 = (conv.as_dtype(conv.arg(a), dtype) for a in node.args[:3])
        value = node.kwargs.get("value", node.args[3] if len(node.args) > 3 else 1)
        term = fn(t1, t2)
        if value != 1:
            term = _op.multiply(term, conv.scalar_of(value, dtype))
        return conv.bb.emit(_op.add(x, term))
    return convert


def addmv(node, conv):
    """``beta * input + alpha * (mat @ vec)``."""
    return baddbmm(node, conv)


def rsub(node, conv):
    """``other - alpha * x`` (``1 - x`` is ``rsub(x, 1)``)."""
    a, b = conv.operands(node.args[0], node.args[1])
    alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
    if alpha != 1:
        a = _op.multiply(a, conv.scalar(alpha, a))
    return conv.bb.emit(_op.subtract(b, a))


def matmul(node, conv):
    """``mm``/``bmm``/``matmul``: the ``out_dtype`` is the result's dtype, as TVM's importer
    spells it out."""
    return conv.bb.emit(_op.matmul(conv.arg(node.args[0]), conv.arg(node.args[1]), out_dtype=conv.dtype_of(node)))


def addmm(node, conv):
    """``beta * bias + alpha * (m1 @ m2)``."""
    return _scaled_product_plus(node, conv, node.kwargs.get("alpha", 1), node.kwargs.get("beta", 1))


def linear(node, conv):
    x, w = conv.arg(node.args[0]), conv.arg(node.args[1])
    b = conv.arg(node.args[2]) if len(node.args) > 2 else None
    return conv.bb.emit(_op.linear(x, w, b))


CONVERTERS = {
    # every binary operator of the table (minitvm.tir.op_table) from its ATen ops; the converters
    # written out below replace these for the logical and bitwise ones (bool operands)
    **{aten: _binary(getattr(_op, row.name)) for row in BINARY for aten in row.aten},
    "aten.add.Scalar": _binary(_op.add),
    "aten.sub.Scalar": _binary(_op.subtract),
    "aten.mul.Scalar": _binary(_op.multiply),
    "aten.div.Scalar": _binary(_op.divide),
    "aten.pow.Tensor_Scalar": _binary(_op.power),
    "aten.rsub.Scalar": rsub,
    "aten.rsub.Tensor": rsub,
    "aten.eq.Scalar": _binary(_op.equal),
    "aten.ne.Scalar": _binary(_op.not_equal),
    "aten.lt.Scalar": _binary(_op.less),
    "aten.le.Scalar": _binary(_op.less_equal),
    "aten.gt.Scalar": _binary(_op.greater),
    "aten.ge.Scalar": _binary(_op.greater_equal),
    "aten.logical_and.default": _logical(_op.logical_and),
    "aten.logical_or.default": _logical(_op.logical_or),
    "aten.logical_xor.default": _logical(_op.not_equal),
    **{f"aten.{name}.{overload}": _bitwise(fn) for name, fn in (
        ("bitwise_and", _op.bitwise_and), ("bitwise_or", _op.bitwise_or), ("bitwise_xor", _op.bitwise_xor),
        ("__and__", _op.bitwise_and), ("__or__", _op.bitwise_or), ("__xor__", _op.bitwise_xor),
        ("__lshift__", _op.left_shift), ("__rshift__", _op.right_shift), ("bitwise_or_", _op.bitwise_or),
        ("bitwise_and_", _op.bitwise_and)) for overload in ("Tensor", "Scalar")},
    "aten.bitwise_left_shift.Tensor": _bitwise(_op.left_shift),
    "aten.bitwise_right_shift.Tensor": _bitwise(_op.right_shift),
    "aten.bitwise_left_shift.Tensor_Scalar": _bitwise(_op.left_shift),
    "aten.bitwise_right_shift.Tensor_Scalar": _bitwise(_op.right_shift),
    "aten.div.Tensor_mode": div_mode,
    "aten.div.Scalar_mode": div_mode,
    "aten.fmod.Scalar": _binary(_op.mod),
    "aten.remainder.Scalar": _binary(_op.floor_mod),
    "aten.pow.Scalar": _binary(_op.power),
    "aten.max.other": _binary(_op.maximum),
    "aten.min.other": _binary(_op.minimum),
    "aten.logaddexp.default": logaddexp,
    "aten.add_.Tensor": _binary(_op.add),
    "aten.mul_.Tensor": _binary(_op.multiply),
    "aten.sub_.Tensor": _binary(_op.subtract),
    "aten.div_.Tensor": _binary(_op.divide),
    "aten.outer.default": outer,
    "aten.baddbmm.default": baddbmm,
    "aten.einsum.default": einsum,
    "aten.mv.default": matmul,
    "aten.vdot.default": matmul,
    "aten.addmv.default": addmv,
    "aten.addcmul.default": addcmul_div(_op.multiply),
    "aten.addcdiv.default": addcmul_div(_op.divide),
    "aten.fmax.default": _nan_ignoring(_op.maximum),
    "aten.fmin.default": _nan_ignoring(_op.minimum),
    "aten.dot.default": matmul,
    "aten.mm.default": matmul,
    "aten.bmm.default": matmul,
    "aten.matmul.default": matmul,
    "aten.addmm.default": addmm,
    "aten.linear.default": linear,
}
