"""ONNX operators whose output size depends on the data: ``NonZero``, ``Unique``, ``Compress``,
``NonMaxSuppression``.

The Relax op's result has a known rank but unknown sizes; as TVM's importer does, each result is
``match_cast`` to a shape with a fresh tir variable for the data-dependent size (``nonzero_numbers``,
``unique_numbers``, ``num_nonzero``), so later operators see a shape they can compute with."""

from __future__ import annotations

import numpy as np

from ....tir.expr import Var as TirVar
from ... import op as _op
from ...expr import TupleGetItem, const
from ...struct_info import TensorStructInfo
from .importer import OnnxImporter, OnnxNode


def non_zero(node: OnnxNode, imp: OnnxImporter):
    """One int64 row per input dimension (a scalar counts as one), one column per nonzero element."""
    rank = max(len(imp.shape(node, 0)), 1)
    count = TirVar("nonzero_numbers", "int64")
    return imp.bb.match_cast(_op.nonzero(imp.tensor(node, 0)), TensorStructInfo([rank, count], "int64"))


def unique(node: OnnxNode, imp: OnnxImporter):
    """The unique values (of the flattened input, or slices along ``axis``), then as many of the
    first-appearance indices, inverse indices and counts as the node has outputs."""
    x = imp.tensor(node, 0)
    in_shape = imp.shape(node, 0)
    axis = node.attr("axis")
    n_out = len(node.outputs)
    count = TirVar("unique_numbers", "int64")
    if axis is None:
        values_shape = [count]
    else:
        if not -len(in_shape) <= axis < len(in_shape):
            raise node.error(f"axis {axis} is out of range for a rank-{len(in_shape)} input")
        axis = axis % len(in_shape)
        values_shape = [count if i == axis else d for i, d in enumerate(in_shape)]
    call = _op.unique(x, sorted=bool(node.attr("sorted", 1)), return_index=n_out > 1, return_inverse=n_out > 2,
                      return_counts=n_out > 3, axis=axis)
    dtype = imp.dtype(node, 0)
    if n_out == 1:
        return imp.bb.match_cast(call, TensorStructInfo(values_shape, dtype))
    result = imp.emit(call)
    inverse_len = in_shape[axis] if axis is not None else _numel(in_shape)
    shapes = [values_shape, [count], [inverse_len], [count]]
    return [imp.bb.match_cast(TupleGetItem(result, k), TensorStructInfo(shapes[k], dtype if k == 0 else "int64"))
            for k in range(n_out)]


def _numel(shape: list):
    out = 1
    for d in shape:
        out = out * d
    return out


def compress(node: OnnxNode, imp: OnnxImporter):
    """The slices along ``axis`` (of the flattened input without one) where the 1-D boolean
    ``condition`` holds; a condition shorter than the axis leaves the rest out."""
    cond_shape = imp.shape(node, 1)
    if imp.dtype(node, 1) != "bool" or len(cond_shape) != 1:
        raise node.error(f"the condition must be a 1-D bool tensor, got {imp.dtype(node, 1)} of rank "
                         f"{len(cond_shape)}")
    count = TirVar("num_nonzero", "int64")
    where = imp.bb.match_cast(_op.nonzero(imp.tensor(node, 1)), TensorStructInfo([1, count], "int64"))
    indices = imp.emit(_op.reshape(where, [count]))
    x = imp.tensor(node, 0)
    axis = node.attr("axis")
    if axis is None:
        return _op.take(_op.reshape(x, [_numel(imp.shape(node, 0))]), indices, axis=0)
    return _op.take(x, indices, axis=int(axis))


CONVERTERS = {"NonZero": non_zero, "Unique": unique, "Compress": compress}


def _scalar_or(node: OnnxNode, imp: OnnxImporter, k: int, default: float, dtype: str):
    """Optional scalar input ``k`` as a Relax value (its default when absent)."""
    return imp.tensor(node, k) if node.has_input(k) else imp.scalar_of(default, dtype)


def non_max_suppression(node: OnnxNode, imp: OnnxImporter):
    """``[batch, class, box]`` rows of the boxes kept, per class by falling score (TVM's
    all_class_non_max_suppression, its padded rows cut to the count at run time); centre-size
    boxes (``center_point_box``) become corners first."""
    boxes = imp.tensor(node, 0)
    if node.attr("center_point_box", 0):
        dtype = imp.dtype(node, 0)
        half = imp.scalar_of(0.5, dtype)
        centre = _op.strided_slice(boxes, [2], [0], [2])
        size = _op.multiply(_op.strided_slice(boxes, [2], [2], [4]), half)
        # (x, y) corners: the overlap test treats the two coordinates alike, so the order is free
        boxes = imp.emit(_op.concat([_op.subtract(centre, size), _op.add(centre, size)], axis=2))
    nms = imp.emit(_op.vision.all_class_non_max_suppression(
        boxes, imp.tensor(node, 1), _scalar_or(node, imp, 2, 0, "int64"), _scalar_or(node, imp, 3, 0.0, "float32"),
        _scalar_or(node, imp, 4, -np.inf, "float32")))
    count = imp.emit(TupleGetItem(nms, 1))
    end = imp.emit(_op.concat([count, const(np.array([3], "int64"))], axis=0))
    rows = _op.dynamic_strided_slice(TupleGetItem(nms, 0), const(np.zeros(2, "int64")), end,
                                     const(np.ones(2, "int64")))
    return imp.bb.match_cast(rows, TensorStructInfo([TirVar("num_selected", "int64"), 3], "int64"))


CONVERTERS["NonMaxSuppression"] = non_max_suppression
