"""gather_nd, meshgrid and one_hot: struct info as TVM infers it, and the legalized kernels
against numpy on seeded random data."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.relax.struct_info import StructInfoError
from minitvm.script import relax as R

from ._run import rand, run_op


def infer(call: relax.Expr) -> relax.StructInfo:
    return relax.BlockBuilder().normalize(call).struct_info


def test_gather_nd_matches_numpy_with_and_without_batch_dims():
    rng = np.random.default_rng(3)
    x = rand(rng, 3, 4, 5)
    idx = rng.integers(0, 3, size=(6, 2)).astype("int64")  # (row, column) pairs
    got = run_op(lambda a, i: relax.op.gather_nd(a, i), x, idx)
    np.testing.assert_allclose(got, x[idx[:, 0], idx[:, 1]], rtol=1e-6)
    bidx = rng.integers(0, 4, size=(3, 2, 1)).astype("int64")  # per batch row: two columns
    got = run_op(lambda a, i: relax.op.gather_nd(a, i, batch_dims=1), x, bidx)
    want = np.stack([x[b][bidx[b, :, 0]] for b in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_gather_nd_struct_info_and_refusals():
    n = tir.Var("n", "int64")
    x = relax.Var("x", R.Tensor((n, 4, 5), "float32"))
    i = relax.Var("i", R.Tensor((7, 2), "int64"))
    assert str(infer(relax.op.gather_nd(x, i))) == 'R.Tensor((7, 5), dtype="float32")'
    with pytest.raises(TypeError, match="indices must be int64"):
        infer(relax.op.gather_nd(x, relax.Var("f", R.Tensor((7, 2), "int32"))))
    with pytest.raises(StructInfoError, match="exceeds the rank of data"):
        infer(relax.op.gather_nd(x, relax.Var("j", R.Tensor((7, 4), "int64"))))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    rng = np.random.default_rng(5)
    a, b, c = rand(rng, 3), rand(rng, 4), rand(rng, 2)
    got = run_op(lambda p, q, r: relax.op.meshgrid((p, q, r), indexing=indexing), a, b, c)
    for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
        np.testing.assert_array_equal(g, w)


def test_meshgrid_struct_info_follows_the_kernel_for_xy():
    a = relax.Var("a", R.Tensor((3,), "float32"))
    b = relax.Var("b", R.Tensor((4,), "float32"))
    assert str(infer(relax.op.meshgrid((a, b), indexing="ij")).fields[0]) == 'R.Tensor((3, 4), dtype="float32")'
    assert str(infer(relax.op.meshgrid((a, b), indexing="xy")).fields[1]) == 'R.Tensor((4, 3), dtype="float32")'
    with pytest.raises(StructInfoError, match="every input must be 1-D"):
        infer(relax.op.meshgrid((a, relax.Var("m", R.Tensor((2, 2), "float32")))))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_matches_numpy(axis):
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 5, size=(3, 4)).astype("int32")
    got = run_op(lambda i: relax.op.one_hot(i, relax.PrimValue(2.5), relax.PrimValue(-1.0), 5, axis=axis), idx)
    want = np.where(np.eye(5, dtype=bool)[idx], 2.5, -1.0).astype("float32")  # depth on the last axis
    np.testing.assert_array_equal(got, np.moveaxis(want, -1, axis))


def test_one_hot_refuses_mixed_values_float_indices_and_bad_depth():
    i = relax.Var("i", R.Tensor((2, 3), "int32"))
    assert str(infer(relax.op.one_hot(i, relax.PrimValue(1), relax.PrimValue(0), 3, axis=1))) == \
        'R.Tensor((2, 3, 3), dtype="int64")'
    with pytest.raises(TypeError, match="one dtype"):
        infer(relax.op.one_hot(i, relax.PrimValue(1.0), relax.PrimValue(0), 5))
    with pytest.raises(TypeError, match="indices must be integers"):
        infer(relax.op.one_hot(relax.Var("f", R.Tensor((2,), "float32")), relax.PrimValue(1.0),
                               relax.PrimValue(0.0), 5))
    with pytest.raises(StructInfoError, match="depth must be positive"):
        relax.op.one_hot(i, relax.PrimValue(1.0), relax.PrimValue(0.0), 0)


@pytest.mark.parametrize("k", [0, 2, -1])
def test_eye_and_eye_like_match_numpy(k):
    got = run_op(lambda a: relax.op.add(a, relax.op.eye(3, 4, k=k)), np.zeros((3, 4), "float32") + 0.5)
    np.testing.assert_array_equal(got, np.eye(3, 4, k=k, dtype="float32") + 0.5)
    rng = np.random.default_rng(9)
    x = rand(rng, 4, 2)
    got = run_op(lambda a: relax.op.multiply(a, relax.op.eye_like(a, k=k)), x)
    np.testing.assert_array_equal(got, x * np.eye(4, 2, k=k, dtype="float32"))


def test_creation_ops_keep_shape_variables_and_refuse_what_tvm_refuses():
    s = relax.Var("s", R.Shape((2, 3)))
    assert infer(relax.op.zeros(s, "int32")).shape is s  # as TVM: the shape variable stays
    with pytest.raises(TypeError):
        relax.op.ones((2, 3))  # dtype is required, as TVM
    with pytest.raises(TypeError):
        relax.op.zeros(4, "float32")  # a lone number is not a shape
    with pytest.raises(StructInfoError, match="fill_value must be a scalar"):
        infer(relax.op.full((2, 3), relax.Var("v", R.Tensor("float32"))))
    assert str(infer(relax.op.arange(1, 10, 2.3))) == 'R.Tensor((4,), dtype="float32")'
    n = tir.Var("n", "int64")
    assert str(infer(relax.op.arange(n))) == 'R.Tensor((n,), dtype="int64")'
    with pytest.raises(StructInfoError, match="needs a 2-D tensor"):
        infer(relax.op.eye_like(relax.Var("x", R.Tensor((2, 3, 4), "float32"))))
