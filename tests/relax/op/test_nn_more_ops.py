"""leakyrelu, prelu, rms_norm, layer_norm, the losses and N-d convolution: struct info,
errors, and legalized kernels against numpy / torch on random data."""

import numpy as np
import pytest
import torch

from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.struct_info import StructInfoError

from ._run import rand, run_op


def _sinfo(call):
    bb = relax.BlockBuilder()
    with bb.function("f", [a for a in call.args if isinstance(a, relax.Var)]):
        out = bb.emit(call)
        bb.emit_func_output(out)
    return out.struct_info


def v(shape, dtype="float32", name="x"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def test_leakyrelu_and_prelu_match_torch():
    rng = np.random.default_rng(1)
    x = rand(rng, 2, 3, 4)
    got = run_op(lambda a: R.nn.leakyrelu(a, 0.2), x)
    np.testing.assert_allclose(got, torch.nn.functional.leaky_relu(torch.tensor(x), 0.2).numpy(), rtol=1e-6)
    slope = rand(rng, 3, low=0.0, high=1.0)
    got = run_op(lambda a, s: R.nn.prelu(a, s, axis=1), x, slope)
    np.testing.assert_allclose(got, torch.nn.functional.prelu(torch.tensor(x), torch.tensor(slope)).numpy(), rtol=1e-6)
    one = rand(rng, 1, low=0.0, high=1.0)  # a single slope is shared by every channel
    got = run_op(lambda a, s: R.nn.prelu(a, s), x, one)
    np.testing.assert_allclose(got, np.where(x > 0, x, x * one[0]), rtol=1e-6)


def test_prelu_refuses_a_slope_count_that_is_not_the_channels():
    with pytest.raises(StructInfoError, match="alpha has 4 slopes but axis 1 of the data has 3 channels"):
        _sinfo(R.nn.prelu(v((2, 3)), v((4,), name="a")))


def test_rms_norm_and_layer_norm_match_numpy():
    rng = np.random.default_rng(2)
    x, w, b = rand(rng, 2, 3, 4, 5), rand(rng, 4, 5), rand(rng, 4, 5)
    got = run_op(lambda a, g: R.nn.rms_norm(a, g, axes=[-2, -1], epsilon=1e-5), x, w)
    want = x / np.sqrt((x * x).mean(axis=(2, 3), keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    got = run_op(lambda a, g, c: R.nn.layer_norm(a, g, c, axes=[-2, -1]), x, w, b)
    mean, var = x.mean(axis=(2, 3), keepdims=True), x.var(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5) * w + b, rtol=1e-4, atol=1e-5)


def test_rms_norm_weight_must_have_the_normalized_shape():
    with pytest.raises(StructInfoError,
                       match=r"weight has shape \(3,\) but normalizing axes \[1\] of the data needs \(4,\)"):
        _sinfo(R.nn.rms_norm(v((2, 4)), v((3,), name="w")))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_matches_torch(reduction):
    rng = np.random.default_rng(3)
    pred = rand(rng, 4, 5, 3)
    target = rng.integers(0, 5, size=(4, 3)).astype("int64")
    target[0, 0] = -1  # ignored
    weights = rand(rng, 5, low=0.5, high=2.0)
    got = run_op(lambda p, t, w: R.nn.nll_loss(p, t, w, reduction=reduction, ignore_index=-1), pred, target, weights)
    want = torch.nn.functional.nll_loss(torch.tensor(pred), torch.tensor(target), torch.tensor(weights),
                                        reduction=reduction, ignore_index=-1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nll_loss_without_weights_and_cross_entropy():
    rng = np.random.default_rng(4)
    pred, target = rand(rng, 6, 4), rng.integers(0, 4, size=(6,)).astype("int64")
    got = run_op(lambda p, t: R.nn.nll_loss(p, t), pred, target)
    np.testing.assert_allclose(got, -pred[np.arange(6), target].mean(), rtol=1e-5)
    x, y = rand(rng, 3, 4), rand(rng, 3, 4)
    got = run_op(lambda a, b: R.nn.cross_entropy_with_logits(a, b), x, y)
    np.testing.assert_allclose(got, -(x * y).sum() / 3, rtol=1e-5)


def test_nll_loss_checks_its_arguments():
    with pytest.raises(StructInfoError, match="targets must be integer class indices"):
        _sinfo(R.nn.nll_loss(v((2, 3)), v((2,), name="t")))
    with pytest.raises(ValueError, match="reduction must be one of mean, sum, none"):
        R.nn.nll_loss(v((2, 3)), v((2,), "int64", name="t"), reduction="avg")


def test_conv1d_matches_torch():
    rng = np.random.default_rng(5)
    x, w = rand(rng, 2, 4, 11), rand(rng, 6, 2, 3)
    got = run_op(lambda a, k: R.nn.conv1d(a, k, strides=2, padding=(1, 2), dilation=1, groups=2), x, w)
    want = torch.nn.functional.conv1d(torch.nn.functional.pad(torch.tensor(x), (1, 2)), torch.tensor(w),
                                      stride=2, groups=2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_nhwc_with_hwio_kernel_matches_torch():
    rng = np.random.default_rng(6)
    x, w = rand(rng, 1, 7, 8, 3), rand(rng, 3, 3, 3, 4)
    got = run_op(lambda a, k: R.nn.conv2d(a, k, padding=1, data_layout="NHWC", kernel_layout="HWIO"), x, w)
    want = torch.nn.functional.conv2d(torch.tensor(x).permute(0, 3, 1, 2), torch.tensor(w).permute(3, 2, 0, 1),
                                      padding=1).permute(0, 2, 3, 1).numpy()
    assert got.shape == (1, 7, 8, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_layouts_are_checked():
    # as TVM: a layout must convert to NC<spatial> (OI<spatial> for the kernel), else a TVMError
    with pytest.raises(StructInfoError, match=r"relax.nn.conv1d: the data layout 'NCHW' cannot be converted to 'NCW'"):
        _sinfo(R.nn.conv1d(v((1, 2, 5)), v((3, 2, 1), name="w"), data_layout="NCHW"))
    with pytest.raises(StructInfoError, match="output layout 'OWI'"):
        _sinfo(R.nn.conv1d(v((1, 2, 5)), v((3, 2, 1), name="w"), out_layout="OWI"))
    with pytest.raises(StructInfoError, match="data has 3 dimensions but its layout 'NCW16c' has 4"):
        _sinfo(R.nn.conv1d(v((1, 2, 5)), v((3, 2, 1), name="w"), data_layout="NCW16c"))


def test_conv_groups_channels_and_attrs_are_checked_as_tvm():
    from minitvm import TVMError, tir
    with pytest.raises(TVMError, match="groups must be positive"):
        R.nn.conv2d(v((1, 4, 5, 5)), v((4, 4, 1, 1), name="w"), groups=0)
    with pytest.raises(TVMError, match="strides must have 1 value"):
        R.nn.conv1d(v((1, 4, 5)), v((4, 4, 1), name="w"), strides=(1, 2))
    with pytest.raises(TypeError, match="different dtypes float32 and int8"):
        _sinfo(R.nn.conv1d(v((1, 4, 5)), v((4, 4, 1), "int8", name="w")))
    ic = tir.Var("ic", "int64")
    # symbolic channels TVM's analyzer proves unequal are refused too
    with pytest.raises(StructInfoError, match=r"data \(2, ic, 8\) has ic channels but weight \(4, ic \+ 2, 3\) "
                                              r"expects ic \+ 2 per group"):
        _sinfo(R.nn.conv1d(v((2, ic, 8)), v((4, ic + 2, 3), name="w")))
    oc = tir.Var("oc", "int64")
    with pytest.raises(StructInfoError, match=r"oc \* 6 \+ 4 output channels of weight .* do not divide into 6 groups"):
        _sinfo(R.nn.conv1d(v((2, ic * 6, 8)), v((oc * 6 + 4, ic, 3), name="w"), groups=6))
    call = R.nn.conv2d(v((1, 4, 5, 5)), v((4, 4, 1, 1), name="w"), strides=2, padding=(1, 2))
    assert [int(s) for s in call.attrs.strides] == [2, 2] and call.attrs.strides[0].dtype == "int64"
    assert list(call.attrs.padding) == [1, 2, 1, 2]


def test_conv_struct_info_for_other_layouts_and_symbolic_sizes():
    from minitvm import tir
    # a blocked output layout, an out_layout other than the data's, and TVM's symbolic forms
    sinfo = _sinfo(R.nn.conv1d(v((2, 4, 28, 16)), v((48, 4, 3, 16), name="w"), data_layout="NCW16c",
                               kernel_layout="OIW16i", out_layout="NWC16c"))
    assert [int(d) for d in sinfo.shape.values] == [2, 26, 3, 16]
    sinfo = _sinfo(R.nn.conv2d_transpose(v((2, 3, 28, 28)), v((3, 4, 3, 3), name="w"), out_layout="NHWC",
                                         dilation=2))
    assert [int(d) for d in sinfo.shape.values] == [2, 32, 32, 4]
    iw, kw = tir.Var("iw", "int64"), tir.Var("kw", "int64")
    sinfo = _sinfo(R.nn.conv1d(v((1, 2, iw)), v((3, 2, kw), name="w"), strides=2, padding=1, dilation=2))
    assert str(sinfo.shape.values[2]) == str(tir.floordiv(iw + 3, 2) + 1 - kw)


def test_conv_to_another_out_layout_matches_torch():
    rng = np.random.default_rng(11)
    x, w = rand(rng, 1, 3, 7, 6), rand(rng, 4, 3, 3, 3)
    got = run_op(lambda a, k: R.nn.conv2d(a, k, padding=1, out_layout="NHWC"), x, w)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_matches_torch():
    rng = np.random.default_rng(7)
    x, w = rand(rng, 2, 4, 5, 6), rand(rng, 4, 3, 3, 3)
    got = run_op(lambda a, k: R.nn.conv2d_transpose(a, k, strides=(2, 3), padding=(1, 1), output_padding=(1, 2),
                                                    groups=2), x, w)
    want = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=(2, 3), padding=(1, 1),
                                                output_padding=(1, 2), groups=2).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    x1, w1 = rand(rng, 1, 3, 7), rand(rng, 3, 2, 4)
    got = run_op(lambda a, k: R.nn.conv1d_transpose(a, k, strides=2, padding=1, output_padding=1), x1, w1)
    want = torch.nn.functional.conv_transpose1d(torch.tensor(x1), torch.tensor(w1), stride=2, padding=1,
                                                output_padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dilated_conv_transpose_matches_torch():
    rng = np.random.default_rng(12)
    x, w = rand(rng, 1, 4, 5, 4), rand(rng, 4, 3, 3, 2)
    got = run_op(lambda a, k: R.nn.conv2d_transpose(a, k, strides=2, padding=1, dilation=(2, 3), groups=2), x, w)
    want = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2, padding=1,
                                                dilation=(2, 3), groups=2).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(StructInfoError, match=r"output_padding \[2\] must be smaller than the strides \[2\]"):
        _sinfo(R.nn.conv1d_transpose(v((1, 2, 4)), v((2, 2, 3), name="w"), strides=2, output_padding=2))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_loss_backward_matches_torch_autograd(reduction):
    rng = np.random.default_rng(8)
    pred, weights = rand(rng, 3, 4, 2), rand(rng, 4, low=0.5, high=2.0)
    target = rng.integers(0, 4, size=(3, 2)).astype("int64")
    out_grad = np.array(1.5, "float32")
    got = run_op(lambda g, p, t, w: R.grad.nll_loss_backward(g, p, t, w, reduction=reduction), out_grad, pred,
                 target, weights)
    p = torch.tensor(pred, requires_grad=True)
    loss = torch.nn.functional.nll_loss(p, torch.tensor(target), torch.tensor(weights), reduction=reduction)
    (loss * float(out_grad)).backward()
    np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="reduction must be one of mean, sum, none"):
        R.grad.nll_loss_backward(v(()), v((2, 3)), v((2,), "int64", name="t"), reduction="avg")


def test_batch_norm_in_training_mode_matches_torch():
    # TVM's default: normalize with the batch statistics, update the moving ones
    rng = np.random.default_rng(9)
    x, g, b = rand(rng, 4, 3, 5, 2), rand(rng, 3), rand(rng, 3)
    m, var = rand(rng, 3), rand(rng, 3, low=0.5, high=1.5)
    out, m2, v2 = run_op(lambda *t: R.nn.batch_norm(*t, axis=1, momentum=0.2), x, g, b, m, var)
    tm, tv = torch.tensor(m), torch.tensor(var)  # torch updates these in place
    want = torch.nn.functional.batch_norm(torch.tensor(x), tm, tv, torch.tensor(g), torch.tensor(b),
                                          training=True, momentum=0.2, eps=1e-5).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m2, tm.numpy(), rtol=1e-5)
    # torch updates the moving variance with the unbiased batch variance, TVM with the biased one
    np.testing.assert_allclose(v2, 0.8 * var + 0.2 * x.var(axis=(0, 2, 3)), rtol=1e-5)


def test_group_norm_matches_torch():
    rng = np.random.default_rng(10)
    x, g, b = rand(rng, 2, 6, 4, 3), rand(rng, 6), rand(rng, 6)
    got = run_op(lambda a, gg, bb: R.nn.group_norm(a, gg, bb, num_groups=3, channel_axis=1, axes=[2, 3]), x, g, b)
    want = torch.nn.functional.group_norm(torch.tensor(x), 3, torch.tensor(g), torch.tensor(b), eps=1e-5).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(StructInfoError, match="6 channels do not divide into 4 groups"):
        _sinfo(R.nn.group_norm(v((2, 6, 4)), v((6,), name="g"), v((6,), name="b"), 4, 1, [2]))


def test_softplus_relu6_and_pixel_shuffle_match_torch():
    rng = np.random.default_rng(13)
    x = rand(rng, 2, 3, 4, low=-30.0, high=30.0)  # past the threshold both ways
    got = run_op(lambda a: R.nn.softplus(a, beta=1.5, threshold=10.0), x)
    want = torch.nn.functional.softplus(torch.tensor(x), beta=1.5, threshold=10.0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert R.nn.relu6(v((2, 3))).op.name == "relax.clip"  # as TVM: relu6 is a clip
    np.testing.assert_allclose(run_op(R.nn.relu6, x * 0.5), np.clip(x * 0.5, 0, 6))
    img = rand(rng, 2, 2, 18, 5, 4)
    got = run_op(lambda a: R.nn.pixel_shuffle(a, 3), img)
    assert got.shape == (2, 2, 2, 15, 12)
    want = torch.nn.functional.pixel_shuffle(torch.tensor(img), 3).numpy()
    np.testing.assert_array_equal(got, want)
    with pytest.raises(StructInfoError, match="10 input channels do not divide by the upscale factor squared"):
        _sinfo(R.nn.pixel_shuffle(v((1, 10, 4, 4)), 3))


def test_norm_and_nll_loss_checks_follow_tvm():
    from minitvm import tir
    n = tir.Var("n", "int64")
    # sizes the analyzer cannot prove equal: the result's shape is left unknown, as TVM's
    sinfo = _sinfo(R.nn.layer_norm(v((2, n)), v((tir.Var("m", "int64"),), name="g"), v((n,), name="b")))
    assert sinfo.shape is None and sinfo.ndim == 2
    with pytest.raises(TypeError, match="requires float data"):
        _sinfo(R.nn.layer_norm(v((2, 3), "int32"), v((3,), "int32", name="g"), v((3,), "int32", name="b")))
    with pytest.raises(TypeError, match="gamma has dtype float16"):
        _sinfo(R.nn.layer_norm(v((2, 3)), v((3,), "float16", name="g"), v((3,), name="b")))
    with pytest.raises(StructInfoError, match=r"gamma has shape \(n \+ 1,\) but data of shape \(2, n\)"):
        _sinfo(R.nn.layer_norm(v((2, n)), v((n + 1,), name="g"), v((n,), name="b")))
    sinfo = _sinfo(R.nn.nll_loss(v((3, 5, 10)), v((3, 10), "int64", name="t"), reduction="none"))
    assert [int(d) for d in sinfo.shape.values] == [3, 10]
    with pytest.raises(StructInfoError, match="different batch sizes"):
        _sinfo(R.nn.nll_loss(v((n, 5)), v((n + 1,), "int64", name="t")))
    with pytest.raises(TypeError, match="targets must be integer"):
        _sinfo(R.nn.nll_loss(v((3, 5)), v((3,), name="t")))
