"""minitvm.topi.testing (TVM's tvm.topi.testing): the numpy references TVM's own tests compare
against, each checked against torch (or plain numpy indexing) on seeded random data."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitvm.topi import testing as ref

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def test_softmax_and_log_softmax_match_torch():
    x = _r(3, 5, 4)
    np.testing.assert_allclose(ref.softmax_python(x), F.softmax(_t(x), 1).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ref.log_softmax_python(x, -1), F.log_softmax(_t(x), -1).numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("stride, padding, groups, torch_pad", [
    (1, 0, 1, (0, 0, 0, 0)), (2, 1, 2, (1, 1, 1, 1)), ((1, 2), "SAME", 1, (1, 1, 1, 1)),
    (1, (0, 1, 2, 1), 1, (1, 1, 0, 2)),  # TVM's 4-tuple is (top, left, bottom, right)
])
def test_conv2d_nchw_and_nhwc_match_torch(stride, padding, groups, torch_pad):
    x, w = _r(2, 4, 7, 6), _r(6, 4 // groups, 3, 3)
    want = F.conv2d(F.pad(_t(x), torch_pad), _t(w), stride=stride, groups=groups).numpy()
    got = ref.conv2d_nchw_python(x, w, stride, padding, groups)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    got = ref.conv2d_nhwc_python(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), stride, padding, groups)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_depthwise_conv2d_matches_torch():
    x, w = _r(1, 3, 6, 6), _r(3, 2, 3, 3)  # channel multiplier 2
    want = F.conv2d(_t(x), _t(w.reshape(6, 1, 3, 3)), padding=1, groups=3).numpy()
    np.testing.assert_allclose(ref.depthwise_conv2d_python_nchw(x, w, 1, "SAME"), want, rtol=1e-4, atol=1e-4)
    got = ref.depthwise_conv2d_python_nhwc(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 0, 1), 1, "SAME")
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_batch_matmul_and_dense_match_torch():
    x, y = _r(3, 4, 5), _r(1, 6, 5)  # y's batch of 1 broadcasts
    np.testing.assert_allclose(ref.batch_matmul(x, y), (_t(x) @ _t(y).transpose(1, 2)).numpy(), rtol=1e-5)
    yt = _r(3, 5, 6)
    np.testing.assert_allclose(ref.batch_matmul(x, yt, trans_y=False), (_t(x) @ _t(yt)).numpy(), rtol=1e-5)
    a, w, b = _r(4, 5), _r(3, 5), _r(3)
    got = ref.dense(a, w, b, use_bias=True, use_relu=True)
    np.testing.assert_allclose(got, F.relu(F.linear(_t(a), _t(w), _t(b))).numpy(), rtol=1e-5, atol=1e-6)


def test_norms_match_torch():
    x, g, b = _r(2, 6, 5), _r(5), _r(5)
    want = F.layer_norm(_t(x), (5,), _t(g), _t(b)).numpy()
    np.testing.assert_allclose(ref.layer_norm_python(x, g, b, -1), want, rtol=1e-4, atol=1e-5)
    gc, bc = _r(6), _r(6)
    want = F.group_norm(_t(x), 3, _t(gc), _t(bc)).numpy()
    got = ref.group_norm_python(x, gc, bc, num_groups=3, channel_axis=1, axes=[2])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    want = F.instance_norm(_t(x), weight=_t(gc), bias=_t(bc)).numpy()
    got = ref.instance_norm_python(x, gc.reshape(6, 1), bc.reshape(6, 1), axis=(2,))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    want = F.rms_norm(_t(x), (5,), _t(g), eps=1e-5).numpy()
    np.testing.assert_allclose(ref.rms_norm_python(x, g, -1), want, rtol=1e-4, atol=1e-5)


def test_indexing_references():
    x = _r(5, 6, 7)
    np.testing.assert_array_equal(ref.strided_slice_python(x, [1, -1], [4, 0], [2, -2]), x[1:4:2, -1:0:-2])
    np.testing.assert_array_equal(ref.strided_slice_python(x, [1], [-1], None, axes=[2]), x[:, :, 1:-1])
    np.testing.assert_array_equal(ref.strided_slice_python(x, [1, 2], [2, -1], [9, 9], slice_mode="size"),
                                  x[1:3, 2:])
    v = _r(2, 6, 7)
    want = x.copy()
    want[0:4:2] = v
    np.testing.assert_array_equal(ref.strided_set_python(x, v, [0], [4], [2]), want)
    idx = RNG.integers(0, 6, (5, 3, 7))
    np.testing.assert_array_equal(ref.gather_python(x, 1, idx), torch.gather(_t(x), 1, _t(idx)).numpy())
    nd = RNG.integers(0, 5, (2, 4))
    np.testing.assert_array_equal(ref.gather_nd_python(x, nd), np.stack([x[i, j] for i, j in nd.T]))
    labels = RNG.integers(0, 4, (3, 2))
    onehot = F.one_hot(_t(labels), 4).numpy()
    np.testing.assert_array_equal(ref.one_hot(labels, 5.0, -1.0, 4, -1, "float32"), np.where(onehot, 5.0, -1.0))
    np.testing.assert_array_equal(ref.one_hot(labels, 1, 0, 4, 0, "int32"), onehot.transpose(2, 0, 1))


@pytest.mark.parametrize("layout, causal, kv_heads", [
    ("BSNH", "none", 4), ("BNSH", "TopLeft", 2), ("SBNH", "TopLeft", 1)])
def test_attention_matches_torch(layout, causal, kv_heads):
    q, k, v = _r(2, 4, 5, 8), _r(2, kv_heads, 5, 8), _r(2, kv_heads, 5, 8)  # BNSH
    want = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=causal != "none",
                                          enable_gqa=True).numpy()
    perm = [layout.find(c) for c in "BNSH"]
    inv = list(np.argsort(perm))
    got = ref.attention_python(q.transpose(inv), k.transpose(inv), v.transpose(inv), None, "none",
                               causal, layout=layout)
    np.testing.assert_allclose(got.transpose(perm), want, rtol=1e-4, atol=1e-5)


def test_affine_grid_matches_torch():
    theta = _r(2, 2, 3)
    want = F.affine_grid(_t(theta), [2, 1, 4, 5], align_corners=True).numpy()  # [N, H, W, 2]
    got = ref.affine_grid_python(theta, (4, 5))
    np.testing.assert_allclose(got, want.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)


def _boxes():
    # rows: class id, score, x1, y1, x2, y2; boxes 0/2 overlap heavily, 3 is class -1
    return np.array([[[0, 0.9, 0, 0, 10, 10], [1, 0.8, 0, 0, 10, 10], [0, 0.7, 1, 1, 10, 11],
                      [-1, 0.95, 0, 0, 2, 2], [0, 0.05, 20, 20, 30, 30], [0, 0.6, 20, 20, 30, 31]]],
                    dtype="float32")


def test_get_valid_counts_and_nms():
    data = _boxes()
    count, valid, where = ref.get_valid_counts_python(data, score_threshold=0.1)
    assert count.tolist() == [4]
    assert where.tolist() == [[0, 1, 2, 5, -1, -1]]
    np.testing.assert_array_equal(valid[0, :4], data[0, [0, 1, 2, 5]])
    assert (valid[0, 4:] == -1).all()
    kept, n = ref.non_max_suppression_python(valid, count, where, iou_threshold=0.5)
    # 2 overlaps 0 (same class) and goes; 1 is another class, 5 is far away
    assert n.tolist() == [[3]] and kept.tolist() == [[0, 1, 5, -1, -1, -1]]
    kept, n = ref.non_max_suppression_python(valid, count, where, force_suppress=True, max_output_size=1)
    assert n.tolist() == [[1]] and kept.tolist()[0][:2] == [0, -1]
    out = ref.non_max_suppression_python(valid, count, where, return_indices=False, invalid_to_bottom=True)
    np.testing.assert_array_equal(out[0, :3], data[0, [0, 1, 5]])


def test_soft_nms_decays_overlapping_scores():
    data = _boxes()
    count, valid, where = ref.get_valid_counts_python(data, score_threshold=0.1)
    out, kept, n = ref.non_max_suppression_python(valid, count, where, iou_threshold=0.95,
                                                  soft_nms_sigma=0.5, score_threshold=0.1)
    assert n.tolist() == [[4]] and kept.tolist()[0][:4] == [0, 1, 5, 2]
    iou = (9 * 9) / (100 + 90 - 81)
    np.testing.assert_allclose(out[0, 3, 1], 0.7 * np.exp(-iou**2 / (2 * 0.5)), rtol=1e-5)


@pytest.mark.parametrize("pool_type, ceil_mode, include_pad", [
    ("max", False, False), ("avg", False, True), ("avg", True, False)])
def test_poolnd_matches_torch(pool_type, ceil_mode, include_pad):
    x = _r(2, 3, 7, 8)
    got = ref.poolnd_python(x, (3, 2), (2, 2), (1, 1), (1, 1), (1, 1), pool_type,
                            count_include_pad=include_pad, ceil_mode=ceil_mode)
    if pool_type == "max":
        want = F.max_pool2d(_t(x), (3, 2), 2, 1, ceil_mode=ceil_mode)
    else:
        want = F.avg_pool2d(_t(x), (3, 2), 2, 1, ceil_mode=ceil_mode, count_include_pad=include_pad)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
    nhwc = ref.poolnd_python(x.transpose(0, 2, 3, 1), (3, 2), (2, 2), (1, 1), (1, 1), (1, 1), pool_type,
                             count_include_pad=include_pad, ceil_mode=ceil_mode, layout="NHWC")
    np.testing.assert_allclose(nhwc, want.numpy().transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_dilated_max_pool_and_adaptive_pool_match_torch():
    x = _r(1, 2, 9, 9)
    got = ref.poolnd_python(x, (2, 2), (1, 1), (2, 3), (0, 0), (0, 0), "max")
    np.testing.assert_allclose(got, F.max_pool2d(_t(x), 2, 1, dilation=(2, 3)).numpy())
    np.testing.assert_allclose(ref.adaptive_pool(x, (4, 3), "avg", "NCHW"),
                               F.adaptive_avg_pool2d(_t(x), (4, 3)).numpy(), rtol=1e-5, atol=1e-6)
    got = ref.adaptive_pool(x.transpose(0, 2, 3, 1), (4, 3), "max", "NHWC")
    np.testing.assert_allclose(got, F.adaptive_max_pool2d(_t(x), (4, 3)).numpy().transpose(0, 2, 3, 1))


def test_batch_norm_l2_normalize_and_nll_loss_match_torch():
    x, g, b, mean, var = _r(4, 3, 5), _r(3), _r(3), _r(3), np.abs(_r(3)) + 0.5
    for training in (False, True):
        tm, tv = _t(mean.copy()), _t(var.copy())
        want = F.batch_norm(_t(x), tm, tv, _t(g), _t(b), training=training, momentum=0.1, eps=1e-5)
        out, new_mean, _ = ref.batch_norm(x, g, b, mean, var, 1, 1e-5, True, True, training, 0.1)
        np.testing.assert_allclose(out, want.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(new_mean, tm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ref.l2_normalize_python(x, 1e-12, axis=[1]),
                               F.normalize(_t(x), dim=1).numpy(), rtol=1e-5, atol=1e-6)
    logp, w = F.log_softmax(_t(_r(4, 5, 3)), 1).numpy(), np.abs(_r(5))
    target = RNG.integers(0, 5, (4, 3))
    target[0, 0] = -100
    for reduction in ("mean", "sum", "none"):
        want = F.nll_loss(_t(logp), _t(target), _t(w), reduction=reduction).numpy()
        np.testing.assert_allclose(ref.nll_loss(logp, target, w, reduction), want, rtol=1e-5, atol=1e-6)


def test_layout_shuffles_dilate_and_searchsorted():
    x = _r(2, 8, 3, 3)
    np.testing.assert_array_equal(ref.depth_to_space_python(x, 2, "CRD"), F.pixel_shuffle(_t(x), 2).numpy())
    np.testing.assert_array_equal(ref.space_to_depth_python(ref.depth_to_space_python(x, 2), 2), x)
    d = ref.dilate_python(x[0, 0], (2, 3), dilation_value=-1.0)
    assert d.shape == (5, 7) and (d[::2, ::3] == x[0, 0]).all() and (d[1::2] == -1).all()
    seq, vals = np.sort(_r(3, 6), axis=-1), _r(3, 4)
    for right in (False, True):
        want = torch.searchsorted(_t(seq), _t(vals), right=right).numpy()
        np.testing.assert_array_equal(ref.searchsorted_ref(seq, vals, right, "int64"), want)
