"""ONNX reductions (Reduce*) and ArgMax / ArgMin."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from .importer import OnnxImporter, OnnxNode

#: the opset from which each reduction takes ``axes`` as an input instead of an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _reduction(body, name: str):
    """``body(x, axes, keepdims, imp)`` over ONNX's axes: an attribute, or (opset 13 for
    ReduceSum, 18 for the rest) an optional input; none means all, or nothing at all with
    ``noop_with_empty_axes``."""
    since = _AXES_INPUT_SINCE.get(name, 18)

    def convert(node: OnnxNode, imp: OnnxImporter):
        rank = len(imp.shape(node, 0))
        if node.opset >= since:
            axes = imp.ints(node, 1, "the axes")
        else:
            axes = node.attr("axes")
        x = imp.tensor(node, 0)
        if not axes:
            if node.attr("noop_with_empty_axes", 0):  # nothing reduced, the element-wise part still
                return imp.emit(_NOOP[name](x)) if name in _NOOP else x  # applies (onnxruntime's)
            axes = list(range(rank))
        axes = sorted(int(a) % rank for a in axes)
        keep = bool(node.attr("keepdims", 1))
        shape = imp.shape(node, 0)
        if any(isinstance(shape[a], int) and shape[a] == 0 for a in axes):  # nothing to reduce
            out = [1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes]
            dtype = imp.dtype(node, 0)
            value = _EMPTY[name] if dtype != "bool" else name == "ReduceMin"
            return imp.emit(_op.full(out, imp.scalar_of(value, dtype), dtype))
        return imp.emit(body(x, axes, keep, imp))
    convert.__name__ = f"convert_{name}"
    return convert


#: each reduction of an empty set (ONNX: the operation's identity; a mean of nothing is NaN)
_EMPTY = {"ReduceSum": 0.0, "ReduceSumSquare": 0.0, "ReduceL1": 0.0, "ReduceL2": 0.0, "ReduceProd": 1.0,
          "ReduceMax": -np.inf, "ReduceMin": np.inf, "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf,
          "ReduceMean": np.nan}


#: what a reduction with ``noop_with_empty_axes`` and no axes still does to each element
_NOOP = {"ReduceSumSquare": lambda x: _op.multiply(x, x), "ReduceL1": _op.abs, "ReduceL2": _op.abs,
         "ReduceLogSum": _op.log}


def _plain(fn):
    return lambda x, axes, keep, imp: fn(x, axis=axes, keepdims=keep)


def _sum_square(x, axes, keep, imp):
    return _op.sum(_op.multiply(x, x), axis=axes, keepdims=keep)


def _l1(x, axes, keep, imp):
    return _op.sum(_op.abs(x), axis=axes, keepdims=keep)


def _l2(x, axes, keep, imp):
    return _op.sqrt(_op.sum(_op.multiply(x, x), axis=axes, keepdims=keep))


def _log_sum(x, axes, keep, imp):
    return _op.log(_op.sum(x, axis=axes, keepdims=keep))


def _log_sum_exp(x, axes, keep, imp):
    """``max + log(sum(exp(x - max)))``: no overflow for large inputs."""
    top = imp.emit(_op.max(x, axis=axes, keepdims=True))
    out = _op.add(_op.log(_op.sum(_op.exp(_op.subtract(x, top)), axis=axes, keepdims=True)), top)
    return out if keep else _op.squeeze(out, axes)


def _arg(fn):
    """ArgMax / ArgMin along ``axis``; ``select_last_index`` picks the last of equal ones
    (the first index of the flipped axis, counted from the end)."""
    def convert(node: OnnxNode, imp: OnnxImporter):
        shape = imp.shape(node, 0)
        axis = int(node.attr("axis", 0)) % len(shape)
        keep = bool(node.attr("keepdims", 1))
        x = imp.tensor(node, 0)
        if not node.attr("select_last_index", 0):
            return imp.emit(fn(x, axis=axis, keepdims=keep))
        first = fn(_op.flip(x, axis), axis=axis, keepdims=keep)
        return imp.emit(_op.subtract(imp.scalar_of(shape[axis] - 1, "int64"), first))
    return convert


CONVERTERS = {
    "ReduceSum": _reduction(_plain(_op.sum), "ReduceSum"),
    "ReduceMean": _reduction(_plain(_op.mean), "ReduceMean"),
    "ReduceMax": _reduction(_plain(_op.max), "ReduceMax"),
    "ReduceMin": _reduction(_plain(_op.min), "ReduceMin"),
    "ReduceProd": _reduction(_plain(_op.prod), "ReduceProd"),
    "ReduceSumSquare": _reduction(_sum_square, "ReduceSumSquare"),
    "ReduceL1": _reduction(_l1, "ReduceL1"),
    "ReduceL2": _reduction(_l2, "ReduceL2"),
    "ReduceLogSum": _reduction(_log_sum, "ReduceLogSum"),
    "ReduceLogSumExp": _reduction(_log_sum_exp, "ReduceLogSumExp"),
    "ArgMax": _arg(_op.argmax),
    "ArgMin": _arg(_op.argmin),
}
