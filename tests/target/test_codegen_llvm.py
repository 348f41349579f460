"""LLVM codegen: every expression kind and dtype against numpy, on hand-lowered PrimFuncs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.target.codegen.llvm import build_llvm
from minitvm.tir.tensor_intrin import x86

N = 64
RNG = np.random.default_rng(0)
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]


def ewise(fn, in_dtypes, out_dtype, n=N, kind="serial", noalias=True):
    """A lowered kernel ``B[i] = fn(A0[i], A1[i], ...)`` over flat buffers of length n."""
    bufs = [tir.decl_buffer((n,), d, f"A{k}") for k, d in enumerate(in_dtypes)]
    out = tir.decl_buffer((n,), out_dtype, "B")
    i = tir.Var("i", "int32")
    body = tir.For(i, tir.const(0), tir.const(n), kind,
                   tir.BufferStore(out, fn(*[b[i] for b in bufs]), (i,)))
    params = [tir.Var(b.name, "handle") for b in bufs + [out]]
    return tir.PrimFunc(tuple(params), dict(zip(params, bufs + [out])), body,
                        attrs={"tir.noalias": noalias})


def run(func, *arrays, out_dtype):
    lib = build_llvm({"f": func})
    out = np.zeros(arrays[0].shape if arrays else (N,), dtype=out_dtype)
    lib["f"](*arrays, out)
    return out


def rand(dtype, n=N, low=None, high=None, nonzero=False):
    if dtype == "bool":
        return RNG.integers(0, 2, n).astype(bool)
    if dtype.startswith("float"):
        return RNG.uniform(low if low is not None else -10, high if high is not None else 10, n).astype(dtype)
    info = np.iinfo(dtype)
    lo = info.min if low is None else low
    hi = info.max if high is None else high
    x = RNG.integers(lo, hi, n, dtype=dtype, endpoint=True)
    if nonzero:
        x[x == 0] = 1
    return x


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_arith_wraps_like_numpy(dtype, op):
    a, b = rand(dtype), rand(dtype)
    f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    with np.errstate(over="ignore"):
        want = f(a, b)
    got = run(ewise(f, [dtype, dtype], dtype), a, b, out_dtype=dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_trunc_div_mod_signed(dtype):
    a, b = rand(dtype, low=-100, high=100), rand(dtype, low=-9, high=9, nonzero=True)
    q = run(ewise(tir.truncdiv, [dtype, dtype], dtype), a, b, out_dtype=dtype)
    r = run(ewise(tir.truncmod, [dtype, dtype], dtype), a, b, out_dtype=dtype)
    np.testing.assert_array_equal(q, np.trunc(a / b).astype(dtype))
    np.testing.assert_array_equal(r, np.fmod(a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_floordiv_floormod(dtype):
    signed = not dtype.startswith("u")
    a = rand(dtype, low=-100 if signed else 0, high=100)
    b = rand(dtype, low=-9 if signed else 1, high=9, nonzero=True)
    q = run(ewise(tir.floordiv, [dtype, dtype], dtype), a, b, out_dtype=dtype)
    r = run(ewise(tir.floormod, [dtype, dtype], dtype), a, b, out_dtype=dtype)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


def test_floordiv_negative_operands_exhaustive():
    vals = np.array([-7, -6, -1, 0, 1, 6, 7], dtype="int32")
    a = np.repeat(vals, 4)
    b = np.tile(np.array([-3, -2, 2, 3], dtype="int32"), len(vals))
    f_div = ewise(tir.floordiv, ["int32", "int32"], "int32", n=len(a))
    f_mod = ewise(tir.floormod, ["int32", "int32"], "int32", n=len(a))
    out = np.zeros_like(a)
    build_llvm({"f": f_div})["f"](a, b, out)
    np.testing.assert_array_equal(out, a // b)
    build_llvm({"f": f_mod})["f"](a, b, out)
    np.testing.assert_array_equal(out, a % b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_div_floordiv_floormod(dtype):
    a, b = rand(dtype), rand(dtype, low=0.5, high=4) * np.where(RNG.random(N) < 0.5, -1, 1).astype(dtype)
    np.testing.assert_allclose(run(ewise(lambda x, y: x / y, [dtype] * 2, dtype), a, b, out_dtype=dtype),
                               a / b, rtol=1e-6)
    np.testing.assert_allclose(run(ewise(tir.floordiv, [dtype] * 2, dtype), a, b, out_dtype=dtype),
                               np.floor(a / b), rtol=1e-6)
    np.testing.assert_allclose(run(ewise(tir.floormod, [dtype] * 2, dtype), a, b, out_dtype=dtype),
                               a - np.floor(a / b) * b, rtol=1e-5, atol=1e-5)


def test_integer_division_by_zero_is_an_error_not_a_crash():
    # the meaning is minitvm.tir.semantics': an error, never a trap or a made-up value
    a = np.array([5, -5, np.iinfo("int32").min, 7] * 4, dtype="int32")
    b = np.array([0, 0, -1, 2] * 4, dtype="int32")
    for op in (tir.truncdiv, tir.truncmod, tir.floordiv, tir.floormod):
        f = build_llvm({"f": ewise(op, ["int32"] * 2, "int32", n=len(a))})["f"]
        with pytest.raises(RuntimeError, match="integer division by zero"):
            f(a, b, np.full_like(a, 99))
        out = np.full_like(a, 99)
        nonzero = np.where(b == 0, 3, b).astype("int32")
        f(a, nonzero, out)
        assert out[3] == op(tir.const(7), tir.const(2)).value
        # INT_MIN / -1 overflows: it wraps (INT_MIN, remainder 0) instead of trapping
        assert out[2] == (np.iinfo("int32").min if op in (tir.truncdiv, tir.floordiv) else 0)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_min_max(dtype):
    a, b = rand(dtype), rand(dtype)
    np.testing.assert_array_equal(run(ewise(tir.min, [dtype] * 2, dtype), a, b, out_dtype=dtype),
                                  np.minimum(a, b))
    np.testing.assert_array_equal(run(ewise(tir.max, [dtype] * 2, dtype), a, b, out_dtype=dtype),
                                  np.maximum(a, b))


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "uint64", "float32", "float64", "bool"])
@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_write_bool(dtype, cmp):
    a = rand(dtype, low=0, high=3) if dtype != "bool" else rand(dtype)
    b = rand(dtype, low=0, high=3) if dtype != "bool" else rand(dtype)
    ops = {"eq": (tir.op.equal, np.equal), "ne": (tir.op.not_equal, np.not_equal),
           "lt": (tir.op.less, np.less), "le": (tir.op.less_equal, np.less_equal),
           "gt": (tir.op.greater, np.greater), "ge": (tir.op.greater_equal, np.greater_equal)}
    tf, nf = ops[cmp]
    got = run(ewise(tf, [dtype] * 2, "bool"), a, b, out_dtype="bool")
    np.testing.assert_array_equal(got, nf(a, b))
    assert got.view(np.uint8).max() <= 1  # stored as 0/1 bytes, like numpy


def test_nan_comparisons():
    a = np.array([np.nan, 1.0, np.nan, 2.0] * 4, dtype="float32")
    b = np.array([np.nan, np.nan, 1.0, 2.0] * 4, dtype="float32")
    for tf, nf in [(tir.op.not_equal, np.not_equal), (tir.op.equal, np.equal), (tir.op.less, np.less)]:
        out = np.zeros(len(a), bool)
        build_llvm({"f": ewise(tf, ["float32"] * 2, "bool", n=len(a))})["f"](a, b, out)
        np.testing.assert_array_equal(out, nf(a, b))
    out = np.zeros(len(a), "float32")
    build_llvm({"f": ewise(tir.max, ["float32"] * 2, "float32", n=len(a))})["f"](a, b, out)
    np.testing.assert_array_equal(out, np.maximum(a, b))


def test_logical_ops():
    a, b = rand("bool"), rand("bool")
    np.testing.assert_array_equal(run(ewise(tir.op.logical_and, ["bool"] * 2, "bool"), a, b,
                                      out_dtype="bool"), a & b)
    np.testing.assert_array_equal(run(ewise(tir.op.logical_or, ["bool"] * 2, "bool"), a, b,
                                      out_dtype="bool"), a | b)
    np.testing.assert_array_equal(run(ewise(tir.op.logical_not, ["bool"], "bool"), a, out_dtype="bool"), ~a)


CASTS = ["bool", "int8", "int32", "int64", "uint8", "uint32", "float32", "float64"]


@pytest.mark.parametrize("src", CASTS)
@pytest.mark.parametrize("dst", CASTS)
def test_casts(src, dst):
    a = rand(src, low=0, high=100) if src != "bool" else rand(src)
    if src.startswith("float"):
        a = (a * 1.7).astype(src)
    got = run(ewise(lambda x: tir.Cast(dst, x) if src != dst else x, [src], dst), a, out_dtype=dst)
    want = a.astype(dst)
    if src.startswith("float") and dst != "bool" and not dst.startswith("float"):
        # float -> int saturates (int8: 170.0 -> 127), as minitvm.tir.semantics decides
        info = np.iinfo(dst)
        want = np.clip(np.trunc(a), info.min, info.max).astype(dst)
    np.testing.assert_array_equal(got, want)


def test_signed_to_wider_and_unsigned_casts():
    a = np.array([-1, -128, 127, 5] * 4, dtype="int8")
    for dst in ("int32", "int64", "uint8", "uint16", "float32"):
        got = run(ewise(lambda x, d=dst: tir.Cast(d, x), ["int8"], dst, n=len(a)), a, out_dtype=dst)
        np.testing.assert_array_equal(got, a.astype(dst))
    u = np.array([255, 0, 200, 1] * 4, dtype="uint8")
    got = run(ewise(lambda x: tir.Cast("int32", x), ["uint8"], "int32", n=len(u)), u, out_dtype="int32")
    np.testing.assert_array_equal(got, u.astype("int32"))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "abs",
                                  "floor", "ceil", "round", "sin", "cos", "exp2", "log2"])
def test_intrinsics(dtype, name):
    import math
    positive = name in ("log", "sqrt", "rsqrt", "log2")
    a = rand(dtype, low=0.1 if positive else -5, high=5)
    a[:4] = np.array([0.5, 1.5, 2.5, -2.5] if not positive else [0.5, 1.5, 2.5, 3.5], dtype)  # ties
    ref = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
           "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
           "erf": np.vectorize(math.erf), "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
           "round": np.round, "sin": np.sin, "cos": np.cos, "exp2": np.exp2, "log2": np.log2}[name]
    got = run(ewise(getattr(tir, name), [dtype], dtype), a, out_dtype=dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, ref(a.astype("float64")).astype(dtype), rtol=tol, atol=tol)


def test_float16_storage_and_arithmetic():
    a, b = rand("float16", low=-4, high=4), rand("float16", low=-4, high=4)
    got = run(ewise(lambda x, y: x * y + x, ["float16"] * 2, "float16"), a, b, out_dtype="float16")
    np.testing.assert_allclose(got, a * b + a, rtol=2e-3, atol=2e-3)
    got = run(ewise(lambda x: tir.Cast("float32", x), ["float16"], "float32"), a, out_dtype="float32")
    np.testing.assert_array_equal(got, a.astype("float32"))


def test_pow():
    a, b = rand("float32", low=0.1, high=3), rand("float32", low=-2, high=2)
    np.testing.assert_allclose(run(ewise(tir.pow, ["float32"] * 2, "float32"), a, b, out_dtype="float32"),
                               np.power(a, b), rtol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["serial", "vectorized"])
def test_pow_by_a_small_whole_exponent_is_multiplied_out(dtype, kind):
    """``pow(x, 3.0)`` (GPT-2's GELU) and ``pow(x, 2.0)``: multiplications, not a ``powf`` call per
    element that kept the loop scalar; numpy's result on 37 elements (not a multiple of a vector)."""
    a = rand(dtype, n=37, low=-3, high=3)
    func = ewise(lambda x: tir.pow(x, tir.const(3.0, dtype)) + tir.pow(x, tir.const(2.0, dtype)), [dtype], dtype,
                 n=37, kind=kind)
    lib = build_llvm({"f": func})
    assert "pow" not in lib.get_source("ll"), lib.get_source("ll")
    out = np.zeros(37, dtype)
    lib["f"](a, out)
    np.testing.assert_allclose(out, np.power(a, 3) + np.power(a, 2), rtol=1e-6, atol=1e-6)
    # a fractional exponent is still the C library's pow
    func = ewise(lambda x: tir.pow(x, tir.const(2.5, dtype)), [dtype], dtype, n=37, kind=kind)
    assert "pow" in build_llvm({"f": func}).get_source("ll")


def test_select_and_if_then_else():
    a, b = rand("float32"), rand("float32")
    got = run(ewise(lambda x, y: tir.Select(x > y, x - y, y * 2.0), ["float32"] * 2, "float32"), a, b,
              out_dtype="float32")
    np.testing.assert_allclose(got, np.where(a > b, a - b, b * 2), rtol=1e-6)
    got = run(ewise(lambda x, y: tir.if_then_else(x > y, x, y + 1.0), ["float32"] * 2, "float32"), a, b,
              out_dtype="float32")
    np.testing.assert_allclose(got, np.where(a > b, a, b + 1), rtol=1e-6)


def test_if_then_else_evaluates_only_the_taken_side():
    # the untaken side reads far out of bounds: evaluating it would crash
    n = 32
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i", "int32")
    far = tir.BufferLoad(A, (i * 100_000_000,))
    value = tir.if_then_else(i < 1, far, A[i] * 2.0)
    pa, pb = tir.Var("A", "handle"), tir.Var("B", "handle")
    f = tir.PrimFunc((pa, pb), {pa: A, pb: B},
                     tir.For(i, tir.const(0), tir.const(n), "serial", tir.BufferStore(B, value, (i,))))
    a = rand("float32", n)
    b = np.zeros(n, "float32")
    build_llvm({"f": f})["f"](a, b)
    np.testing.assert_allclose(b[1:], a[1:] * 2)
    assert b[0] == a[0]


def test_let_expression_and_let_stmt():
    x = tir.Var("x", "float32")
    got = run(ewise(lambda a: tir.Let(x, a * 2.0, x * x + x), ["float32"], "float32"),
              a := rand("float32"), out_dtype="float32")
    np.testing.assert_allclose(got, (2 * a) ** 2 + 2 * a, rtol=1e-5)
    A = tir.decl_buffer((N,), "int64", "A")
    i, k = tir.Var("i", "int32"), tir.Var("k", "int64")
    body = tir.For(i, tir.const(0), tir.const(N), "serial",
                   tir.LetStmt(k, tir.Cast("int64", i) * 3, tir.BufferStore(A, k + 1, (i,))))
    pa = tir.Var("A", "handle")
    out = np.zeros(N, "int64")
    build_llvm({"f": tir.PrimFunc((pa,), {pa: A}, body)})["f"](out)
    np.testing.assert_array_equal(out, np.arange(N) * 3 + 1)


def _flat_kernel(body_fn, shapes, dtype="float32", scalars=()):
    bufs = [tir.decl_buffer((s,), dtype, name) for name, s in shapes]
    params = [tir.Var(b.name, "handle") for b in bufs] + list(scalars)
    return tir.PrimFunc(tuple(params), dict(zip(params, bufs)), body_fn(*bufs), attrs={"tir.noalias": True})


def test_if_stmt_and_int64_indices():
    i = tir.Var("i", "int64")

    def body(A, B):
        return tir.For(i, tir.const(0, "int64"), tir.const(N, "int64"), "serial",
                       tir.IfThenElse(tir.floormod(i, 2) == 0,
                                      tir.BufferStore(B, A[i], (i,)),
                                      tir.BufferStore(B, -A[i], (i,))))

    a, b = rand("float32"), np.zeros(N, "float32")
    build_llvm({"f": _flat_kernel(body, [("A", N), ("B", N)])})["f"](a, b)
    np.testing.assert_array_equal(b, np.where(np.arange(N) % 2 == 0, a, -a))


def test_assert_stmt_raises_with_message():
    n = tir.Var("n", "int32")

    def body(A):
        return tir.AssertStmt(n > 0, "n must be positive",
                              tir.BufferStore(A, tir.Cast("float32", n), (tir.const(0),)))

    lib = build_llvm({"f": _flat_kernel(body, [("A", 4)], scalars=[n])})
    a = np.zeros(4, "float32")
    lib["f"](a, 3)
    assert a[0] == 3
    with pytest.raises(RuntimeError, match="n must be positive"):
        lib["f"](a, -1)


@pytest.mark.parametrize("size", [16, 1 << 16, (1 << 16) + 3])  # stack (alloca), heap (aligned_alloc)
def test_allocate(size):
    i = tir.Var("i", "int32")
    tmp = tir.decl_buffer((size,), "float32", "tmp")

    def body(A, B):
        return tir.Allocate(tmp, tir.seq(
            tir.For(i, tir.const(0), tir.const(size), "serial", tir.BufferStore(tmp, A[i] + 1.0, (i,))),
            tir.For(i, tir.const(0), tir.const(size), "serial",
                    tir.BufferStore(B, tmp[size - 1 - i] * 2.0, (i,)))))

    a, b = rand("float32", size), np.zeros(size, "float32")
    lib = build_llvm({"f": _flat_kernel(body, [("A", size), ("B", size)])})
    lib["f"](a, b)
    np.testing.assert_allclose(b, (a[::-1] + 1) * 2, rtol=1e-6)
    # the heap's arrays are aligned to a cache line, their size rounded up to whole lines
    heap = re.search(r"@aligned_alloc\(i64 64, i64 (\d+)\)", lib.get_source("ll"))
    assert (heap is not None) == (size * 4 > 32 * 1024)
    assert heap is None or int(heap.group(1)) == -(-size * 4 // 64) * 64


def test_scalar_params():
    alpha, k, flag = tir.Var("alpha", "float64"), tir.Var("k", "int64"), tir.Var("flag", "bool")
    i = tir.Var("i", "int32")

    def body(A, B):
        v = A[i] * tir.Cast("float32", alpha) + tir.Cast("float32", k)
        return tir.For(i, tir.const(0), tir.const(N), "serial",
                       tir.BufferStore(B, tir.Select(flag, v, A[i]), (i,)))

    lib = build_llvm({"f": _flat_kernel(body, [("A", N), ("B", N)], scalars=[alpha, k, flag])})
    a, b = rand("float32"), np.zeros(N, "float32")
    lib["f"](a, b, 0.5, 3, True)
    np.testing.assert_allclose(b, a * 0.5 + 3, rtol=1e-6)
    lib["f"](a, b, 0.5, 3, False)
    np.testing.assert_array_equal(b, a)


def test_unrolled_loops():
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    m = tir.Var("m", "int32")

    def body(A, B):
        return tir.For(i, tir.const(0), tir.const(N // 4), "serial",
                       tir.For(j, tir.const(0), tir.const(4), "unrolled",
                               tir.BufferStore(B, A[i * 4 + j] + tir.Cast("float32", j), (i * 4 + j,))))

    lib = build_llvm({"f": _flat_kernel(body, [("A", N), ("B", N)])})
    a, b = rand("float32"), np.zeros(N, "float32")
    lib["f"](a, b)
    np.testing.assert_allclose(b, a + np.tile(np.arange(4), N // 4), rtol=1e-6)

    def body2(A, B):  # symbolic extent: unrolled by LLVM from metadata
        return tir.For(i, tir.const(0), m, "unrolled", tir.BufferStore(B, A[i] * 3.0, (i,)))

    lib = build_llvm({"f": _flat_kernel(body2, [("A", N), ("B", N)], scalars=[m])})
    assert "llvm.loop.unroll.enable" in lib.get_source("ll-raw")
    long_loop = _flat_kernel(lambda A, B: tir.For(i, tir.const(0), tir.const(1000), "unrolled",
                                                  tir.BufferStore(B, A[i], (i,))), [("A", 1000), ("B", 1000)])
    assert "llvm.loop.unroll.enable" in build_llvm({"f": long_loop}).get_source("ll-raw")
    b[:] = 0
    lib["f"](a, b, 10)
    np.testing.assert_allclose(b[:10], a[:10] * 3, rtol=1e-6)
    assert (b[10:] == 0).all()


def test_vectorized_loop_emits_wide_vector_instructions():
    n = 1024
    f = ewise(lambda x, y: x * y + 1.0, ["float32"] * 2, "float32", n=n, kind="vectorized")
    lib = build_llvm({"f": f})
    assert "llvm.loop.vectorize.enable" in lib.get_source("ll-raw")
    # the widest registers of the CPU built for: 512 bits with AVX-512, 256 with AVX2 alone
    assert "zmm" in build_llvm({"f": f}, target=x86.AVX512_TARGET).get_source("asm")
    assert "ymm" in build_llvm({"f": f}, target="llvm -mcpu=haswell").get_source("asm")
    a, b = rand("float32", n), rand("float32", n)
    out = np.zeros(n, "float32")
    lib["f"](a, b, out)
    # may be fused into one FMA: near a sum that cancels, off by up to an ulp of the product (|a * b| <= 100)
    np.testing.assert_allclose(out, a * b + 1, rtol=1e-5, atol=1e-5)


def test_pass_context_bounds_check_turns_bad_accesses_into_errors():
    from minitvm.transform import PassContext

    n = 16
    i = tir.Var("i", "int32")
    shift = tir.Var("shift", "int32")

    def body(A, B):
        return tir.For(i, tir.const(0), tir.const(n), "serial",
                       tir.BufferStore(B, A[i + shift] * 2.0, (i,)))

    func = _flat_kernel(body, [("A", n), ("B", n)], scalars=[shift])
    with PassContext(config={"tir.bounds_check": True}):
        lib = minitvm.build(func, name="f")
    a, b = rand("float32", n), np.zeros(n, "float32")
    lib["f"](a, b, 0)
    np.testing.assert_allclose(b, a * 2)
    from minitvm.runtime import BoundsError

    # the first bad access: i = 15 for shift 1, i = 0 for the negative shifts
    for bad, index in ((1, 16), (-1, -1), (1 << 20, 1 << 20)):
        with pytest.raises(BoundsError, match=rf"^f: buffer A: index {index} is out of bounds for extent 16 "
                                              r"\(at A\[i \+ shift\]\)$"):
            lib["f"](a, b, bad)


def test_pass_context_disable_vectorize():
    from minitvm.transform import PassContext

    f = ewise(lambda x, y: x * y, ["float32"] * 2, "float32", n=1024, kind="vectorized")
    with PassContext(config={"tir.disable_vectorize": True}):
        lib = build_llvm({"f": f})
    assert "<16 x float>" not in lib.get_source("ll") and "<8 x float>" not in lib.get_source("ll")
    a, b, out = rand("float32", 1024), rand("float32", 1024), np.zeros(1024, "float32")
    lib["f"](a, b, out)
    np.testing.assert_allclose(out, a * b, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 1000])
def test_parallel_loop(n):
    f = ewise(lambda x: x * 2.0 + 1.0, ["float32"], "float32", n=n, kind="parallel")
    a, out = rand("float32", n), np.zeros(n, "float32")
    lib = build_llvm({"f": f})
    lib["f"](a, out)
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)
    from minitvm.target.codegen.thread_pool import PARALLEL_RUN_SYMBOL, pool_threads

    if pool_threads() > 1:
        assert PARALLEL_RUN_SYMBOL in lib.get_source("ll")


def test_parallel_loop_inside_serial_loop_with_captures():
    # the parallel body uses an outer loop variable, a scalar, a let-bound value and an allocation
    rows, cols = 8, 100
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    s = tir.Var("s", "float32")
    k = tir.Var("k", "int32")
    tmp = tir.decl_buffer((cols,), "float32", "tmp")

    def body(A, B):
        inner = tir.For(j, tir.const(0), tir.const(cols), "parallel",
                        tir.BufferStore(B, A[k + j] * s + tmp[j], (k + j,)))
        fill = tir.For(j, tir.const(0), tir.const(cols), "serial",
                       tir.BufferStore(tmp, tir.Cast("float32", j), (j,)))
        return tir.Allocate(tmp, tir.seq(fill, tir.For(i, tir.const(0), tir.const(rows), "serial",
                                                       tir.LetStmt(k, i * cols, inner))))

    lib = build_llvm({"f": _flat_kernel(body, [("A", rows * cols), ("B", rows * cols)], scalars=[s])})
    a, b = rand("float32", rows * cols), np.zeros(rows * cols, "float32")
    lib["f"](a, b, 1.5)
    # a * s + tmp may become one fused multiply-add (one rounding instead of two): near a sum that
    # cancels, the two differ by up to an ulp of the product (|a * s| <= 15), not of the result
    np.testing.assert_allclose(b, a * 1.5 + np.tile(np.arange(cols), rows), rtol=1e-5, atol=4e-6)


def test_assert_inside_parallel_loop_reports():
    n = 16
    i = tir.Var("i", "int32")

    def body(A):
        return tir.For(i, tir.const(0), tir.const(n), "parallel",
                       tir.AssertStmt(A[i] >= 0.0, "negative input", tir.BufferStore(A, A[i] + 1.0, (i,))))

    lib = build_llvm({"f": _flat_kernel(body, [("A", n)])})
    a = np.ones(n, "float32")
    lib["f"](a)
    assert (a == 2).all()
    a[5] = -1
    with pytest.raises(RuntimeError, match="negative input"):
        lib["f"](a)


def test_symbolic_shape_var_passed_to_kernel():
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i", "int32")
    pa, pb = tir.Var("A", "handle"), tir.Var("B", "handle")
    f = tir.PrimFunc((pa, pb), {pa: A, pb: B},
                     tir.For(i, tir.const(0), n, "vectorized", tir.BufferStore(B, A[i] + 1.0, (i,))))
    lib = build_llvm({"f": f})
    for size in (0, 1, 37, 1000):
        a, b = rand("float32", size), np.zeros(size, "float32")
        lib["f"](a, b)
        np.testing.assert_allclose(b, a + 1)


def test_multiple_functions_in_one_module():
    f1 = ewise(lambda x: x + 1.0, ["float32"], "float32")
    f2 = ewise(lambda x: x * 3.0, ["float32"], "float32")
    lib = build_llvm({"inc": f1, "triple": f2})
    a, b = rand("float32"), np.zeros(N, "float32")
    lib["inc"](a, b)
    np.testing.assert_allclose(b, a + 1)
    lib["triple"](a, b)
    np.testing.assert_allclose(b, a * 3)
    assert "inc" in lib and "triple" in lib and "nope" not in lib


def test_unlowered_code_is_rejected_clearly():
    A = tir.decl_buffer((4, 4), "float32", "A")
    pa = tir.Var("A", "handle")
    f = tir.PrimFunc((pa,), {pa: A}, tir.BufferStore(A, tir.const(1.0), (tir.const(0), tir.const(0))))
    with pytest.raises(Exception, match="flattened"):
        build_llvm({"f": f})


def test_unrolled_row_computes_a_shared_index_once():
    """Every element of an unrolled row indexes from the same ``i * 8``: emitted once per block
    (FoldingBuilder reuses an equal pure instruction), not once per element and access."""
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")

    def body(A, B):
        return tir.For(i, tir.const(0), tir.const(N // 8), "serial",
                       tir.For(j, tir.const(0), tir.const(8), "unrolled",
                               tir.BufferStore(B, A[i * 8 + j] * 2.0, (i * 8 + j,))))

    lib = build_llvm({"f": _flat_kernel(body, [("A", N), ("B", N)])})
    raw = lib.get_source("ll-raw")
    assert len(re.findall(r"= mul i32 %\"i\", 8", raw)) == 1, raw
    a, b = rand("float32"), np.zeros(N, "float32")
    lib["f"](a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_folding_builder_reuses_only_an_earlier_equal_instruction_of_the_block():
    from llvmlite import ir

    from minitvm.target.codegen.llvm_types import I64, FoldingBuilder

    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [I64, I64]), "g")
    x, y = fn.args
    first, second = fn.append_basic_block("first"), fn.append_basic_block("second")
    b = FoldingBuilder(first)
    m = b.mul(x, ir.Constant(I64, 3))
    assert b.mul(x, ir.Constant(I64, 3)) is m  # the same value again
    assert b.mul(x, ir.Constant(I64, 4)) is not m and b.mul(y, ir.Constant(I64, 3)) is not m
    assert b.add(m, y, flags=("nsw",)) is not b.add(m, y)  # flags differ
    assert b.mul(x, ir.Constant(I64, 3), name="named") is not m
    g = b.gep(x, [y], inbounds=True, source_etype=I64)
    assert b.gep(x, [y], inbounds=True, source_etype=I64) is g
    b.branch(second)
    b.position_at_end(second)
    assert b.mul(x, ir.Constant(I64, 3)) is not m  # another block: m may not dominate it
    b.position_before(first.instructions[0])
    assert b.mul(x, ir.Constant(I64, 3)) is not m  # in the middle: m would come after it


def test_folding_builder_compares_integer_constants_as_llvmlite_does():
    """The reuse key holds an integer constant as its width and number (llvmlite hashes a
    constant by formatting its text at every lookup): equal text reuses, another width, a bool
    spelled ``true`` or a constant in a list of indices compare as their text does."""
    from llvmlite import ir

    from minitvm.target.codegen.llvm_types import I1, I32, I64, FoldingBuilder

    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [I64, I1]), "g")
    x, p = fn.args
    b = FoldingBuilder(fn.append_basic_block("entry"))
    m = b.mul(x, ir.Constant(I64, 7))
    assert b.mul(x, ir.Constant(I64, 7)) is m  # another Constant object, the same text
    z = b.zext(ir.Constant(I32, 5), I64)
    assert b.zext(ir.Constant(I32, 5), I64) is z
    assert b.zext(ir.Constant(ir.IntType(8), 5), I64) is not z  # the same number, another width
    s = b.select(p, ir.Constant(I64, 1), x)
    assert b.select(p, ir.Constant(I64, 1), x) is s
    t = b.and_(p, ir.Constant(I1, True))
    assert b.and_(p, ir.Constant(I1, 1)) is not t  # "i1 1" is not the text "i1 true"
    assert b.and_(p, ir.Constant(I1, True)) is t
    g = b.gep(x, [ir.Constant(I64, 2)], inbounds=True, source_etype=I64)
    assert b.gep(x, [ir.Constant(I64, 2)], inbounds=True, source_etype=I64) is g
    assert b.gep(x, [ir.Constant(I64, 3)], inbounds=True, source_etype=I64) is not g


def test_parallel_chunk_is_inlined_before_it_is_simplified():
    """A parallel loop's chunk function is ``alwaysinline`` (O3 simplifies its body once, in its
    caller); its ``noalias`` buffer parameters survive the inlining as alias scopes."""
    from minitvm.target.codegen.thread_pool import pool_threads

    n = 1000
    f = ewise(lambda x, y: x + y, ["float32"] * 2, "float32", n=n, kind="parallel")
    lib = build_llvm({"f": f})
    a, b, out = rand("float32", n), rand("float32", n), np.zeros(n, "float32")
    lib["f"](a, b, out)
    np.testing.assert_array_equal(out, a + b)
    if pool_threads() > 1:
        assert re.search(r'define internal void @"f\.parallel\d+\.chunk"\(.*alwaysinline', lib.get_source("ll-raw"))
        optimized = lib.get_source("ll")
        assert not re.search(r"define .*\.chunk", optimized) and "!alias.scope" in optimized, optimized


@pytest.mark.parametrize("inner", [3, 128])
def test_loops_around_a_long_loop_are_not_unrolled(inner):
    """A loop of 4 around a long loop (>= LONG_LOOP iterations) carries llvm.loop.unroll.disable
    (LLVM would copy the long loop 4 times, the same code each time); around a short loop it may
    still be unrolled."""
    outer = 4
    i, k = tir.Var("i", "int32"), tir.Var("k", "int32")

    def body(A, B):
        step = tir.BufferStore(B, B[i] + A[i * inner + k], (i,))
        return tir.For(i, tir.const(0), tir.const(outer), "serial",
                       tir.For(k, tir.const(0), tir.const(inner), "serial", step))

    lib = build_llvm({"f": _flat_kernel(body, [("A", outer * inner), ("B", outer)])})
    raw = lib.get_source("ll-raw")
    outer_latch = re.search(r'br label %"for_i", !llvm.loop !(\d+)', raw)
    loop_id = re.search(rf"^!{outer_latch.group(1)} = distinct !{{(.*)}}$", raw, re.M).group(1)
    disabled = {m: re.search(rf'^!{m} = !{{ !"llvm.loop.unroll.disable" }}$', raw, re.M) is not None
                for m in re.findall(r"!(\d+)", loop_id)}
    assert any(disabled.values()) == (inner >= 16), raw
    a, b = rand("float32", outer * inner), np.zeros(outer, "float32")
    lib["f"](a, b)
    np.testing.assert_allclose(b, a.reshape(outer, inner).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_prefetch_is_a_hint_llvm_emits_and_the_interpreter_skips():
    """``T.prefetch(T.address_of(A[i]), 0, 3, 1)`` (TVM's lowered prefetch: read, keep in every
    cache level, data) becomes ``llvm.prefetch`` -- a ``prefetcht0`` -- and changes no result;
    the reference interpreter runs the function without it; the script round-trips."""
    from minitvm.script import tir as T

    @T.prim_func
    def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            T.evaluate(T.prefetch(T.address_of(A[T.min(i + 16, 63)]), 0, 3, 1))
            B[i] = A[i] * T.float32(2)

    minitvm.ir.assert_structural_equal(f, minitvm.script.from_source(f.script()))
    lib = minitvm.build(f, target="llvm")
    assert "prefetcht0" in lib.get_source("asm")
    a = np.random.default_rng(3).standard_normal(64).astype("float32")
    for target in ("llvm", "python"):
        b = minitvm.nd.empty((64,), "float32")
        minitvm.build(f, target=target)(minitvm.nd.array(a), b)
        np.testing.assert_array_equal(b.numpy(), 2 * a)
