"""Element-wise operators of two operands (tensors or Python scalars) and matrix products."""

from __future__ import annotations

from ... import op as _op


def _binary(fn):
    def convert(node, conv):
        a, b = conv.operands(node.args[0], node.args[1])
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1:
            b = _op.multiply(b, conv.scalar(alpha, b))
        return conv.bb.emit(fn(a, b))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def matmul(node, conv):
    return conv.bb.emit(_op.matmul(conv.arg(node.args[0]), conv.arg(node.args[1])))


def addmm(node, conv):
    """``beta * bias + alpha * (m1 @ m2)``."""
    bias, m1, m2 = (conv.arg(a) for a in node.args[:3])
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    prod = _op.matmul(m1, m2)
    if alpha != 1:
        prod = _op.multiply(prod, conv.scalar(alpha, m1))
    if beta != 1:
        bias = _op.multiply(bias, conv.scalar(beta, m1))
    return conv.bb.emit(_op.add(bias, prod))


def linear(node, conv):
    x, w = conv.arg(node.args[0]), conv.arg(node.args[1])
    b = conv.arg(node.args[2]) if len(node.args) > 2 else None
    return conv.bb.emit(_op.linear(x, w, b))


CONVERTERS = {
    "aten.add.Tensor": _binary(_op.add),
    "aten.add.Scalar": _binary(_op.add),
    "aten.sub.Tensor": _binary(_op.subtract),
    "aten.sub.Scalar": _binary(_op.subtract),
    "aten.mul.Tensor": _binary(_op.multiply),
    "aten.mul.Scalar": _binary(_op.multiply),
    "aten.div.Tensor": _binary(_op.divide),
    "aten.div.Scalar": _binary(_op.divide),
    "aten.pow.Tensor_Scalar": _binary(_op.power),
    "aten.pow.Tensor_Tensor": _binary(_op.power),
    "aten.maximum.default": _binary(_op.maximum),
    "aten.minimum.default": _binary(_op.minimum),
    "aten.mm.default": matmul,
    "aten.bmm.default": matmul,
    "aten.matmul.default": matmul,
    "aten.addmm.default": addmm,
    "aten.linear.default": linear,
}
