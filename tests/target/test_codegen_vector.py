"""Vectorized loops become SIMD code: right numbers, vector instructions, fallbacks."""

import re

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.target.codegen.vector import lane_chunks
from minitvm.tir.tensor_intrin import x86


@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _tiled(mod):
    sch = tir.Schedule(mod)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 32])
    sch.reorder(i0, j0, k, i1, j1)
    sch.unroll(i1)
    sch.vectorize(j1)  # before decompose_reduction, as TVM requires
    sch.decompose_reduction(c, k)
    return sch.mod


def test_tiled_matmul_keeps_accumulators_in_vector_registers():
    # the instructions of a build for an AVX-512 CPU (read on any machine), the numbers of this CPU's
    asm = minitvm.build(_tiled(matmul), target=x86.AVX512_TARGET).get_source("asm")
    assert re.search(r"vfmadd\w+\s+.*zmm", asm), "expected fused multiply-adds on 512-bit registers"
    lib = minitvm.build(_tiled(matmul))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    c = np.empty((64, 64), "float32")
    lib["matmul"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_elementwise_vector_loop_all_dtypes(dtype):
    @T.prim_func
    def f(A: T.Buffer((100,), dtype), B: T.Buffer((100,), dtype), C: T.Buffer((100,), dtype)):
        for i in range(100):
            with T.block("C"):
                vi = T.axis.spatial(100, i)
                C[vi] = T.max(A[vi] * B[vi] + A[vi], B[vi]) - A[99 - vi]

    sch = tir.Schedule(f)
    (i,) = sch.get_loops(sch.get_block("C"))
    _, inner = sch.split(i, factors=[None, 16])  # 100 = 7 * 16 - 12: the tail is predicated
    sch.vectorize(inner)
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(100) * 10).astype(dtype)
    b = (rng.standard_normal(100) * 10).astype(dtype)
    c = np.zeros(100, dtype)
    minitvm.build(sch.mod)["f"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a * b + a, b) - a[::-1], rtol=1e-5)


def test_unsupported_body_falls_back_to_a_loop():
    @T.prim_func
    def f(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
        for i in T.vectorized(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] // 3 + A[vi] % 5 + vi // 7

    a = np.random.default_rng(2).integers(-100, 100, 64).astype("int32")
    b = np.zeros(64, "int32")
    minitvm.build(f)["f"](a, b)
    np.testing.assert_array_equal(b, a // 3 + a % 5 + np.arange(64) // 7)


def test_bool_casts_are_vector_code():
    # a mask read as bool and cast (an attention mask: where(0 < int64(mask), fill, x)), a float
    # cast to bool and a bool cast to float: one vector pass, no scalar loop for LLVM to vectorize
    @T.prim_func
    def f(M: T.Buffer((4, 16), "bool"), X: T.Buffer((4, 16), "float32"), fill: T.Buffer((), "float32"),
          Y: T.Buffer((4, 16), "float32"), Z: T.Buffer((4, 16), "float32")):
        for i in range(4):
            for j in T.vectorized(16):
                with T.block("Y"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    Y[vi, vj] = T.Select(T.int64(0) < T.Cast("int64", M[vi, vj]), fill[()], X[vi, vj])
                    Z[vi, vj] = T.Cast("float32", T.Cast("bool", X[vi, vj])) + T.Cast("float32", M[vi, vj])

    rng = np.random.default_rng(4)
    m = rng.random((4, 16)) < 0.5
    x = rng.standard_normal((4, 16)).astype("float32")
    x[1, 3:9] = 0.0
    y, z = np.zeros((4, 16), "float32"), np.zeros((4, 16), "float32")
    lib = minitvm.build(f)
    lib["f"](m, x, np.array(-7.5, "float32"), y, z)
    np.testing.assert_array_equal(y, np.where(m, np.float32(-7.5), x))
    np.testing.assert_array_equal(z, (x != 0).astype("float32") + m)
    raw = lib._ll_raw
    assert re.search(r"load <16 x i8>", raw) and re.search(r"select\s+<16 x i1>", raw)
    assert re.search(r"zext <16 x i1> .* to <16 x i64>", raw) and "uitofp <16 x i1>" in raw


def test_gather_and_broadcast_loads():
    @T.prim_func
    def f(A: T.Buffer((64, 8), "float32"), s: T.Buffer((1,), "float32"), B: T.Buffer((8, 64), "float32")):
        for i, j in T.grid(8, 64):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi] * s[0]

    sch = tir.Schedule(f)
    _, j = sch.get_loops(sch.get_block("B"))
    sch.vectorize(j)
    rng = np.random.default_rng(3)
    a, s = rng.standard_normal((64, 8)).astype("float32"), np.array([2.5], "float32")
    b = np.zeros((8, 64), "float32")
    minitvm.build(sch.mod)["f"](a, s, b)
    np.testing.assert_allclose(b, a.T * 2.5, rtol=1e-6)


def test_undef_vector_is_one_constant_per_type():
    """Broadcasts and shuffles take the all-undef vector of their type: one constant per type
    (its lanes formatted once, not at each use and each reuse lookup), the same text as new."""
    from llvmlite import ir

    from minitvm.target.codegen.vector import _undef

    vt = ir.VectorType(ir.FloatType(), 16)
    undef = _undef(vt)
    assert _undef(ir.VectorType(ir.FloatType(), 16)) is undef
    assert str(undef) == str(ir.Constant(vt, ir.Undefined))
    assert _undef(ir.VectorType(ir.FloatType(), 8)) is not undef
    assert _undef(ir.VectorType(ir.IntType(32), 16)) is not undef


@pytest.mark.parametrize("stride", [2, 3, 4, 5])
def test_small_strided_loads_are_register_loads_and_a_shuffle(stride):
    """A load whose index steps by 2-4 per lane is ``ceil(span / lanes)`` loads of ``lanes``
    elements, the last one ending at the span's last element, joined by shuffles (a wider
    stride stays a per-lane gather).  (The whole span as one ``<31 x float>`` load was
    legalized into a chain of 4-, 2- and 1-element pieces.)  The last lane reads the buffer's
    last element, so a load past it would read outside the buffer.  (16 lanes: one piece on
    every vector unit -- a length that is no power of two is emitted in pieces.)"""
    n = 16

    @T.prim_func
    def f(A: T.Buffer(((n - 1) * stride + 1,), "float32"), B: T.Buffer((n,), "float32")):
        for j in range(n):
            with T.block("B"):
                vj = T.axis.remap("S", [j])
                B[vj] = A[vj * stride] + T.float32(1)

    sch = tir.Schedule(f)
    sch.vectorize(sch.get_loops(sch.get_block("B"))[0])
    lib = minitvm.build(sch.mod)
    span = (n - 1) * stride + 1
    raw = lib.get_source("ll-raw")
    if stride <= 4:
        assert raw.count(f"load <{n} x float>") == -(-span // n), raw
        assert f"load <{span} x float>" not in raw, raw
    else:
        assert "x float>, ptr" not in raw, raw  # one scalar load per lane
    a = np.random.default_rng(stride).standard_normal(span).astype("float32")
    b = np.zeros(n, "float32")
    lib["f"](a, b)
    np.testing.assert_array_equal(b, a[::stride] + np.float32(1))


@pytest.mark.parametrize("n", [56, 57, 8, 3])
def test_strided_loads_of_odd_spans_read_nothing_past_the_last_lane(n):
    """Stride 2 over a row of ``n`` lanes (MobileNetV2's 56, odd 57, and short rows) reads
    exactly ``A[0 .. 2 (n - 1)]`` -- the buffer ends there -- in register-sized loads."""

    @T.prim_func
    def f(A: T.Buffer((2 * n - 1,), "float32"), B: T.Buffer((n,), "float32")):
        for j in range(n):
            with T.block("B"):
                vj = T.axis.remap("S", [j])
                B[vj] = A[vj * 2] * T.float32(3)

    sch = tir.Schedule(f)
    sch.vectorize(sch.get_loops(sch.get_block("B"))[0])
    lib = minitvm.build(sch.mod)
    a = np.random.default_rng(n).standard_normal(2 * n - 1).astype("float32")
    b = np.zeros(n, "float32")
    lib["f"](a, b)
    np.testing.assert_array_equal(b, a[::2] * np.float32(3))


def test_if_then_else_on_a_condition_of_the_row_is_one_branch_per_vector():
    """``if_then_else`` whose condition is the same in every lane (a padded copy's row test) is
    vectorized as one branch around vector arms, and the arm not taken is not evaluated: the
    rows past ``A``'s last would read outside it.  A per-lane condition keeps the loop scalar."""

    @T.prim_func
    def f(A: T.Buffer((6, 40), "float32"), B: T.Buffer((9, 40), "float32")):
        for i, j in T.grid(9, 40):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(vi < 6, A[vi, vj] * T.float32(2), T.float32(-1))

    @T.prim_func
    def g(A: T.Buffer((9, 40), "float32"), B: T.Buffer((9, 40), "float32")):
        for i, j in T.grid(9, 40):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(vj < 30, A[vi, vj], T.float32(-1))

    texts = {}
    for name, func, symbol in (("row", f, "f"), ("lane", g, "g")):
        sch = tir.Schedule(func)
        sch.vectorize(sch.get_loops(sch.get_block("B"))[1])
        lib = minitvm.build(sch.mod)
        texts[name] = lib.get_source("ll-raw")
        rows = 6 if name == "row" else 9
        a = np.random.default_rng(1).standard_normal((rows, 40)).astype("float32")
        b = np.zeros((9, 40), "float32")
        lib[symbol](a, b)
        want = np.full((9, 40), -1, "float32")
        if name == "row":
            want[:6] = a * 2
        else:
            want[:, :30] = a[:, :30]
        np.testing.assert_array_equal(b, want)
    assert "vite_then" in texts["row"] and "load <" in texts["row"], texts["row"]
    assert "vite_then" not in texts["lane"] and "load <" not in texts["lane"], texts["lane"]


def test_lane_chunks_are_whole_registers_then_powers_of_two():
    assert lane_chunks(32, 16) == [(0, 32)]  # a power of two: LLVM splits it into registers
    assert lane_chunks(50, 16) == [(0, 16), (16, 16), (32, 16), (48, 2)]
    assert lane_chunks(50, 8) == [(0, 8), (8, 8), (16, 8), (24, 8), (32, 8), (40, 8), (48, 2)]
    assert lane_chunks(13, 16) == [(0, 8), (8, 4), (12, 1)]
    assert lane_chunks(48, 16) == [(0, 16), (16, 16), (32, 16)]
    for lanes in range(1, 65):
        for register in (4, 8, 16):
            chunks = lane_chunks(lanes, register)
            assert [o for o, _ in chunks] == [sum(n for _, n in chunks[:i]) for i in range(len(chunks))]
            assert sum(n for _, n in chunks) == lanes


@pytest.mark.parametrize("width", [50, 13, 24, 7])
@pytest.mark.parametrize("target", ["llvm", x86.AVX512_TARGET, "llvm -mcpu=znver3"])
def test_vector_of_odd_length_is_whole_register_loads(width, target):
    """A row of ``width`` accumulators (a 50-word vocabulary head) is emitted as vectors of
    whole registers and a power-of-two tail: LLVM scalarized a ``<50 x float>`` load and store
    and spilled the tile.  The numbers are a matmul's; the code has no odd-length vector."""
    rows, k = 4, 16

    @T.prim_func
    def mm(A: T.Buffer((rows, k), "float32"), B: T.Buffer((k, width), "float32"),
           bias: T.Buffer((width,), "float32"), C: T.Buffer((rows, width), "float32")):
        for i, j, kk in T.grid(rows, width, k):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
                with T.init():
                    C[vi, vj] = bias[vj]
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch = tir.Schedule(mm)
    c = sch.get_block("C")
    i, j, kk = sch.get_loops(c)
    sch.reorder(kk, i, j)
    sch.unroll(i)
    sch.vectorize(j)
    sch.decompose_reduction(c, kk)
    sch.vectorize(sch.get_loops(sch.get_block("C_init"))[-1])
    lib = minitvm.build(sch.mod, target=target)
    ir_text = lib.get_source("ll")
    assert f"<{width} x float>" not in ir_text
    register = minitvm.target.Target(target).vector_unit.lanes
    if width >= register:
        assert f"load <{register} x float>" in ir_text and f"store <{register} x float>" in ir_text
    if target != "llvm" and register > minitvm.target.Target("llvm").vector_unit.lanes:
        return  # code for another CPU: read, not run
    rng = np.random.default_rng(width)
    a, b, bias = (rng.standard_normal(s).astype("float32") for s in ((rows, k), (k, width), (width,)))
    out = np.zeros((rows, width), "float32")
    lib["mm"](a, b, bias, out)
    np.testing.assert_allclose(out, a @ b + bias, rtol=1e-5, atol=1e-5)
