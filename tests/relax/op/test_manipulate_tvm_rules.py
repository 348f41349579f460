"""Struct info of the manipulate and index ops at the edges TVM's own tests probe: virtual
devices carried, shape variables, reshape's -1 and 0, squeeze/split/concat special cases and
the inputs TVM refuses."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.ir import VDevice
from minitvm.relax.struct_info import StructInfoError
from minitvm.script import relax as R

from ._run import rand, run_op


def infer(call: relax.Expr) -> relax.StructInfo:
    return relax.BlockBuilder().normalize(call).struct_info


def test_results_stay_on_the_input_virtual_device():
    dev = VDevice("llvm")
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 4), "float32", dev))
    for call in (R.reshape(x, (6, 4)), R.permute_dims(x, [2, 0, 1]), R.expand_dims(x, 0), R.flatten(x),
                 R.repeat(x, 2, 1), R.tile(x, (2,)), R.take(x, relax.Var("i", R.Tensor((5,), "int64")), axis=1),
                 R.strided_slice(x, [1], [0], [2]), R.concat([x, x], axis=0)):
        assert infer(call).vdevice == dev, call.op.name
    assert all(f.vdevice == dev for f in infer(R.split(x, 2, axis=1)).fields)


def test_a_shape_variable_counts_as_unknown_unless_the_shape_is_unchanged():
    s = relax.Var("s", R.Shape((2, 3, 4)))
    x = relax.Var("x", relax.TensorStructInfo(s, "float32"))
    assert infer(R.permute_dims(x, [0, 1, 2])).shape is s  # the identity keeps the variable
    moved = infer(R.permute_dims(x, [2, 0, 1]))
    assert moved.shape is None and moved.ndim == 3
    assert infer(R.expand_dims(x, [])).shape is s
    assert infer(R.expand_dims(x, [0])).shape is None
    assert infer(R.split(x, 1)).shape is s


def test_reshape_resolves_minus_one_and_zero_when_made():
    s = relax.Var("s", R.Shape((2, 3, 4, 5)))
    x = relax.Var("x", relax.TensorStructInfo(s, "float32"))
    call = R.reshape(x, (1, 3, 0, -1))
    assert [int(d) for d in call.args[1].values] == [1, 3, 4, 10]  # before any inference
    with pytest.raises(StructInfoError, match="must be known to infer"):
        R.reshape(relax.Var("y", R.Tensor("float32", ndim=4)), (2, -1))
    with pytest.raises(TypeError):
        R.reshape(x, 120)  # a lone number is not a shape
    with pytest.raises(TypeError, match="must be an integer"):
        R.reshape(x, (2.0, 3, 4, 5))
    a, b, c, d = (tir.Var(n, "int64") for n in "abcd")
    y = relax.Var("y", R.Tensor((a, b, c, d), "float32"))
    assert str(infer(R.reshape(y, (c, a * b * d, -1)))) == 'R.Tensor((c, a * b * d, 1), dtype="float32")'


def test_squeeze_split_concat_special_cases():
    n = tir.Var("n", "int64")
    assert infer(R.squeeze(relax.Var("x", R.Tensor((1, n, 1), "float32")))).ndim == -1
    with pytest.raises(StructInfoError, match="repeat an axis"):
        infer(R.squeeze(relax.Var("x", R.Tensor("float32", ndim=3)), [1, -2]))
    pieces = infer(R.split(relax.Var("x", R.Tensor((n, 16), "float32")), 3))
    assert [str(f.shape.values[0]) for f in pieces.fields] == \
        ["(n + T.int64(2)) // T.int64(3)"] * 2 + ["n - (n + T.int64(2)) // T.int64(3) * T.int64(2)"]
    with pytest.raises(StructInfoError, match="number of sections must be positive"):
        R.split(relax.Var("x", R.Tensor((3, 4), "float32")), 0)
    one = relax.Var("x", R.Tensor("float32"))
    assert infer(R.concat([one], axis=None)) == one.struct_info  # one tensor comes back as it is


def test_refusals_tvm_makes():
    a, b = tir.Var("a", "int64"), tir.Var("b", "int64")
    with pytest.raises(StructInfoError, match="match_cast first"):  # symbolic dims that may differ
        infer(R.collapse_sum_like(relax.Var("x", R.Tensor((3, a), "float32")),
                                  relax.Var("y", R.Tensor((3, b), "float32"))))
    with pytest.raises(StructInfoError, match="smaller rank"):
        infer(R.broadcast_to(relax.Var("x", R.Tensor("float32", ndim=2)), (2,)))
    with pytest.raises(StructInfoError, match="without an axis the data must be 1-D"):
        infer(R.take(relax.Var("x", R.Tensor((2, 3), "float32")), relax.Var("i", R.Tensor((2,), "int64"))))
    x = relax.Var("x", R.Tensor((8, 9), "float32"))
    with pytest.raises(StructInfoError, match="repeat an axis"):
        infer(R.strided_slice(x, [0, -2], [0, 0], [8, 8]))
    with pytest.raises(StructInfoError, match="equal lengths"):
        R.strided_slice(x, [1], [], [9])
    with pytest.raises(StructInfoError, match="same number of dimensions"):
        infer(R.scatter_elements(x, relax.Var("i", R.Tensor((3, 3, 3), "int64")),
                                 relax.Var("u", R.Tensor((3, 3), "float32"))))
    with pytest.raises(TypeError):
        R.repeat(x, 1.5)


def test_repeat_and_split_kernels_still_match_numpy():
    rng = np.random.default_rng(21)
    x = rand(rng, 7, 4)
    got = run_op(lambda t: R.split(t, 3, axis=0), x)
    for g, w in zip(got, np.array_split(x, [3, 6], axis=0)):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(run_op(lambda t: R.reshape(t, (0, -1, 2)), x), x.reshape(7, 2, 2))
