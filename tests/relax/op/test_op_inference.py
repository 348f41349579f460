"""Struct-info inference of the Relax operator library: shapes (constant and symbolic),
dtypes, and error messages that name the op and the shapes."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.arith import Analyzer
from minitvm.relax import StructInfoError
from minitvm.relax import op as R
from minitvm.tir.functor import substitute

F32 = "float32"


def T(shape, dtype=F32):
    return relax.TensorStructInfo(shape, dtype)


def v(shape, dtype=F32, name="x"):
    return relax.Var(name, T(shape, dtype))


def infer(call):
    return relax.BlockBuilder().normalize(call).struct_info


def dims(sinfo):
    return [d.value if isinstance(d, tir.IntImm) else d for d in sinfo.shape.values]


def same(a, b):
    """Symbolic dimensions compared by the simplifier."""
    from minitvm.arith import Analyzer
    return Analyzer().can_prove_equal(a, b)


# -- element-wise ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", [R.power, R.maximum, R.minimum, R.floor_divide])
def test_more_binary_ops_broadcast(op, n):
    assert dims(infer(op(v((n, 1, 4)), v((3, 1))))) == [n, 3, 4]


@pytest.mark.parametrize("op", [R.equal, R.not_equal, R.less, R.less_equal, R.greater, R.greater_equal])
def test_comparisons_give_bool(op):
    s = infer(op(v((2, 3)), v((3,))))
    assert dims(s) == [2, 3] and s.dtype == "bool"
    with pytest.raises(StructInfoError, match=rf"{op.__name__}: cannot broadcast shapes \(2, 3\) and \(4,\)"):
        infer(op(v((2, 3)), v((4,))))


@pytest.mark.parametrize("op", [R.exp, R.log, R.sqrt, R.rsqrt, R.tanh, R.sigmoid, R.erf, R.nn.gelu,
                                R.nn.gelu_tanh, R.nn.silu])
def test_float_unary_ops(op, n):
    s = infer(op(v((n, 3))))
    assert dims(s) == [n, 3] and s.dtype == F32
    with pytest.raises(StructInfoError, match=r"needs a floating-point tensor, got dtype int32"):
        infer(op(v((2,), "int32")))


@pytest.mark.parametrize("op", [R.negative, R.abs, R.nn.relu])
def test_any_dtype_unary_ops(op):
    assert infer(op(v((2, 3), "int32"))).dtype == "int32"


def test_astype(n):
    s = infer(R.astype(v((n, 2)), "float16"))
    assert dims(s) == [n, 2] and s.dtype == "float16"
    assert infer(R.astype(relax.Var("u", relax.TensorStructInfo(ndim=3)), "int8")).ndim == 3


def test_where():
    s = infer(R.where(v((2, 1), "bool"), v((3,)), v((1, 3))))
    assert dims(s) == [2, 3] and s.dtype == F32
    with pytest.raises(StructInfoError, match="relax.where: the condition must be a bool tensor"):
        infer(R.where(v((2,)), v((2,)), v((2,))))
    with pytest.raises(StructInfoError, match=r"relax.where: cannot broadcast shapes \(2,\), \(3,\) and \(3,\)"):
        infer(R.where(v((2,), "bool"), v((3,)), v((3,))))
    with pytest.raises(StructInfoError, match="relax.where: operands have different dtypes float32 and int32"):
        infer(R.where(v((2,), "bool"), v((2,)), v((2,), "int32")))


def test_logical_ops_and_clip(n):
    s = infer(R.logical_and(v((n, 1), "bool"), v((3,), "bool")))
    assert dims(s) == [n, 3] and s.dtype == "bool"
    assert infer(R.logical_or(v((2,), "bool"), v((2,), "bool"))).dtype == "bool"
    assert dims(infer(R.logical_not(v((n, 4), "bool")))) == [n, 4]
    with pytest.raises(StructInfoError, match="relax.logical_or needs bool tensors, got dtype float32"):
        infer(R.logical_or(v((2,)), v((2,))))
    with pytest.raises(StructInfoError, match="relax.logical_not needs a bool tensor, got dtype int32"):
        infer(R.logical_not(v((2,), "int32")))
    s = infer(R.clip(v((n, 3), "int64"), 0, 6))
    assert dims(s) == [n, 3] and s.dtype == "int64"
    assert infer(R.clip(v((2,)), None, 1.5)).dtype == F32
    with pytest.raises(StructInfoError, match="relax.clip: min 2.0 is larger than max 1.0"):
        infer(R.clip(v((2,)), 2, 1))


# -- linear algebra -------------------------------------------------------------------------

def test_linear_is_matmul_of_transposed_weight_plus_bias(n):
    bb = relax.BlockBuilder()
    x, w, b = v((n, 6)), v((4, 6), name="w"), v((4,), name="b")
    with bb.function("main", [x, w, b]):
        out = bb.emit(R.linear(x, w, b))
        bb.emit_func_output(out)
    assert dims(out.struct_info) == [n, 4]
    ops = [b.value.op.name for blk in bb.get()["main"].body.blocks for b in blk.bindings]
    assert ops == ["relax.permute_dims", "relax.matmul", "relax.add"]
    with pytest.raises(StructInfoError, match=r"relax.matmul: cannot multiply shapes \(n, 6\) and \(5, 4\)"):
        infer(R.matmul(x, v((5, 4))))


# -- shapes -------------------------------------------------------------------------------

def test_permute_dims(n):
    assert dims(infer(R.permute_dims(v((n, 3, 4)), [2, 0, 1]))) == [4, n, 3]
    assert dims(infer(R.permute_dims(v((2, 3))))) == [3, 2]
    with pytest.raises(StructInfoError, match=r"relax.permute_dims: axes \[0, 0\] are not a permutation "
                       r"of the 2 dimensions of shape \(2, 3\)"):
        infer(R.permute_dims(v((2, 3)), [0, 0]))


def test_reshape(n):
    assert dims(infer(R.reshape(v((2, 3, 4)), (6, -1)))) == [6, 4]
    s = infer(R.reshape(v((n, 3, 4)), (n, -1)))
    assert s.shape.values[0] is n and dims(s)[1] == 12
    s = infer(R.reshape(v((n, 12)), (-1, 4)))
    assert same(s.shape.values[0], n * 3)
    with pytest.raises(StructInfoError, match=r"relax.reshape: cannot reshape \(2, 3\) to "
                       r"\(4, 2\): 6 elements against 8"):
        infer(R.reshape(v((2, 3)), (4, 2)))
    with pytest.raises(StructInfoError, match="relax.reshape: the new shape .* may hold one -1"):
        infer(R.reshape(v((2, 3)), (-1, -1)))
    # as TVM: the -1 becomes 6 // 4 = 1 and the element counts then differ
    with pytest.raises(StructInfoError, match=r"cannot reshape \(2, 3\) to \(4, 1\): 6 elements against 4"):
        infer(R.reshape(v((2, 3)), (4, -1)))


def test_flatten_expand_squeeze(n):
    s = infer(R.flatten(v((n, 2, 3))))
    assert same(s.shape.values[0], n * 6)
    assert dims(infer(R.expand_dims(v((n, 3)), [0, 3]))) == [1, n, 3, 1]
    assert dims(infer(R.expand_dims(v((2, 3)), -1))) == [2, 3, 1]
    assert dims(infer(R.squeeze(v((1, 5, 1, 3))))) == [5, 3]
    # as TVM: without axes a symbolic dimension leaves the rank unknown
    assert infer(R.squeeze(v((1, n, 1, 3)))).ndim == -1
    assert dims(infer(R.squeeze(v((1, n, 1, 3)), [0, 1]))) == [1, 3]
    assert dims(infer(R.squeeze(v((1, 2, 1)), [0]))) == [2, 1]
    # as TVM and torch: a listed axis whose length is not 1 stays
    assert dims(infer(R.squeeze(v((1, 2, 1)), [1]))) == [1, 2, 1]
    assert dims(infer(R.squeeze(v((3, 1, 4, 1)), [0, 1, 2, 3]))) == [3, 4]
    with pytest.raises(StructInfoError, match="relax.expand_dims: axis 5 is out of range"):
        infer(R.expand_dims(v((2, 3)), [5]))


def test_concat(n):
    s = infer(R.concat([v((n, 2)), v((n, 3)), v((n, 1))], axis=1))
    assert dims(s)[0] is n and dims(s)[1] == 6
    s = infer(R.concat([v((n, 2)), v((3, 2))], axis=0))
    assert same(s.shape.values[0], n + 3)
    with pytest.raises(StructInfoError, match=r"relax.concat: cannot concatenate shapes \(2, "
                       r"3\) and \(2, 4\) along axis 0"):
        infer(R.concat([v((2, 3)), v((2, 4))], axis=0))
    with pytest.raises(StructInfoError, match=r"relax.concat: tensors of different ranks \[1, 2\]"):
        infer(R.concat([v((2, 3)), v((4,))]))


def test_split(n):
    s = infer(R.split(v((n, 6)), 3, axis=1))
    assert isinstance(s, relax.TupleStructInfo) and [dims(f) for f in s.fields] == [[n, 2]] * 3
    s = infer(R.split(v((7, 2)), [2, 5]))
    assert [dims(f) for f in s.fields] == [[2, 2], [3, 2], [2, 2]]
    # as TVM: sections of ceil(n / count), the last one shorter
    s = infer(R.split(v((2, 5)), 2, axis=1))
    assert [dims(f) for f in s.fields] == [[2, 3], [2, 2]]
    # indices are clamped to the axis; out-of-order ones give empty pieces
    s = infer(R.split(v((10,)), [-2, 6, 4, 12]))
    assert [dims(f) for f in s.fields] == [[0], [6], [0], [6], [0]]


def test_broadcast_to(n):
    assert dims(infer(R.broadcast_to(v((3, 1)), (n, 3, 4)))) == [n, 3, 4]
    with pytest.raises(StructInfoError, match=r"relax.broadcast_to: cannot broadcast shape \(3, 2\) to \(3, 4\)"):
        infer(R.broadcast_to(v((3, 2)), (3, 4)))


def test_take_and_strided_slice(n):
    s = infer(R.take(v((10, 8)), v((n, 3), "int64", "idx"), axis=0))
    assert dims(s) == [n, 3, 8]
    assert dims(infer(R.take(v((10, 8)), v((5,), "int32", "idx"), axis=1))) == [10, 5]
    with pytest.raises(StructInfoError, match="relax.take: indices must be an integer tensor, got dtype float32"):
        infer(R.take(v((10, 8)), v((5,)), axis=0))
    assert dims(infer(R.strided_slice(v((n, 10)), [1], [2], [9], [3]))) == [n, 3]
    assert dims(infer(R.strided_slice(v((6, 4)), [0, 1], [-1, 0], [-10, 100], [-2, 1]))) == [3, 4]
    # a symbolic axis: sliced whole, or between constant bounds promised in range
    assert dims(infer(R.strided_slice(v((n, 10)), [0], [0], [n]))) == [n, 10]
    assert dims(infer(R.strided_slice(v((n, 10)), [0], [1], [7], [2], assume_inbound=True))) == [3, 10]
    # other bounds on a symbolic axis: the length clamps them into the axis (TVM's GetLength)
    for begin, end in ((0, 2), (1, n), (-3, n - 1)):
        length = dims(infer(R.strided_slice(v((n, 10)), [0], [begin], [end])))[0]
        for size in (1, 2, 5):
            at = tir.IntImm("int64", size)
            got = Analyzer().simplify(substitute(length, {n: at}))
            stop = end if isinstance(end, int) else Analyzer().simplify(substitute(end, {n: at})).value
            assert got.value == len(range(size)[begin:stop]), (begin, end, size)
    assert dims(infer(R.strided_slice(v((n, 10)), [0], [n - 5], [n - 1], assume_inbound=True)))[0] == 4


# -- reductions ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", [R.sum, R.mean, R.max, R.min, R.prod])
def test_reductions(op, n):
    x = v((n, 3, 4))
    assert dims(infer(op(x, axis=1))) == [n, 4]
    assert dims(infer(op(x, axis=[0, -1], keepdims=True))) == [1, 3, 1]
    assert dims(infer(op(x))) == []
    with pytest.raises(StructInfoError, match=rf"relax.{op.__name__}: axis 3 is out of range "
                       rf"for a tensor of 3 dimensions"):
        infer(op(x, axis=3))


def test_argmax_argmin(n):
    s = infer(R.argmax(v((n, 5)), axis=1))
    assert dims(s) == [n] and s.dtype == "int64"
    assert dims(infer(R.argmin(v((2, 5)), axis=0, keepdims=True))) == [1, 5]
    assert dims(infer(R.argmax(v((2, 5))))) == []


# -- creation -----------------------------------------------------------------------------

def test_creation(n):
    s = infer(R.zeros((n, 3), "int32"))
    assert dims(s) == [n, 3] and s.dtype == "int32"
    assert infer(R.ones((2,), F32)).dtype == F32
    s = infer(R.full((2, 3), relax.const(np.float32(1.5))))
    assert dims(s) == [2, 3] and s.dtype == F32
    with pytest.raises(StructInfoError, match=r"relax.full: fill_value must be a scalar"):
        infer(R.full((2, 3), v((2,))))
    s = infer(R.arange(1, 10, 2))
    assert dims(s) == [5] and s.dtype == "int64"
    assert dims(infer(R.arange(0.0, 1.0, 0.25, "float32"))) == [4]
    assert infer(R.zeros_like(v((n, 2)), "int8")).dtype == "int8"


# -- neural networks -------------------------------------------------------------------------

def test_softmax(n):
    assert dims(infer(R.nn.softmax(v((n, 5)), axis=0))) == [n, 5]
    assert dims(infer(R.nn.log_softmax(v((2, 5))))) == [2, 5]
    with pytest.raises(StructInfoError, match="relax.nn.softmax: axis 2 is out of range"):
        infer(R.nn.softmax(v((2, 5)), axis=2))


def test_layer_norm_and_batch_norm(n):
    x = v((n, 4, 8))
    assert dims(infer(R.nn.layer_norm(x, v((8,)), v((8,))))) == [n, 4, 8]
    assert dims(infer(R.nn.layer_norm(x, v((4, 8)), v((4, 8)), axes=[-2, -1]))) == [n, 4, 8]
    with pytest.raises(StructInfoError, match=r"relax.nn.layer_norm: gamma has shape \(4,\) but data "
                       r"of shape \(n, 4, 8\) needs \(8,\)"):
        infer(R.nn.layer_norm(x, v((4,)), v((8,))))
    c = v((4,))
    s = infer(R.nn.batch_norm(v((n, 4, 5, 5)), c, c, c, c))
    assert isinstance(s, relax.TupleStructInfo) and dims(s.fields[0]) == [n, 4, 5, 5] and dims(s.fields[1]) == [4]
    with pytest.raises(StructInfoError, match=r"relax.nn.batch_norm: moving_var has shape \(3,\)"):
        infer(R.nn.batch_norm(v((2, 4, 5, 5)), c, c, c, v((3,))))


def test_conv2d(n):
    x, w = v((n, 3, 32, 32)), v((8, 3, 5, 5), name="w")
    assert dims(infer(R.nn.conv2d(x, w))) == [n, 8, 28, 28]
    assert dims(infer(R.nn.conv2d(x, w, strides=2, padding=2))) == [n, 8, 16, 16]
    assert dims(infer(R.nn.conv2d(x, w, padding=(1, 2, 3, 4), dilation=2))) == [n, 8, 28, 30]
    assert dims(infer(R.nn.conv2d(v((1, 4, 6, 6)), v((6, 2, 3, 3)), groups=2))) == [1, 6, 4, 4]
    h = tir.Var("h", "int64")
    s = infer(R.nn.conv2d(v((1, 3, h, 10)), w, padding=2))
    assert same(s.shape.values[2], h)
    with pytest.raises(StructInfoError, match=r"relax.nn.conv2d: data \(1, 4, 6, 6\) has 4 channels but weight "
                       r"\(8, 3, 5, 5\) expects 3 per group x 1 groups"):
        infer(R.nn.conv2d(v((1, 4, 6, 6)), w))
    with pytest.raises(StructInfoError, match=r"relax.nn.conv2d: the kernel \(8, 3, 5, 5\) does not fit"):
        infer(R.nn.conv2d(v((1, 3, 4, 4)), w))
    # other layouts: NHWC data (the output laid out alike) with an OIHW or HWIO kernel
    assert dims(infer(R.nn.conv2d(v((n, 32, 32, 3)), w, data_layout="NHWC"))) == [n, 28, 28, 8]
    assert dims(infer(R.nn.conv2d(v((n, 32, 32, 3)), v((5, 5, 3, 8)), data_layout="NHWC",
                                  kernel_layout="HWIO"))) == [n, 28, 28, 8]
    with pytest.raises(StructInfoError, match=r"relax.nn.conv2d: the data layout 'NCXY' cannot be converted to 'NCHW'"):
        infer(R.nn.conv2d(x, w, data_layout="NCXY"))
    # as TVM, an output laid out other than the data (here NHWC from NCHW)
    assert dims(infer(R.nn.conv2d(v((n, 3, 32, 32)), w, out_layout="NHWC"))) == [n, 28, 28, 8]


def test_pooling(n):
    x = v((n, 3, 28, 28))
    assert dims(infer(R.nn.max_pool2d(x, 2, 2))) == [n, 3, 14, 14]
    assert dims(infer(R.nn.avg_pool2d(x, 3, 2, padding=1))) == [n, 3, 14, 14]
    assert dims(infer(R.nn.max_pool2d(v((1, 1, 5, 5)), 2, 2, ceil_mode=True))) == [1, 1, 3, 3]
    assert dims(infer(R.nn.adaptive_avg_pool2d(x, 1))) == [n, 3, 1, 1]
    assert dims(infer(R.nn.adaptive_avg_pool2d(x))) == [n, 3, 28, 28]
    with pytest.raises(StructInfoError,
                       match=r"relax.nn.max_pool2d: data must be 4-D for the layout 'NCHW', got \(3, 28\)"):
        infer(R.nn.max_pool2d(v((3, 28)), 2))


def test_pad_and_dropout(n):
    assert dims(infer(R.nn.pad(v((n, 3)), [0, 0, 1, 2]))) == [n, 6]
    with pytest.raises(StructInfoError, match=r"relax.nn.pad: pad_width needs 2 values per "
                       r"dimension \(4 for shape \(2, 3\)\), got 2"):
        infer(R.nn.pad(v((2, 3)), [1, 1]))
    s = infer(R.nn.dropout(v((n, 3)), 0.1))
    assert isinstance(s, relax.TupleStructInfo) and dims(s.fields[0]) == [n, 3]


def test_unknown_shapes_keep_what_is_known():
    x = relax.Var("x", relax.TensorStructInfo(ndim=3, dtype=F32))
    assert infer(R.sum(x, axis=1)).ndim == 2
    assert infer(R.permute_dims(x)).ndim == 3
    assert infer(R.nn.conv2d(relax.Var("y", relax.TensorStructInfo(ndim=4)), v((2, 2, 1, 1)))).ndim == 4
    assert infer(R.take(x, v((5,), "int64"), axis=0)).ndim == 3


def test_broadcast_of_a_leading_one_against_a_shorter_shape():
    from minitvm.relax.op.binary import broadcast_shapes
    from minitvm.tir import const

    one, n256 = const(1, "int64"), const(256, "int64")
    for a, b in (((one, n256), (n256,)), ((n256,), (one, n256))):
        out = broadcast_shapes("relax.add", a, b)
        assert [int(d) for d in out] == [1, 256]
