"""repeat, tile, flip, collapse sums, tril/triu, variance/std, quantize/dequantize, take
with a scalar index, uneven split sections, arange bounds and scalar (R.Prim) operands:
struct info, errors, and legalized kernels against numpy on random data."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax.struct_info import StructInfoError
from minitvm.relax.transform import LegalizeOps

from ._run import rand, run_op


def v(shape, dtype="float32", name="x"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def _sinfo(call, params):
    bb = relax.BlockBuilder()
    with bb.function("f", params):
        out = bb.emit(call)
        bb.emit_func_output(out)
    return out.struct_info


def test_repeat_tile_flip_match_numpy():
    rng = np.random.default_rng(10)
    x = rand(rng, 3, 2, 4)
    np.testing.assert_array_equal(run_op(lambda a: R.repeat(a, 3, axis=1), x), np.repeat(x, 3, axis=1))
    np.testing.assert_array_equal(run_op(lambda a: R.repeat(a, 2), x), np.repeat(x, 2))
    np.testing.assert_array_equal(run_op(lambda a: R.tile(a, (2, 1, 1, 3)), x), np.tile(x, (2, 1, 1, 3)))
    np.testing.assert_array_equal(run_op(lambda a: R.tile(a, 2), x), np.tile(x, 2))
    np.testing.assert_array_equal(run_op(lambda a: R.flip(a, axis=-1), x), np.flip(x, axis=-1))


def test_repeat_and_tile_shapes_are_symbolic_where_the_input_is():
    n = tir.Var("n", "int64")
    x = v((n, 3))
    # TVM writes n * 2
    assert str(_sinfo(R.repeat(x, 2, axis=0), [x])) == str(relax.TensorStructInfo((n * 2, 3), "float32"))
    with pytest.raises(StructInfoError, match="repeats must be positive"):
        _sinfo(R.tile(x, (0, 1)), [x])
    with pytest.raises(StructInfoError, match="axis 2 is out of range"):
        _sinfo(R.flip(x, axis=2), [x])


def test_collapse_sums_undo_broadcasting():
    rng = np.random.default_rng(11)
    x = rand(rng, 4, 3, 5)
    got = run_op(lambda a: R.collapse_sum_to(a, (3, 1)), x)
    np.testing.assert_allclose(got, x.sum(axis=0).sum(axis=1, keepdims=True), rtol=1e-5)
    like = rand(rng, 1, 5)
    got = run_op(lambda a, b: R.collapse_sum_like(a, b), x, like)
    np.testing.assert_allclose(got, x.sum(axis=(0, 1))[None, :], rtol=1e-5)
    with pytest.raises(StructInfoError, match="does not broadcast from shape"):
        _sinfo(R.collapse_sum_to(v((4, 3)), (2, 3)), [])


def test_tril_triu_match_numpy():
    rng = np.random.default_rng(12)
    x = rand(rng, 2, 4, 5)
    for k in (-2, 0, 1, 3):
        np.testing.assert_array_equal(run_op(lambda a, k=k: R.tril(a, k), x), np.tril(x, k))
        np.testing.assert_array_equal(run_op(lambda a, k=k: R.triu(a, k), x), np.triu(x, k))
    with pytest.raises(StructInfoError, match="at least 2 dimensions"):
        _sinfo(R.tril(v((3,))), [])


def test_variance_and_std_match_numpy():
    rng = np.random.default_rng(13)
    x = rand(rng, 3, 4, 5)
    np.testing.assert_allclose(run_op(lambda a: R.variance(a, [0, 2], keepdims=True), x),
                               x.var(axis=(0, 2), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(run_op(lambda a: R.std(a), x), x.std(), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_variance_and_std_survive_a_large_mean(dtype):
    # float32 sums of 8192 values near 10000 lose the spread (the variance came out 190% off):
    # the legalization accumulates in float64 and rounds once
    base, tol = (10000.0, 1e-6) if dtype == "float32" else (500.0, 1e-3)
    x = (base + np.random.default_rng(15).random((4, 8192))).astype(dtype)
    exact = x.astype("float64").var(axis=-1)
    var, std = run_op(lambda a: relax.Tuple([R.variance(a, -1), R.std(a, 1, keepdims=True)]), x)
    assert var.dtype == std.dtype == dtype
    np.testing.assert_allclose(var, exact, rtol=tol)
    np.testing.assert_allclose(std, np.sqrt(exact)[:, None], rtol=tol)


def test_quantize_dequantize_round_trip_per_channel():
    rng = np.random.default_rng(14)
    x = rand(rng, 3, 6)
    scale = rand(rng, 3, low=0.01, high=0.05)
    zp = rng.integers(-5, 5, size=3).astype("int8")
    q = run_op(lambda a, s, z: R.quantize(a, s, z, axis=0, out_dtype="int8"), x, scale, zp)
    want = np.clip(np.round(x / scale[:, None]) + zp[:, None], -128, 127).astype("int8")
    np.testing.assert_array_equal(q, want)
    d = run_op(lambda a, s, z: R.dequantize(a, s, z, axis=0), q, scale, zp)
    np.testing.assert_allclose(d, (q.astype("int32") - zp[:, None]) * scale[:, None], rtol=1e-6)
    with pytest.raises(StructInfoError, match="out_dtype must be one of float16, float32"):
        _sinfo(R.dequantize(v((3,), "int8"), v((3,), name="s"), v((3,), "int8", name="z"), out_dtype="int8"), [])


def test_take_with_a_scalar_index_drops_the_axis():
    rng = np.random.default_rng(15)
    x = rand(rng, 2, 3, 4)
    got = run_op(lambda a: R.take(a, relax.PrimValue(tir.IntImm("int64", 2)), axis=1), x)
    np.testing.assert_array_equal(got, x[:, 2, :])
    idx = np.array([2, 0, 2], "int64")
    np.testing.assert_array_equal(run_op(lambda a, i: R.take(a, i, axis=2, mode="clip"), x, idx), x[:, :, idx])
    with pytest.raises(ValueError, match="mode must be one of fast, clip, wrap"):
        R.take(v((2,)), v((1,), "int64"), mode="nearest")


def test_uneven_split_gives_ceil_sized_sections():
    rng = np.random.default_rng(16)
    x = rand(rng, 2, 10)
    pieces = run_op(lambda a: R.split(a, 3, axis=1), x)
    assert [p.shape for p in pieces] == [(2, 4), (2, 4), (2, 2)]
    for got, want in zip(pieces, [x[:, :4], x[:, 4:8], x[:, 8:]]):
        np.testing.assert_array_equal(got, want)


def test_binary_op_with_a_scalar_operand_passes_it_to_the_kernel():
    x = v((4, 3))
    y = relax.Var("y", relax.PrimStructInfo("float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        out = bb.emit(R.multiply(x, y))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    call = mod["main"].body.blocks[0].bindings[0].value
    assert [a.name_hint for a in call.args[1].fields] == ["x", "y"]  # the scalar is an argument
    kernel = mod[call.args[0].name_hint]
    assert kernel.params[1].dtype == "float32" and kernel.params[1] not in kernel.buffer_map
    rng = np.random.default_rng(17)
    data = rand(rng, 4, 3)
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(data), 2.5).numpy()
    np.testing.assert_allclose(got, data * 2.5, rtol=1e-6)


def test_arange_with_a_symbolic_end_has_a_symbolic_length():
    n = tir.Var("n", "int64")
    s = _sinfo(R.arange(1, relax.PrimValue(n), 2), [])
    assert str(s.shape.values[0]) == str(n // 2)


def test_strided_slice_of_a_symbolic_axis_runs():
    n = tir.Var("n", "int64")
    x = v((n, 6))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(R.strided_slice(x, [0, 1], [1, 0], [7, 6], [3, 2], assume_inbound=True))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(minitvm.compile(bb.get(), target="llvm"), minitvm.cpu())
    data = rand(np.random.default_rng(18), 9, 6)
    np.testing.assert_array_equal(vm["main"](minitvm.nd.array(data)).numpy(), data[1:7:3, 0:6:2])


def test_concat_without_an_axis_joins_flat_tensors():
    rng = np.random.default_rng(19)
    a, b = rand(rng, 3), rand(rng, 5)
    np.testing.assert_array_equal(run_op(lambda x, y: R.concat([x, y], axis=None), a, b), np.concatenate([a, b]))
    with pytest.raises(StructInfoError, match="without an axis the tensors must be 1-D"):
        _sinfo(R.concat([v((2, 2)), v((2, 2), name="y")], axis=None), [])


def test_cumsum_and_cumprod_match_numpy():
    rng = np.random.default_rng(20)
    x = rand(rng, 2, 5, 3, low=0.5, high=1.5)
    np.testing.assert_allclose(run_op(lambda a: R.cumsum(a, axis=1), x), np.cumsum(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(run_op(lambda a: R.cumprod(a, axis=-1), x), np.cumprod(x, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(run_op(lambda a: R.cumsum(a), x), np.cumsum(x), rtol=1e-5)
    got = run_op(lambda a: R.cumsum(a, axis=1, exclusive=True), x)
    np.testing.assert_allclose(got, np.cumsum(x, axis=1) - x, rtol=1e-5, atol=1e-6)
    ints = rng.integers(-3, 4, size=(4, 3)).astype("int32")
    np.testing.assert_array_equal(run_op(lambda a: R.cumsum(a, axis=0, dtype="int64"), ints),
                                  np.cumsum(ints, axis=0, dtype="int64"))


def test_einsum_matches_numpy():
    rng = np.random.default_rng(21)
    a, b = rand(rng, 2, 3), rand(rng, 3, 4)
    np.testing.assert_allclose(run_op(lambda x, y: R.einsum((x, y), "ij,jk->ik"), a, b), a @ b, rtol=1e-5)
    c = rand(rng, 1, 3)  # a size-1 dimension broadcasts against the other operand's
    np.testing.assert_allclose(run_op(lambda x, y: R.einsum((x, y), "ij, ij -> i"), a, c),
                               np.einsum("ij,ij->i", a, np.broadcast_to(c, a.shape)), rtol=1e-5)
    d = rand(rng, 3, 3)
    np.testing.assert_allclose(run_op(lambda x: R.einsum((x,), "ii"), d), np.trace(d), rtol=1e-5)
    with pytest.raises(StructInfoError, match="has 1 letters for a 2-d operand"):
        _sinfo(R.einsum((v((2, 3)),), "i->i"), [])
