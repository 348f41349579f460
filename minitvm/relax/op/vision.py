"""``relax.op.vision.all_class_non_max_suppression`` (TVM's name): per-class greedy non-maximum
suppression as ONNX's NonMaxSuppression defines it.

How many boxes survive depends on the data, so, like ``relax.unique``, the op is not legalized:
it names a packed function (``FCallPacked``: ``relax.run.all_class_non_max_suppression``) that
the VM calls on whole tensors, computed with numpy.  Its result has TVM's "onnx" layout: a
``(batch * classes * boxes, 3)`` int64 matrix of ``[batch, class, box]`` rows, the selected ones
first (batch 0 class 0 by falling score, then class 1 ...) and zeros after, and a ``(1,)``
count of the selected rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.op import Op
from ...runtime.ndarray import NDArray, array
from ...runtime.registry import register_func
from ..expr import Call, Expr, StringImm
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, TupleStructInfo
from .registry import OpPattern, make_call, register, tensor_arg

__all__ = ["all_class_non_max_suppression"]

_OP = "relax.vision.all_class_non_max_suppression"


@register(_OP, pattern=OpPattern.OPAQUE, num_inputs=6)
def _infer_nms(call: Call, ctx: Any) -> StructInfo:
    """(batch * classes * boxes, 3) int64 indices and a (1,) int64 count."""
    boxes = tensor_arg(call, 0, _OP, "boxes")
    scores = tensor_arg(call, 1, _OP, "scores")
    if boxes.ndim not in (-1, 3) or scores.ndim not in (-1, 3):
        raise StructInfoError(f"{_OP}: boxes (batch, boxes, 4) and scores (batch, classes, boxes) must be 3-D, "
                              f"got ranks {boxes.ndim} and {scores.ndim}")
    fmt = call.args[5].value if isinstance(call.args[5], StringImm) else None
    if fmt != "onnx":
        raise StructInfoError(f"{_OP}: output_format {fmt!r} is not supported (only \"onnx\")")
    rows = None
    if boxes.shape_values is not None and scores.shape_values is not None:
        b, c, n = scores.shape_values
        rows = b * c * n
    indices = TensorStructInfo([rows, 3] if rows is not None else None, "int64", boxes.vdevice, 2)
    return TupleStructInfo([indices, TensorStructInfo([1], "int64", boxes.vdevice)])


def all_class_non_max_suppression(boxes: Expr, scores: Expr, max_output_boxes_per_class: Expr,
                                  iou_threshold: Expr, score_threshold: Expr, output_format: str = "onnx") -> Call:
    """Greedy non-maximum suppression of ``boxes`` (batch, boxes, 4: two opposite corners, y
    then x) for each class of ``scores`` (batch, classes, boxes): boxes scoring above
    ``score_threshold`` are taken by falling score, at most ``max_output_boxes_per_class`` of
    them, each dropping the later ones that overlap it by an IoU above ``iou_threshold``."""
    return make_call(_OP, boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold,
                     StringImm(output_format))


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    lo = np.maximum(np.minimum(box[:2], box[2:]), np.minimum(others[:, :2], others[:, 2:]))
    hi = np.minimum(np.maximum(box[:2], box[2:]), np.maximum(others[:, :2], others[:, 2:]))
    inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
    area = np.prod(np.abs(box[2:] - box[:2]))
    areas = np.prod(np.abs(others[:, 2:] - others[:, :2]), axis=1)
    union = area + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def _select(boxes: np.ndarray, scores: np.ndarray, limit: int, iou_max: float, score_min: float) -> list[int]:
    order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > score_min]
    kept: list[int] = []
    while order and len(kept) < limit:
        best = order.pop(0)
        kept.append(best)
        if order:
            overlap = _iou(boxes[best], boxes[order])
            order = [i for i, o in zip(order, overlap) if o <= iou_max]
    return kept


def run_all_class_non_max_suppression(boxes: NDArray, scores: NDArray, max_output: NDArray, iou: NDArray,
                                      score: NDArray, output_format: Any = "onnx") -> tuple:
    """The op at run time: the padded indices and the count (TVM's "onnx" layout)."""
    b_arr, s_arr = boxes.numpy().astype("float64"), scores.numpy()
    limit = int(np.asarray(max_output.numpy()).reshape(-1)[0])
    iou_max = float(np.asarray(iou.numpy()).reshape(-1)[0])
    score_min = float(np.asarray(score.numpy()).reshape(-1)[0])
    batch, classes, n = s_arr.shape
    rows = [[b, c, i] for b in range(batch) for c in range(classes)
            for i in _select(b_arr[b], s_arr[b, c], limit, iou_max, score_min)]
    out = np.zeros([batch * classes * n, 3], "int64")
    if rows:
        out[:len(rows)] = rows
    return array(out), array(np.array([len(rows)], "int64"))


Op.get(_OP).set_attr("FCallPacked", "relax.run.all_class_non_max_suppression")
# override: re-importing the module (autoreload) registers the same function again
register_func("relax.run.all_class_non_max_suppression", run_all_class_non_max_suppression, override=True)
