"""relax.op.quantize / dequantize: TVM's struct-info rules and errors (tests/python/relax/
test_op_qdq.py's cases and more), the TVMScript round trip, and legalized kernels against numpy."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.ir import Op
from minitvm.relax import op as R
from minitvm.relax.struct_info import StructInfoError

from ._run import rand, run_op


def v(name, shape, dtype):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def _infer(call):
    bb = relax.BlockBuilder()
    return bb.normalize(call).struct_info


def _check(call, shape, dtype):
    minitvm.ir.assert_structural_equal(_infer(call), relax.TensorStructInfo(shape, dtype))


X, DX = v("x", (2, 3), "float32"), v("dx", (2, 3), "uint8")
S, ZP = v("s", (3,), "float32"), v("zp", (3,), "int8")


def test_ops_and_struct_info_as_tvm():
    assert R.quantize(X, S, ZP, 1, "int8").op == Op.get("relax.quantize")
    assert R.dequantize(DX, S, ZP, 1, "float32").op == Op.get("relax.dequantize")
    _check(R.quantize(X, S, ZP, 1, "int8"), (2, 3), "int8")
    _check(R.dequantize(DX, S, ZP, 1, "float32"), (2, 3), "float32")
    # rank 0: per-tensor parameters only
    x0, dx0 = v("x", (), "float32"), v("dx", (), "uint8")
    s0, z0 = v("s", (), "float32"), v("zp", (), "uint8")
    _check(R.quantize(x0, s0, z0, 0, "uint8"), (), "uint8")
    _check(R.dequantize(dx0, s0, z0, 0, "float32"), (), "float32")
    for call in (R.quantize(x0, v("s", (2,), "float32"), v("zp", (2,), "uint8"), 0, "uint8"),
                 R.dequantize(dx0, v("s", (2,), "float32"), v("zp", (2,), "uint8"), 0, "float32")):
        with pytest.raises(ValueError, match="scalar or singleton tensors"):
            _infer(call)
    # float8 both ways, with a float16 zero point
    n = tir.Var("n", "int64")
    for f8 in ("float8_e4m3fn", "float8_e5m2"):
        _check(R.quantize(v("x", (n, 3), "float32"), S, v("zp", (3,), "float16"), 1, f8), (n, 3), f8)
        _check(R.dequantize(v("dx", (n, 3), f8), S, v("zp", (3,), "float16"), 1, "float32"), (n, 3), "float32")


def test_unknown_dtype_anywhere_gives_an_unknown_dtype():
    xu = v("x", (2, 3), None)
    _check(R.quantize(xu, S, ZP, 1, "int8"), (2, 3), None)
    _check(R.quantize(DX, v("s", (3,), None), ZP, 1, "int8"), (2, 3), None)
    _check(R.quantize(DX, S, v("zp", (3,), None), 1, "int8"), (2, 3), None)
    _check(R.dequantize(xu, S, ZP, 1, "float32"), (2, 3), None)


def test_symbolic_channels_must_be_provably_equal():
    n = tir.Var("n", "int64")
    _check(R.quantize(v("x", (n, 3), "float32"), S, ZP, 1, "int8"), (n, 3), "int8")
    _check(R.quantize(v("x", (3, n), "float32"), v("s", (n,), "float32"), v("z", (1,), "int8"),
                      1, "int8"), (3, n), "int8")
    with pytest.raises(StructInfoError, match="Size mismatch: relax.quantize: the input shape at dim 1 is 'n', "
                                              "but size of scale param is '3'"):
        _infer(R.quantize(v("x", (3, n), "float32"), S, ZP, 1, "int8"))


@pytest.mark.parametrize("call, match", [
    (lambda: R.quantize(X, S, ZP, 1, "int32"), "out_dtype must be one of int8, uint8, int16, uint16"),
    (lambda: R.dequantize(DX, S, ZP, 1, "int8"), "out_dtype must be one of float16, float32"),
    (lambda: R.quantize(DX, S, ZP, 1, "int8"), "data must have dtype float16, float32, got"),
    (lambda: R.dequantize(v("d", (2, 3), "int64"), S, ZP, 1), "data must have dtype int8"),
    (lambda: R.quantize(X, v("s", (3,), "int32"), ZP, 1), "scale must have dtype float16, float32"),
    (lambda: R.quantize(X, S, v("z", (3,), "float32"), 1), "zero_point must have dtype int8, .*float16, got"),
    (lambda: R.quantize(X, S, ZP, 2), r"axis param is out of range \(2\)"),
    (lambda: R.dequantize(DX, S, ZP, -3), r"axis param is out of range \(-3\)"),
    (lambda: R.quantize(X, S, ZP, 0), "input shape at dim 0 is '2', but size of scale param is '3'"),
    (lambda: R.quantize(X, v("s", (3, 1), "float32"), ZP, 1), "scale must be a scalar or 1-d"),
])
def test_errors_name_the_op_and_the_argument(call, match):
    with pytest.raises(StructInfoError, match=match):
        _infer(call())


def test_tvmscript_round_trip():
    from minitvm.script import from_source
    from minitvm.script import ir as I
    from minitvm.script import relax as RS

    @I.ir_module
    class Mod:
        @RS.function
        def main(x: RS.Tensor((4, 8), "float32"), s: RS.Tensor((8,), "float32"), z: RS.Tensor((8,), "int8")):
            q = RS.quantize(x, s, z, axis=1, out_dtype="int8")
            d = RS.dequantize(q, s, z, out_dtype="float16")
            return d

    text = Mod.script()
    assert 'R.quantize(x, s, z, axis=1, out_dtype="int8")' in text
    assert 'R.dequantize(q, s, z, axis=-1, out_dtype="float16")' in text
    minitvm.ir.assert_structural_equal(from_source(text), Mod)


def test_quantize_per_channel_uint8_and_int16_match_numpy():
    rng = np.random.default_rng(30)
    x = rand(rng, 4, 5, 3)
    scale = rand(rng, 5, low=0.005, high=0.012)
    for dtype, lo, hi in (("uint8", 0, 255), ("int16", -32768, 32767)):
        zp = rng.integers(100, 150, size=5).astype("uint8" if dtype == "uint8" else "int16")
        got = run_op(lambda a, s, z, d=dtype: R.quantize(a, s, z, axis=1, out_dtype=d), x, scale, zp)
        want = np.clip(np.round(x / scale[:, None]) + zp[:, None], lo, hi).astype(dtype)
        np.testing.assert_array_equal(got, want)
        if dtype == "uint8":
            assert (got == lo).any() and (got == hi).any()  # both ends of the clip were exercised


def test_per_tensor_parameters_constant_scalar_and_singleton():
    rng = np.random.default_rng(31)
    x = rand(rng, 3, 7)
    # a constant scalar scale and zero point are folded into the kernel (as TVM's legalization)
    got = run_op(lambda a: R.quantize(a, relax.const(0.02, "float32"), relax.const(3, "int8"), out_dtype="int8"), x)
    np.testing.assert_array_equal(got, np.clip(np.round(x / np.float32(0.02)) + 3, -128, 127).astype("int8"))
    # a (1,) scale and zero point on data with 7 channels: one value for all of them
    q = rng.integers(-128, 128, size=(3, 7)).astype("int8")
    s1, z1 = np.array([0.05], "float32"), np.array([-4], "int8")
    got = run_op(lambda a, s, z: R.dequantize(a, s, z, axis=1), q, s1, z1)
    np.testing.assert_allclose(got, (q.astype("int32") + 4) * np.float32(0.05), rtol=1e-6)


def test_dequantize_to_float16_clips_to_its_range():
    rng = np.random.default_rng(32)
    q = rng.integers(-30000, 30000, size=(2, 6)).astype("int16")
    scale = rand(rng, 6, low=0.5, high=4.0)
    zp = rng.integers(-10, 10, size=6).astype("int16")
    got = run_op(lambda a, s, z: R.dequantize(a, s, z, axis=-1, out_dtype="float16"), q, scale, zp)
    exact = (q.astype("int32") - zp) * scale
    assert got.dtype == np.float16 and (np.abs(exact) > 65504).any()
    np.testing.assert_allclose(got.astype("float32"), np.clip(exact, -65504, 65504).astype("float16"), rtol=1e-3)
