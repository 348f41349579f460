"""C math library intrinsics (``T.exp10``, ``T.atan2`` ...), ``T.popcount``, ``T.isnan`` and
``T.ceildiv``: built through LLVM and run by the interpreter, both against numpy."""

import numpy as np

import minitvm
from minitvm import ir, tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.target import interpreter


@T.prim_func
def _math(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"), C: T.Buffer((32,), "int32"),
          D: T.Buffer((32,), "int32")):
    for i in range(32):
        B[i] = (T.exp10(A[i]) + T.log1p(T.fabs(A[i])) + T.tan(A[i]) + T.atan2(A[i], T.float32(2))
                + T.hypot(A[i], A[i]) + T.fmod(A[i], T.float32(0.3)) + T.sinh(A[i]) + T.asinh(A[i])
                + T.copysign(T.float32(1), A[i]) + T.atan(A[i]) + T.cosh(A[i]))
        C[i] = T.popcount(C[i]) + T.ceildiv(C[i], 4)
        D[i] = T.Cast("int32", T.isnan(T.log(A[i])))


def _reference(a, c):
    with np.errstate(invalid="ignore"):
        b = (10 ** a + np.log1p(abs(a)) + np.tan(a) + np.arctan2(a, 2) + np.hypot(a, a)
             + np.fmod(a, np.float32(0.3)) + np.sinh(a) + np.arcsinh(a) + np.copysign(1, a) + np.arctan(a)
             + np.cosh(a))
        d = np.isnan(np.log(a)).astype("int32")
    return b, np.bitwise_count(c) + (c + 3) // 4, d


def test_math_intrinsics_print_parse_and_compute():
    text = _math.script()
    for name in ("exp10", "log1p", "tan", "atan2", "hypot", "fmod", "popcount", "isnan", "copysign"):
        assert f"T.{name}(" in text
    assert "(C[i] + 3) // 4" in text  # ceildiv is floor division of a + b - 1, as in TVM
    assert_structural_equal(from_source(text), _math)
    rng = np.random.default_rng(5)
    a = rng.standard_normal(32).astype("float32")
    c = rng.integers(0, 1000, 32).astype("int32")
    ref_b, ref_c, ref_d = _reference(a, c)
    lib = minitvm.build(_math, target="llvm")
    out = [minitvm.nd.array(x) for x in (a, np.zeros(32, "float32"), c, np.zeros(32, "int32"))]
    lib["_math"](*out)
    np.testing.assert_allclose(out[1].numpy(), ref_b, rtol=1e-4)
    np.testing.assert_array_equal(out[2].numpy(), ref_c)
    np.testing.assert_array_equal(out[3].numpy(), ref_d)
    arrays = [a.copy(), np.zeros(32, "float32"), c.copy(), np.zeros(32, "int32")]
    interpreter.run_prim_func(_math, arrays)
    np.testing.assert_allclose(arrays[1], ref_b, rtol=1e-4)
    np.testing.assert_array_equal(arrays[2], ref_c)
    np.testing.assert_array_equal(arrays[3], ref_d)


def test_ir_range_takes_begin_and_end():
    r = ir.Range(64, 128)
    assert isinstance(r, tir.Range) and (r.min.value, r.extent.value) == (64, 64)
    assert ir.Range(8).extent.value == 8 and ir.Range(8).min.value == 0
    assert ir.Range.from_min_extent(4, 3).extent.value == 3
