"""ONNX operators whose output size depends on the data (NonZero, Unique, Compress,
NonMaxSuppression): the size is a fresh tir variable bound at run time, as TVM's importer does;
results against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from minitvm.relax.frontend.onnx import from_onnx

from ._check import check, check_node, init, model_of

F = "float32"


def test_nonzero_counts_at_run_time():
    mod = from_onnx(model_of([helper.make_node("NonZero", ["x"], ["y"])], {"x": ("bool", [3, 4])},
                             {"y": ("int64", [2, -1])}))
    rows, count = mod["main"].body.body.struct_info.shape_values
    assert int(rows) == 2 and count.name == "nonzero_numbers"
    check_node("NonZero", {"x": ("bool", [3, 4])}, {"y": ("int64", [2, -1])})


@pytest.mark.parametrize("axis, sorted_, n_out", [(None, 1, 4), (None, 0, 3), (0, 1, 2), (1, 0, 4)])
def test_unique(axis, sorted_, n_out):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 3, size=[6, 4]).astype(F)  # repeats, so the counts are not all one
    x[3] = x[1]  # a repeated row, for unique along axis 0
    names = ["y", "indices", "inverse", "counts"][:n_out]
    outs = {n: (F if n == "y" else "int64", [-1]) for n in names}
    outs["y"] = (F, [-1] if axis is None else [-1, 4] if axis == 0 else [6, -1])
    attrs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    check(model_of([helper.make_node("Unique", ["x"], names, **attrs)], {"x": (F, [6, 4])}, outs, opset=11),
          inputs={"x": x})


@pytest.mark.parametrize("axis, cond_len", [(None, 7), (0, 3), (1, 5)])
def test_compress(axis, cond_len):
    cond = np.array([True, False, True, True, False, True, False][:cond_len])
    x = np.random.default_rng(1).standard_normal([3, 5]).astype(F)
    attrs = {} if axis is None else {"axis": axis}
    check(model_of([helper.make_node("Compress", ["x", "c"], ["y"], **attrs)],
                   {"x": (F, [3, 5]), "c": ("bool", [cond_len])}, {"y": (F, [-1])}, opset=11),
          inputs={"x": x, "c": cond})


def test_compress_refuses_a_condition_that_is_not_boolean():
    model = model_of([helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
                     {"x": (F, [3, 5]), "c": ("int64", [3])}, {"y": (F, [-1])}, opset=11)
    with pytest.raises(ValueError, match="Compress node .*condition must be a 1-D bool tensor"):
        from_onnx(model)



@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_against_onnxruntime(center):
    rng = np.random.default_rng(4)
    corners = rng.uniform(0, 2, [2, 12, 2])  # crowded: many overlaps to suppress
    boxes = np.concatenate([corners, corners + rng.uniform(0.5, 2, [2, 12, 2])], axis=2).astype(F)
    scores = rng.uniform(0, 1, [2, 3, 12]).astype(F)
    inits = [init("max", np.array([8], "int64")), init("iou", np.array([0.3], F)), init("score", np.array([0.2], F))]
    model = model_of([helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "score"], ["sel"],
                                       center_point_box=center)],
                     {"boxes": (F, [2, 12, 4]), "scores": (F, [2, 3, 12])}, {"sel": ("int64", [-1, 3])}, inits,
                     opset=11)
    want = check(model, inputs={"boxes": boxes, "scores": scores})[0]
    assert 6 < len(want) < 2 * 3 * 8  # some kept, some suppressed


def test_non_max_suppression_without_limits_keeps_nothing():
    # ONNX's default max_output_boxes_per_class is 0
    model = model_of([helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"])],
                     {"boxes": (F, [1, 3, 4]), "scores": (F, [1, 1, 3])}, {"sel": ("int64", [-1, 3])}, opset=11)
    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 1.1], [2, 2, 3, 3]]], F)
    assert check(model, inputs={"boxes": boxes, "scores": np.ones([1, 1, 3], F)})[0].shape == (0, 3)
