"""TOPI compute definitions against numpy: each builds a PrimFunc with te.create_prim_func,
compiled with LLVM, run on random data."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.testing.op_reference import conv2d_nchw as conv2d_ref
from minitvm.testing.op_reference import pool2d_nchw as pool_ref

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32", low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(dtype)


def run(fn, *arrays, target="llvm", **attrs):
    """Placeholders for ``arrays``, ``fn`` on them, build, run: the outputs as numpy."""
    phs = [te.placeholder(a.shape, str(a.dtype), name=f"in{k}") for k, a in enumerate(arrays)]
    outs = fn(*phs, **attrs)
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    func = te.create_prim_func([*phs, *outs])
    lib = minitvm.build(func, target=target)
    results = [np.empty([int(d.value) for d in o.shape], o.dtype) for o in outs]
    nd = [minitvm.nd.array(a) for a in (*arrays, *results)]
    lib["main"](*nd)
    got = [x.numpy() for x in nd[len(arrays):]]
    return got[0] if len(got) == 1 else got


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,ref", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
    ("maximum", np.maximum), ("minimum", np.minimum), ("greater", np.greater), ("less_equal", np.less_equal),
    ("equal", np.equal), ("power", np.power),
])
def test_broadcast_binary(name, ref):
    a = rand(2, 1, 4, low=0.5)
    b = rand(3, 1, low=0.5)
    if name == "equal":
        b[0, 0] = a[0, 0, 0]
    close(run(getattr(topi, name), a, b), ref(a, b))


def test_binary_with_scalar():
    a = rand(3, 4)
    close(run(lambda A: topi.add(A, 1.5), a), a + 1.5)
    close(run(lambda A: topi.multiply(2.0, A), a), 2 * a)


@pytest.mark.parametrize("name,ref", [
    ("exp", np.exp), ("tanh", np.tanh), ("negative", np.negative), ("abs", np.abs),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("erf", np.vectorize(math.erf)),
])
def test_unary(name, ref):
    a = rand(3, 5)
    close(run(getattr(topi, name), a), ref(a).astype("float32"))


def test_unary_positive_domain():
    a = rand(4, 3, low=0.1, high=3.0)
    close(run(topi.log, a), np.log(a))
    close(run(topi.sqrt, a), np.sqrt(a))
    close(run(topi.rsqrt, a), 1 / np.sqrt(a))


def test_where_cast_full():
    c = rand(3, 4) > 0
    a, b = rand(3, 4), rand(4)
    close(run(topi.where, c, a, b), np.where(c, a, b))
    close(run(lambda A: topi.cast(A, "int32"), a), a.astype("int32"))
    close(run(lambda A: topi.add(A, topi.full((3, 4), "float32", 2.5)), a), a + 2.5)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions(axis, keepdims):
    a = rand(2, 3, 4)
    for name, ref in [("sum", np.sum), ("max", np.max), ("min", np.min), ("mean", np.mean)]:
        close(run(getattr(topi, name), a, axis=axis, keepdims=keepdims), ref(a, axis=axis, keepdims=keepdims))


def test_clip_with_open_bounds_and_integer_data():
    a = rand(4, 6)
    close(run(topi.clip, a, a_min=-0.5, a_max=0.75), np.clip(a, -0.5, 0.75))
    close(run(topi.clip, a, a_min=None, a_max=0.2), np.minimum(a, 0.2))
    close(run(topi.clip, a, a_min=0.1, a_max=None), np.maximum(a, 0.1))
    ints = (rand(3, 5) * 4).astype("int32")
    np.testing.assert_array_equal(run(topi.clip, ints, a_min=-1.5, a_max=2.5), np.clip(ints, -1, 2))


def test_argmax_argmin():
    a = rand(3, 5, 4)
    a[0, 1, 0] = a[0, 3, 0] = 9.0  # a tie: the first index wins, as in numpy
    np.testing.assert_array_equal(run(topi.argmax, a, axis=1), np.argmax(a, axis=1))
    np.testing.assert_array_equal(run(topi.argmin, a, axis=-1, keepdims=True), np.argmin(a, axis=-1)[..., None])
    np.testing.assert_array_equal(run(topi.argmax, a), np.argmax(a))


def test_transpose_reshape_flatten():
    a = rand(2, 3, 4)
    close(run(topi.transpose, a, axes=[2, 0, 1]), a.transpose(2, 0, 1))
    close(run(topi.transpose, a), a.T)
    close(run(topi.reshape, a, newshape=[4, 6]), a.reshape(4, 6))
    close(run(topi.reshape, a, newshape=[-1, 3]), a.reshape(-1, 3))
    close(run(topi.nn.flatten, a), a.reshape(2, 12))


def test_expand_squeeze():
    a = rand(3, 1, 4)
    close(run(topi.expand_dims, a, axis=0, num_newaxis=2), a[None, None])
    close(run(topi.expand_dims, a, axis=[1, 4]), np.expand_dims(a, (1, 4)))
    close(run(topi.squeeze, a), a.squeeze())
    close(run(topi.squeeze, a, axis=[1]), a.squeeze(1))


def test_concat_split_slice_take():
    a, b, c = rand(2, 3), rand(2, 1), rand(2, 4)
    close(run(lambda *ts: topi.concatenate(ts, axis=1), a, b, c), np.concatenate([a, b, c], 1))
    x = rand(6, 4)
    for got, want in zip(run(topi.split, x, indices_or_sections=3), np.split(x, 3)):
        close(got, want)
    for got, want in zip(run(topi.split, x, indices_or_sections=[1, 4], axis=0), np.split(x, [1, 4])):
        close(got, want)
    close(run(topi.strided_slice, x, begin=[1, -3], end=[6, 100], strides=[2, 1]), x[1:6:2, -3:])
    close(run(topi.strided_slice, x, begin=[5], end=[0], strides=[-2]), x[5:0:-2])
    idx = np.array([[0, 2], [3, 1]], "int64")
    close(run(topi.take, x, idx, axis=0), np.take(x, idx, axis=0))
    close(run(topi.take, x, idx, axis=1), np.take(x, idx, axis=1))
    close(run(topi.take, x, idx), np.take(x, idx))


def test_broadcast_to_and_arange():
    a = rand(3, 1)
    close(run(topi.broadcast_to, a, shape=[2, 3, 4]), np.broadcast_to(a, (2, 3, 4)))
    x = rand(5)
    close(run(lambda A: topi.add(A, topi.arange(1, 11, 2, "float32")), x), x + np.arange(1, 11, 2, dtype="float32"))


@pytest.mark.parametrize("sa,sb,ta,tb", [
    ((3, 4), (4, 5), False, False), ((2, 3, 4), (4, 5), False, False), ((2, 1, 3, 4), (5, 4, 2), False, False),
    ((4,), (4, 5), False, False), ((3, 4), (4,), False, False), ((4, 3), (5, 4), True, True),
])
def test_matmul(sa, sb, ta, tb):
    a, b = rand(*sa), rand(*sb)
    ref_a = np.swapaxes(a, -1, -2) if ta else a
    ref_b = np.swapaxes(b, -1, -2) if tb else b
    close(run(topi.nn.matmul, a, b, transpose_a=ta, transpose_b=tb), ref_a @ ref_b)


def test_dense_with_bias_and_relu():
    x, w, bias = rand(3, 6), rand(4, 6), rand(4)
    close(run(lambda X, W, B: topi.nn.relu(topi.nn.dense(X, W, B)), x, w, bias), np.maximum(x @ w.T + bias, 0))


def test_activations():
    x = rand(3, 7)
    erf = np.vectorize(math.erf)
    close(run(topi.nn.gelu, x), (0.5 * x * (1 + erf(x / np.sqrt(2)))).astype("float32"))
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    close(run(topi.nn.gelu_tanh, x), tanh_form)
    close(run(topi.nn.silu, x), x / (1 + np.exp(-x)))
    close(run(topi.nn.leaky_relu, x, alpha=0.1), np.where(x > 0, x, 0.1 * x))


def test_softmax_log_softmax():
    x = rand(2, 3, 5) * 5
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(run(topi.nn.softmax, x, axis=1), e / e.sum(axis=1, keepdims=True))
    e = np.exp(x - x.max(-1, keepdims=True))
    close(run(topi.nn.log_softmax, x), x - x.max(-1, keepdims=True) - np.log(e.sum(-1, keepdims=True)))


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, (1, 2, 0, 1), 2, 1), (1, 1, 1, 2),
])
def test_conv2d_nchw(stride, padding, dilation, groups):
    x, w = rand(2, 4, 7, 6), rand(6, 4 // groups, 3, 3)
    pad4 = (padding,) * 4 if isinstance(padding, int) else padding
    want = conv2d_ref(x, w, (stride, stride), pad4, (dilation, dilation), groups)
    close(run(topi.nn.conv2d_nchw, x, w, stride=stride, padding=padding, dilation=dilation, groups=groups),
          want, 1e-4)


@pytest.mark.parametrize("kind,count_include_pad", [("max", True), ("avg", True), ("avg", False)])
def test_pool2d(kind, count_include_pad):
    x = rand(2, 3, 7, 6)
    got = run(topi.nn.pool2d, x, kernel=3, stride=2, padding=1, pool_type=kind,
              count_include_pad=count_include_pad)
    close(got, pool_ref(x, 3, 2, (1, 1, 1, 1), kind, count_include_pad))
    close(run(topi.nn.pool2d, x, kernel=2, stride=2, pool_type=kind), pool_ref(x, 2, 2, (0,) * 4, kind))


def test_adaptive_avg_pool():
    x = rand(1, 2, 7, 5)
    want = np.empty((1, 2, 3, 2), "float32")
    for i in range(3):
        for j in range(2):
            y0, y1 = i * 7 // 3, -(-(i + 1) * 7 // 3)
            x0, x1 = j * 5 // 2, -(-(j + 1) * 5 // 2)
            want[:, :, i, j] = x[:, :, y0:y1, x0:x1].mean(axis=(2, 3))
    close(run(topi.nn.adaptive_pool, x, output_size=(3, 2)), want)
    close(run(topi.nn.adaptive_pool, x, output_size=1), x.mean(axis=(2, 3), keepdims=True))


def test_pad():
    x = rand(2, 3)
    close(run(topi.nn.pad, x, pad_before=[1, 0], pad_after=[0, 2], pad_value=7.0),
          np.pad(x, ((1, 0), (0, 2)), constant_values=7.0))


def test_layer_norm_and_batch_norm():
    x, g, b = rand(2, 3, 8), rand(8), rand(8)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    close(run(topi.nn.layer_norm, x, g, b, axis=-1), (x - mu) / np.sqrt(var + 1e-5) * g + b, 1e-4)
    x, g, b, m, v = rand(2, 3, 4, 4), rand(3), rand(3), rand(3), rand(3, low=0.5)
    out, m2, v2 = run(topi.nn.batch_norm, x, g, b, m, v)
    c = (slice(None), None, None)
    close(out, (x - m[c]) / np.sqrt(v[c] + 1e-5) * g[c] + b[c], 1e-4)
    close(m2, m)
    close(v2, v)


def test_symbolic_shapes_build_one_kernel_for_every_size():
    n = tir.Var("n", "int64")
    A = te.placeholder((n, 4), "float32", name="A")
    B = te.placeholder((4,), "float32", name="B")
    Y = topi.nn.softmax(topi.add(A, B))
    lib = minitvm.build(te.create_prim_func([A, B, Y]), target="llvm")
    for rows in (1, 5):
        a, b = rand(rows, 4), rand(4)
        y = minitvm.nd.array(np.empty((rows, 4), "float32"))
        lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), y)
        e = np.exp((a + b) - (a + b).max(-1, keepdims=True))
        close(y.numpy(), e / e.sum(-1, keepdims=True))


def test_split_of_a_symbolic_axis():
    n = tir.Var("n", "int64")
    A = te.placeholder((n, 3), "float32", name="A")
    first, second = topi.split(A, 2, axis=0)
    lib = minitvm.build(te.create_prim_func([A, first, second]), target="llvm")
    a = rand(6, 3)
    outs = [minitvm.nd.array(np.empty((3, 3), "float32")) for _ in range(2)]
    lib["main"](minitvm.nd.array(a), *outs)
    close(outs[0].numpy(), a[:3])
    close(outs[1].numpy(), a[3:])


def test_mlc_course_spellings():
    """``topi.add``, ``topi.transpose``, ``topi.nn.matmul``, ``topi.nn.relu`` as the course uses them."""
    x, w = rand(2, 4), rand(3, 4)
    out = run(lambda X, W: topi.nn.relu(topi.add(topi.nn.matmul(X, topi.transpose(W, [1, 0])), 1.0)), x, w)
    close(out, np.maximum(x @ w.T + 1.0, 0))


def test_bool_add_is_or_and_multiply_is_and():
    # a 1-bit add would wrap True + True to False; numpy and torch give True
    a, b = RNG.random((7, 9)) > 0.5, RNG.random((7, 9)) > 0.5
    np.testing.assert_array_equal(run(topi.add, a, b), a + b)
    np.testing.assert_array_equal(run(topi.multiply, a, b), a * b)


def test_bool_subtract_is_refused():
    a = te.placeholder((4,), "bool", name="a")
    with pytest.raises(TypeError, match="subtracting two bool tensors"):
        topi.subtract(a, a)


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("size,kernel,stride,padding", [(7, 3, 2, 1), (6, 2, 2, 1), (5, 3, 3, 1), (8, 3, 2, 0)])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_pool2d_ceil_mode_matches_torch(kind, size, kernel, stride, padding, count_include_pad):
    # the last ceil-mode window: torch divides by the positions inside data + padding only,
    # and drops a window that would start in the trailing padding
    import torch
    x = rand(2, 3, size, size + 1)
    fn = torch.nn.functional.avg_pool2d if kind == "avg" else torch.nn.functional.max_pool2d
    extra = {"count_include_pad": count_include_pad} if kind == "avg" else {}
    want = fn(torch.from_numpy(x), kernel, stride, padding, ceil_mode=True, **extra).numpy()
    got = run(topi.nn.pool2d, x, kernel=kernel, stride=stride, padding=padding, pool_type=kind,
              ceil_mode=True, count_include_pad=count_include_pad)
    assert got.shape == want.shape
    close(got, want)


def test_broadcast_of_two_different_symbolic_sizes_is_their_max():
    # as TVM's TOPI: (c,) + (h,) has extent max(c, h), each side read at the output index;
    # equal sizes (or a 1, or a number) stay as they are
    c, h = tir.Var("c", "int64"), tir.Var("h", "int64")
    a, b = te.placeholder((c,), name="a"), te.placeholder((h,), name="b")
    out = topi.add(a, b)
    assert str(out.shape[0]) == str(tir.max(c, h))
    assert topi.add(a, te.placeholder((c,), name="d")).shape[0] is c
    assert topi.add(a, te.placeholder((1,), name="e")).shape[0] is c
    f = minitvm.build(te.create_prim_func([a, b, out]), target="llvm")
    x, y = np.arange(5, dtype="float32"), np.arange(5, dtype="float32") * 3
    z = np.zeros(5, "float32")
    f(x, y, z)
    np.testing.assert_allclose(z, x + y)
