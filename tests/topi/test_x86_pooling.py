"""topi.x86.max_pool2d_separable (rows of the window, then its columns) against torch's max_pool2d."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm import te, tir
from minitvm.topi.x86 import max_pool2d_separable, schedule_max_pool2d_separable, separable_max_pool2d

RNG = np.random.default_rng(60)

# (shape, window, stride, padding (top, left, bottom, right)): ResNet's 3x3 stride 2 (a small
# plane, and one whose rows do not group by 4), 2x2 stride 2, stride 1, a 3x2 window with
# uneven padding, a plane that leaves columns past the last window unread
CASES = [((1, 8, 16, 16), (3, 3), (2, 2), (1, 1, 1, 1)),
         ((2, 5, 14, 18), (3, 3), (2, 2), (1, 1, 1, 1)),
         ((2, 3, 12, 10), (2, 2), (2, 2), (0, 0, 0, 0)),
         ((1, 4, 9, 11), (3, 3), (1, 1), (1, 1, 1, 1)),
         ((1, 3, 13, 15), (3, 2), (2, 3), (1, 0, 0, 1)),
         ((1, 2, 11, 11), (2, 3), (3, 2), (0, 0, 0, 0))]


def _torch_max_pool(x: np.ndarray, window, stride, padding) -> np.ndarray:
    t, left, b, r = padding
    padded = torch.nn.functional.pad(torch.from_numpy(x), (left, r, t, b), value=-np.inf)
    return torch.nn.functional.max_pool2d(padded, window, stride).numpy()


def _build(shape, window, stride, padding, scheduled: bool):
    x = te.placeholder(shape, "float32", name="x")
    func = te.create_prim_func([x, max_pool2d_separable(x, window, stride, padding)])
    if scheduled:
        sch = tir.Schedule(func)
        assert schedule_max_pool2d_separable(sch)
        func = sch.mod["main"]
    return minitvm.tirx.build(minitvm.IRModule({"main": func}), target="llvm")["main"]


@pytest.mark.parametrize("scheduled", [False, True], ids=["plain", "scheduled"])
@pytest.mark.parametrize("shape,window,stride,padding", CASES)
def test_matches_torch(shape, window, stride, padding, scheduled):
    x = RNG.standard_normal(shape).astype("float32")
    want = _torch_max_pool(x, window, stride, padding)
    out = minitvm.nd.empty(want.shape, "float32")
    _build(shape, window, stride, padding, scheduled)(minitvm.nd.array(x), out)
    np.testing.assert_array_equal(out.numpy(), want)


def test_a_nan_in_a_window_comes_out_as_torch_s():
    shape = (1, 4, 16, 16)
    x = RNG.standard_normal(shape).astype("float32")
    x[0, 1, 5, 7] = np.nan
    x[0, 3, 0, 0] = np.nan  # (a window at the border: the padding's lowest value is not a NaN)
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, 2, 1).numpy()
    out = minitvm.nd.empty(want.shape, "float32")
    _build(shape, (3, 3), (2, 2), (1, 1, 1, 1), True)(minitvm.nd.array(x), out)
    np.testing.assert_array_equal(np.isnan(out.numpy()), np.isnan(want))
    np.testing.assert_array_equal(out.numpy(), want)


def test_the_schedule_groups_rows_on_threads_and_reads_the_rows_once():
    x = te.placeholder((1, 64, 112, 112), "float32", name="x")
    sch = tir.Schedule(te.create_prim_func([x, max_pool2d_separable(x, (3, 3), (2, 2), (1, 1, 1, 1))]))
    assert schedule_max_pool2d_separable(sch)
    text = sch.mod["main"].script()
    assert "T.parallel(896)" in text  # 64 channels x 14 groups of 4 output rows
    assert 'sblock("pad_temp")' not in text  # (read in place)
    assert text.count("T.vectorized(") == 2


def test_other_functions_are_left_to_the_other_rules():
    x = te.placeholder((1, 4, 8, 8), "float32", name="x")
    y = te.compute((1, 4, 8, 8), lambda *i: x[i] + 1.0, name="pool_rows")
    assert not schedule_max_pool2d_separable(tir.Schedule(te.create_prim_func([x, y])))


@pytest.mark.parametrize("change,applies", [
    ({}, True), ({"ceil_mode": True}, False), ({"dilation": (2, 2)}, False), ({"layout": "NHWC", "out_layout": "NHWC"},
                                                                               False),
    ({"out_layout": "NHWC"}, False), ({"pool_size": (1, 3)}, False), ({"dtype": "int32"}, False),
    ({"pool_size": (2, 2), "strides": (1, 1)}, True), ({"pool_size": (2, 2), "strides": (2, 2)}, False),
    ({"data_shape": (1, 4, None, 8)}, False)])
def test_which_max_pools_it_computes(change, applies):
    a = {"data_shape": (1, 4, 8, 8), "dtype": "float32", "pool_size": (3, 3), "strides": (2, 2),
         "padding": (1, 1, 1, 1), "dilation": (1, 1), "ceil_mode": False, "layout": "NCHW", "out_layout": "NCHW"}
    a.update(change)
    assert separable_max_pool2d(**a) is applies
