"""TOPI kernels are written the way TVM's are (the legalized PrimFuncs of TVM's own tests
compare structurally), and still compute the right values."""

import numpy as np

import minitvm
from minitvm import te, topi


def _func(*tensors):
    return te.create_prim_func(list(tensors))


def _run(func, *arrays, out_shape, out_dtype="float32"):
    lib = minitvm.build(func, target="llvm")
    out = minitvm.nd.array(np.zeros(out_shape, out_dtype))
    lib(*(minitvm.nd.array(a) for a in arrays), out)
    return out.numpy()


def test_element_wise_and_reduction_names_follow_tvm():
    a = te.placeholder((2, 3), "float32", name="A")
    text = _func(a, topi.exp(a)).script()
    assert 'T.sblock("compute")' in text
    text = _func(a, topi.sum(a, axis=1)).script()
    assert 'T.sblock("A_red")' in text
    text = _func(a, topi.argmax(a, axis=1)).script()
    assert 'T.sblock("A_red_temp")' in text and 'T.sblock("A_red")' in text


def test_greater_is_written_as_a_flipped_less():
    a = te.placeholder((4,), "float32", name="A")
    b = te.placeholder((4,), "float32", name="B")
    func = _func(a, b, topi.greater(a, b))
    assert "B[v_i0] < A[v_i0]" in func.script()
    x, y = np.array([1, 5, 3, 0], "float32"), np.array([2, 4, 3, -1], "float32")
    np.testing.assert_array_equal(_run(func, x, y, out_shape=(4,), out_dtype="bool"), x > y)


def test_reshape_reads_with_the_simplified_index():
    a = te.placeholder((2, 3, 4), "float32", name="A")
    func = _func(a, topi.reshape(a, (4, 6)))
    assert "% T.int64(12) // T.int64(4)" in func.script() or "% 12 // 4" in func.script()
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")
    np.testing.assert_array_equal(_run(func, x, out_shape=(4, 6)), x.reshape(4, 6))


def test_softmax_has_tvms_four_stages():
    a = te.placeholder((3, 5), "float32", name="A")
    text = _func(a, topi.nn.softmax(a, axis=1)).script()
    for stage in ("T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum", "T_softmax_norm"):
        assert f'T.sblock("{stage}")' in text
    x = np.random.default_rng(1).standard_normal((3, 5)).astype("float32")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    got = _run(_func(a, topi.nn.softmax(a, axis=1)), x, out_shape=(3, 5))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_rounding_an_integer_tensor_copies_it():
    a = te.placeholder((5,), "int32", name="A")
    for fn in (topi.floor, topi.ceil, topi.round, topi.trunc):
        func = _func(a, fn(a))
        assert "A[v_i0]" in func.script() and "T.floor" not in func.script()
        x = np.array([-3, -1, 0, 2, 7], "int32")
        np.testing.assert_array_equal(_run(func, x, out_shape=(5,), out_dtype="int32"), x)
