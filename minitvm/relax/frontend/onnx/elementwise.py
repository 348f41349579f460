"""Element-wise ONNX operators: the one-to-one ones read from ``tir.op_table`` (its ``onnx``
column), the rest written here (attributes, several inputs, activations)."""

from __future__ import annotations

import math

import numpy as np

from ....tir.op_table import BINARY, UNARY
from ... import op as _op
from ...expr import const
from ..torch.unary import _elu_of, _softplus_of
from .importer import OnnxImporter, OnnxNode, _is_symbolic, _plain


def _has_symbols(a: np.ndarray) -> bool:
    return a.dtype == object and any(_is_symbolic(v) for v in a.reshape(-1).tolist())


def _plain_array(a: np.ndarray) -> np.ndarray:
    """An object array without symbols as int64; others as they are."""
    if a.dtype == object and not _has_symbols(a):
        return np.array([_plain(v) for v in a.reshape(-1).tolist()], dtype="int64").reshape(a.shape)
    return a


def _known_inputs(node: OnnxNode, imp: OnnxImporter, symbols_ok: bool) -> list[np.ndarray] | None:
    """Every input's value when all are known and small (and free of symbols unless the
    operation is one tir expressions support), else None: the node is computed at run time."""
    if not imp.all_known(node):
        return None
    vals = [_plain_array(imp.known(node, k)) for k in range(len(node.inputs))]
    if not symbols_ok and any(_has_symbols(v) for v in vals):
        return None
    return vals


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding towards zero (ONNX's, C's), on known values."""
    if np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(np.result_type(a, b))


def _fold_binary(row, node: OnnxNode, imp: OnnxImporter):
    """``row``'s operation on known inputs (shape arithmetic: ``batch * 5``), else None."""
    symbolic_ok = row.name in ("add", "subtract", "multiply", "divide")
    vals = _known_inputs(node, imp, symbolic_ok)
    if vals is None:
        return None
    a, b = vals
    if a.dtype == object or b.dtype == object:  # tir arithmetic on sizes (non-negative: // is exact)
        fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.floor_divide}[row.name]
        return _plain_array(np.asarray(fn(a.astype(object), b.astype(object)), dtype=object))
    if row.name == "divide" and np.issubdtype(a.dtype, np.integer):
        try:
            return _trunc_div(a, b)
        except ZeroDivisionError:
            raise node.error("integer division by a known zero") from None
    out = row.reference(a, b)
    return np.asarray(out if row.result == "bool" else np.asarray(out).astype(a.dtype))


def _binary(row):
    fn = getattr(_op, row.name)

    def convert(node: OnnxNode, imp: OnnxImporter):
        folded = _fold_binary(row, node, imp)
        if folded is not None:
            return folded
        return imp.emit(fn(imp.tensor(node, 0), imp.tensor(node, 1)))
    convert.__name__ = f"convert_{row.name}"
    return convert


def _unary(row):
    fn = getattr(_op, row.name)

    def convert(node: OnnxNode, imp: OnnxImporter):
        vals = _known_inputs(node, imp, symbols_ok=False)
        if vals is not None:  # e.g. Not of a known condition in an exporter's shape logic
            out = np.asarray(row.reference(vals[0]))
            return out if row.result == "bool" else out.astype(vals[0].dtype)
        return imp.emit(fn(imp.tensor(node, 0)))
    convert.__name__ = f"convert_{row.name}"
    return convert


def _k(imp: OnnxImporter, x, value):
    return imp.scalar(value, x)


def _x(node: OnnxNode, imp: OnnxImporter):
    return imp.tensor(node, 0)


# -- several inputs, attributes ---------------------------------------------------------------------

def _variadic(fn, mean: bool = False):
    """Sum / Max / Min / Mean of any number of inputs, with broadcasting."""
    def convert(node: OnnxNode, imp: OnnxImporter):
        xs = [imp.tensor(node, k) for k in range(len(node.inputs)) if node.has_input(k)]
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        if mean:
            out = _op.divide(out, _k(imp, xs[0], float(len(xs))))
        return imp.emit(out) if len(xs) > 1 or mean else out
    return convert


def pow_(node: OnnxNode, imp: OnnxImporter):
    """``x ** y``; the exponent may have another dtype than the base (the result has the base's);
    integer powers are computed in float64 (exact for the sizes integers hold) and cast back."""
    x, y = imp.tensor(node, 0), imp.tensor(node, 1)
    dtype = imp.dtype(node, 0)
    work = dtype if dtype.startswith(("float", "bfloat")) else "float64"
    if work != dtype:
        x = _op.astype(x, work)
    if imp.dtype(node, 1) != work:
        y = _op.astype(y, work)
    out = _op.power(x, y)
    return imp.emit(out if work == dtype else _op.astype(_op.round(out), dtype))


def mod(node: OnnxNode, imp: OnnxImporter):
    """``fmod=1``: the remainder with the dividend's sign (C's fmod); ``fmod=0``: with the
    divisor's (Python's ``%``, integers only)."""
    fmod = node.attr("fmod", 0)
    vals = _known_inputs(node, imp, symbols_ok=False)
    if vals is not None and not np.any(vals[1] == 0):
        return np.asarray((np.fmod if fmod else np.mod)(*vals)).astype(vals[0].dtype)
    fn = _op.mod if fmod else _op.floor_mod
    return imp.emit(fn(imp.tensor(node, 0), imp.tensor(node, 1)))


def bit_shift(node: OnnxNode, imp: OnnxImporter):
    fn = _op.left_shift if node.attr("direction") == "LEFT" else _op.right_shift
    return imp.emit(fn(imp.tensor(node, 0), imp.tensor(node, 1)))


def is_inf(node: OnnxNode, imp: OnnxImporter):
    """``detect_positive`` / ``detect_negative`` pick which infinities count."""
    x = _x(node, imp)
    pos, neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    if pos and neg:
        return imp.emit(_op.isinf(x))
    if not pos and not neg:
        return imp.emit(_op.zeros_like(x, "bool"))
    return imp.emit(_op.equal(x, _k(imp, x, math.inf if pos else -math.inf)))


def reciprocal(node: OnnxNode, imp: OnnxImporter):
    x = _x(node, imp)
    return imp.emit(_op.divide(_k(imp, x, 1.0), x))


def relu(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.nn.relu(_x(node, imp)))


def leaky_relu(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.nn.leakyrelu(_x(node, imp), float(node.attr("alpha", 0.01))))


def elu(node: OnnxNode, imp: OnnxImporter):
    return _elu_of(imp, _x(node, imp), float(node.attr("alpha", 1.0)))


def selu(node: OnnxNode, imp: OnnxImporter):
    return _elu_of(imp, _x(node, imp), float(node.attr("alpha", 1.67326319217681884765625)),
                   float(node.attr("gamma", 1.05070102214813232421875)))


def celu(node: OnnxNode, imp: OnnxImporter):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``: an ELU with its input scaled."""
    alpha = float(node.attr("alpha", 1.0))
    return _elu_of(imp, _x(node, imp), alpha, 1.0, 1.0 / alpha)


def softplus(node: OnnxNode, imp: OnnxImporter):
    """``log(exp(x) + 1)``; past 20 it is ``x`` to float precision (and exp would overflow)."""
    return _softplus_of(imp, _x(node, imp), 1.0, 20.0)


def softsign(node: OnnxNode, imp: OnnxImporter):
    x = _x(node, imp)
    return imp.emit(_op.divide(x, _op.add(_op.abs(x), _k(imp, x, 1.0))))


def mish(node: OnnxNode, imp: OnnxImporter):
    x = _x(node, imp)
    return imp.emit(_op.multiply(x, _op.tanh(_softplus_of(imp, x, 1.0, 20.0))))


def hard_sigmoid(node: OnnxNode, imp: OnnxImporter):
    """``clip(alpha * x + beta, 0, 1)``."""
    x = _x(node, imp)
    alpha, beta = float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    return imp.emit(_op.clip(_op.add(_op.multiply(x, _k(imp, x, alpha)), _k(imp, x, beta)), 0.0, 1.0))


def hard_swish(node: OnnxNode, imp: OnnxImporter):
    """``x * clip(x / 6 + 1 / 2, 0, 1)``."""
    x = _x(node, imp)
    gate = _op.clip(_op.add(_op.multiply(x, _k(imp, x, 1.0 / 6)), _k(imp, x, 0.5)), 0.0, 1.0)
    return imp.emit(_op.multiply(x, gate))


def prelu(node: OnnxNode, imp: OnnxImporter):
    """``x`` where positive, else ``slope * x`` (the slope broadcasts to ``x``)."""
    x, slope = imp.tensor(node, 0), imp.tensor(node, 1)
    return imp.emit(_op.where(_op.less(x, _k(imp, x, 0.0)), _op.multiply(x, slope), x))


def thresholded_relu(node: OnnxNode, imp: OnnxImporter):
    x = _x(node, imp)
    return imp.emit(_op.where(_op.greater(x, _k(imp, x, float(node.attr("alpha", 1.0)))), x, _k(imp, x, 0.0)))


def shrink(node: OnnxNode, imp: OnnxImporter):
    """``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, else 0."""
    x = _x(node, imp)
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    out = _op.where(_op.less(x, _k(imp, x, -lambd)), _op.add(x, _k(imp, x, bias)),
                    _op.where(_op.greater(x, _k(imp, x, lambd)), _op.subtract(x, _k(imp, x, bias)), _k(imp, x, 0)))
    return imp.emit(out)


def swish(node: OnnxNode, imp: OnnxImporter):
    """opset 24's Swish: ``x * sigmoid(alpha * x)``."""
    x = _x(node, imp)
    alpha = float(node.attr("alpha", 1.0))
    return imp.emit(_op.multiply(x, _op.sigmoid(_op.multiply(x, _k(imp, x, alpha)) if alpha != 1.0 else x)))


def gelu(node: OnnxNode, imp: OnnxImporter):
    """opset 20's Gelu: exact, or ``approximate="tanh"``."""
    fn = _op.nn.gelu_tanh if node.attr("approximate", "none") == "tanh" else _op.nn.gelu
    return imp.emit(fn(_x(node, imp)))


def clip(node: OnnxNode, imp: OnnxImporter):
    """Bounds are attributes before opset 11 and optional inputs after; either may be absent."""
    x = _x(node, imp)
    dtype = imp.dtype(node, 0)
    if node.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
    else:
        lo, hi = (imp.known(node, k) if node.has_input(k) else None for k in (1, 2))
        for k, v in ((1, lo), (2, hi)):
            if node.has_input(k) and v is None:  # a bound computed at run time
                x = (_op.maximum if k == 1 else _op.minimum)(x, imp.tensor(node, k))
        lo = None if lo is None else lo.item()
        hi = None if hi is None else hi.item()
    if lo is None and hi is None:
        return imp.emit(x)
    if dtype.startswith("float"):
        return imp.emit(_op.clip(x, -math.inf if lo is None else lo, math.inf if hi is None else hi))
    if lo is not None:
        x = _op.maximum(x, imp.scalar_of(lo, dtype))
    if hi is not None:
        x = _op.minimum(x, imp.scalar_of(hi, dtype))
    return imp.emit(x)


def _onnx_dtype(code: int) -> str:
    from onnx import helper  # onnx is an optional extra: imported on first use

    return str(helper.tensor_dtype_to_np_dtype(code))


def cast(node: OnnxNode, imp: OnnxImporter):
    """To the dtype ``to`` names; known values are cast while importing."""
    dtype = _onnx_dtype(node.attr("to"))
    known = imp.known(node, 0)
    if known is not None and known.size <= 64:
        if known.dtype == object and _has_symbols(known) and dtype.startswith("int"):
            return known  # sizes stay sizes
        return _plain_array(known).astype(dtype)
    if imp.dtype(node, 0) == dtype:
        return imp.tensor(node, 0)
    return imp.emit(_op.astype(imp.tensor(node, 0), dtype))


def cast_like(node: OnnxNode, imp: OnnxImporter):
    dtype = imp.dtype(node, 1)
    if imp.dtype(node, 0) == dtype:
        return imp.tensor(node, 0)
    return imp.emit(_op.astype(imp.tensor(node, 0), dtype))


def where(node: OnnxNode, imp: OnnxImporter):
    vals = _known_inputs(node, imp, symbols_ok=False)
    if vals is not None:
        return np.where(*vals)
    return imp.emit(_op.where(*(imp.tensor(node, k) for k in range(3))))


def identity(node: OnnxNode, imp: OnnxImporter):
    return imp.env[node.inputs[0]]


def dropout(node: OnnxNode, imp: OnnxImporter):
    """Inference: the input, and a mask of trues; ``training_mode`` (opset 12) must be false."""
    training = imp.known(node, 2) if node.opset >= 12 else None
    if node.has_input(2) and (training is None or bool(training.item())):
        raise node.error("dropout in training mode is not supported (inference only)")
    x = imp.env[node.inputs[0]]
    if not node.wants_output(1):
        return x
    mask = imp.emit(_op.full(imp.shape(node, 0), const(np.array(True)), "bool"))
    return [x, mask]


CONVERTERS = {
    **{name: _unary(row) for row in UNARY for name in row.onnx},
    **{name: _binary(row) for row in BINARY for name in row.onnx},
    "Sum": _variadic(_op.add), "Max": _variadic(_op.maximum), "Min": _variadic(_op.minimum),
    "Mean": _variadic(_op.add, mean=True),
    "Pow": pow_, "Mod": mod, "BitShift": bit_shift, "IsInf": is_inf, "Reciprocal": reciprocal,
    "Relu": relu, "LeakyRelu": leaky_relu, "Elu": elu, "Selu": selu, "Celu": celu, "Softplus": softplus,
    "Softsign": softsign, "Mish": mish, "HardSigmoid": hard_sigmoid, "HardSwish": hard_swish, "PRelu": prelu,
    "ThresholdedRelu": thresholded_relu, "Shrink": shrink, "Gelu": gelu, "Swish": swish, "Clip": clip, "Cast": cast,
    "CastLike": cast_like, "Where": where, "Identity": identity, "Dropout": dropout,
}


# -- quantization -------------------------------------------------------------------------------------

#: the integer dtypes QuantizeLinear writes, with their ranges (float8 and 4-bit types: not supported)
_QUANT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535)}


def _per_axis(node: OnnxNode, imp: OnnxImporter, k: int):
    """Input ``k`` (a scale or zero point) broadcastable to input 0: a scalar as is, one value per
    index along ``axis`` (default 1) reshaped, or with ``block_size`` repeated over each block."""
    v = imp.tensor(node, k)
    shape, vshape = imp.shape(node, 0), imp.shape(node, k)
    axis = int(node.attr("axis", 1)) % max(len(shape), 1)
    block = int(node.attr("block_size", 0))
    if len(vshape) == 0 or int(np.prod(vshape)) == 1:
        return _op.reshape(v, []) if vshape else v
    if not block:
        return _op.reshape(v, [-1 if i == axis else 1 for i in range(len(shape))])
    v = _op.repeat(v, block, axis=axis)
    return _op.strided_slice(v, [axis], [0], [shape[axis]]) if vshape[axis] * block != shape[axis] else v


def quantize_linear(node: OnnxNode, imp: OnnxImporter):
    """``clip(round_half_even(x / scale) + zero_point)`` into the zero point's dtype (else
    ``output_dtype``, else uint8), per tensor, per axis or per block."""
    code = node.attr("output_dtype")
    dtype = imp.dtype(node, 2) if node.has_input(2) else (_onnx_dtype(code) if code else "uint8")
    if dtype not in _QUANT_RANGES:
        raise node.error(f"quantizing to {dtype} is not supported ({', '.join(_QUANT_RANGES)} are)")
    x = imp.tensor(node, 0)
    work = imp.dtype(node, 0)
    if node.attr("precision"):
        work = _onnx_dtype(node.attr("precision"))
        x = _op.astype(x, work)
    scale = _per_axis(node, imp, 1)
    if imp.dtype(node, 1) != work:
        scale = _op.astype(scale, work)
    q = _op.astype(_op.round(_op.divide(x, scale)), "int32")
    if node.has_input(2):
        q = _op.add(q, _op.astype(_per_axis(node, imp, 2), "int32"))
    lo, hi = _QUANT_RANGES[dtype]
    q = _op.minimum(_op.maximum(q, imp.scalar_of(lo, "int32")), imp.scalar_of(hi, "int32"))
    return imp.emit(_op.astype(q, dtype))


def dequantize_linear(node: OnnxNode, imp: OnnxImporter):
    """``(x - zero_point) * scale`` in the scale's dtype (or ``output_dtype``)."""
    if imp.dtype(node, 0) not in (*_QUANT_RANGES, "int32"):
        raise node.error(f"dequantizing {imp.dtype(node, 0)} is not supported")
    dtype = imp.dtype(node, 1)
    x = _op.astype(imp.tensor(node, 0), "float32")
    if node.has_input(2):
        x = _op.subtract(x, _op.astype(_per_axis(node, imp, 2), "float32"))
    out = _op.multiply(_op.astype(x, dtype) if dtype != "float32" else x, _per_axis(node, imp, 1))
    code = node.attr("output_dtype")
    return imp.emit(_op.astype(out, _onnx_dtype(code)) if code and _onnx_dtype(code) != dtype else out)


CONVERTERS.update({"QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear})
