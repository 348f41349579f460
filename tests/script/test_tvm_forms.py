"""TVMScript forms read, printed and compared as TVM does: vector expressions, narrow floats,
comm reducers, targets, reinterpret, and statements printed alone."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.error import TVMError
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T

from .test_tvm_names import _round_trip


def test_slices_are_vectors_in_arithmetic_and_stores():
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((8,), "uint32")):
        for i in range(2):
            B[i * 8:i * 8 + 8] = A[i * 8:i * 8 + 8] + T.broadcast(1.0, 8)
        B[0:16:2] = -A[0:16:2]
        C[0:4] = C[0:4] >> 4
        T.evaluate((A[0:4] > 0) and (B[0:4] > 0))

    @T.prim_func
    def spelled_out(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((8,), "uint32")):
        for i in range(2):
            B[T.Ramp(i * 8, 1, 8)] = A[T.Ramp(i * 8, 1, 8)] + T.Broadcast(T.float32(1), 8)
        B[T.Ramp(0, 2, 8)] = A[T.Ramp(0, 2, 8)] * T.Broadcast(T.float32(-1), 8)
        C[T.Ramp(0, 1, 4)] = T.shift_right(C[T.Ramp(0, 1, 4)], T.Broadcast(T.uint32(4), 4))
        T.bitwise_and(A[T.Ramp(0, 1, 4)] > T.Broadcast(T.float32(0), 4),
                      B[T.Ramp(0, 1, 4)] > T.Broadcast(T.float32(0), 4))

    assert_structural_equal(f, spelled_out.with_attr("global_symbol", "f"))
    text = f.script()
    # a constant-stride ramp index prints as the slice that reads back as it, as TVM prints it
    assert "B[i * 8:i * 8 + 8] = A[i * 8:i * 8 + 8] + T.Broadcast(T.float32(1.0), 8)" in text
    assert "B[0:16:2] = A[0:16:2] * T.Broadcast(T.float32(-1.0), 8)" in text
    _round_trip(f)
    load = f.body.seq[1].value.a
    assert load.dtype == "float32x8" and f.body.seq[3].value.dtype == "boolx4"


def test_vector_nodes_check_their_operands():
    a = tir.Var("a", "int32")
    assert tir.Ramp(a, 1, 32).script() == "T.Ramp(a, 1, 32)"
    assert tir.Broadcast(a, 4).dtype == "int32x4"
    assert tir.const(2.0, "float32x4").script() == "T.Broadcast(T.float32(2.0), 4)"
    with pytest.raises(TypeError, match="scalars of one dtype"):
        tir.Ramp(a, tir.const(1, "int64"), 4)
    with pytest.raises(TypeError, match="scalable vectors"):
        tir.Broadcast(a, a * 4)
    with pytest.raises(TypeError, match="4 lanes .* 8"):
        tir.Ramp(a, 1, 4) + tir.Ramp(a, 1, 8)


def test_predicated_vector_access_round_trips():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(4):
            load = T.meta_var(A.vload([T.Ramp(i, 1, 4)], predicate=T.Broadcast(T.bool(True), 4)))
            B.vstore([T.Ramp(0, 2, 4)], load, predicate=T.Broadcast(T.bool(True), 4))

    assert ("B.vstore([T.Ramp(0, 2, 4)], A.vload([T.Ramp(i, 1, 4)], predicate=T.Broadcast(T.bool(True), 4)), "
            "predicate=T.Broadcast(T.bool(True), 4))") in f.script()
    _round_trip(f)
    A = tir.decl_buffer((4, 8), "uint8", "A")
    i = tir.Var("i", "int32")
    # a vector dtype makes the last index the start of that many lanes, as TVM's vload
    assert A.vload([i, 0], "uint8x4").script() == "A[i, 0:4]"
    with pytest.raises(TypeError, match="holds uint8, not int8x4"):
        A.vload([i, 0], "int8x4")
    with pytest.raises(TypeError, match="bool vector of the access's 4 lanes"):
        f.buffer_map[f.params[0]].vload([T.Ramp(0, 1, 4)], predicate=T.Broadcast(T.bool(True), 2))


def test_building_a_vector_expression_is_refused_by_name():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32")):
        A[0:8] = A[0:8] + T.float32(1)

    for target in ("llvm", "python"):
        with pytest.raises(TVMError, match=r"vector expression \(float32x8\).*T.vectorized"):
            minitvm.build(f, target=target)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float4_e2m1fn"])
def test_narrow_float_constants(dtype):
    @T.prim_func
    def f():
        T.evaluate(getattr(T, dtype)(0.5))

    assert f"T.evaluate(T.{dtype}(0.5))" in f.script()
    _round_trip(f)
    assert minitvm.DataType(dtype).bits == int(dtype[5])


def test_comm_reducer_reinterpret_and_target_round_trip():
    @T.prim_func
    def f(A: T.Buffer((128,), "float32")):
        T.func_attr({"target": T.target("llvm", host="llvm")})
        tx = T.env_thread("threadIdx.x")
        T.launch_thread(tx, 128)
        red = T.allocate([1], "float32", "local")
        with T.attr(T.comm_reducer(lambda x0, x1, y0, y1: (T.Select(x1 >= y1, x0, y0), T.Select(x1 >= y1, x1, y1)),
                                   [T.int32(-1), T.min_value("float32")]),
                    "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[tx], True, red.data, tx, dtype="handle"))

    text = f.script()
    assert "T.comm_reducer(lambda x0, x1, y0, y1: (T.Select(x1 >= y1, x0, y0), T.Select(x1 >= y1, x1, y1))" in text
    assert 'T.reinterpret("handle", T.uint64(0))' in text
    assert 'T.target({"kind": "llvm", "keys": ["cpu"], "host": {"kind": "llvm", "keys": ["cpu"]}})' in text
    _round_trip(f)
    assert T.reinterpret("float32", T.float32(1)).value == 1.0  # a no-op on its own dtype, as TVM
    with pytest.raises(TypeError, match="2 identity value"):
        T.comm_reducer(lambda x, y: x + y, [T.float32(0), T.int32(0)])


def test_statements_printed_alone_take_the_with_form():
    x = tir.Var("x", "int32")
    body = tir.Evaluate(tir.const(0))
    assert tir.LetStmt(x, tir.const(1), body).script() == "with T.LetStmt(1) as x:\n    T.evaluate(0)"
    assert tir.AssertStmt(x > 0, "x", body).script() == 'with T.Assert(x > 0, "x"):\n    T.evaluate(0)'
    assert tir.Select(True, 0, 2).script() == "T.Select(T.bool(True), 0, 2)"
    assert tir.truncdiv(x, tir.Var("y", "int32")).script() == "T.Div(x, y)"

    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), n: T.int32):
        with T.Assert(n > 0, "n is positive"):
            A[0] = n
        A[1] = 2

    assert 'with T.Assert(n > 0, "n is positive"):' in f.script()
    _round_trip(f)


def test_typed_pointers_round_trip():
    @T.prim_func
    def f(x: T.handle("int32"), y: T.handle("int32", "shared"), args: T.handle):
        data: T.handle("float32") = T.tvm_struct_get(args, 0, 1, dtype="handle")
        A = T.Buffer((16,), "float32", data=data)
        A[0] = T.float32(1)

    text = f.script()
    assert 'def f(x: T.handle("int32"), y: T.handle("int32", "shared"), args: T.handle):' in text
    # the view of a pointer bound in the body is declared after that binding, not at the top
    assert text.index('data: T.handle("float32") =') < text.index("A = T.Buffer((16,), \"float32\", data=data)")
    _round_trip(f)
    assert f.params[1].type_annotation == minitvm.ir.PointerType(minitvm.ir.PrimType("int32"), "shared")

    @T.prim_func
    def void_ptr(p: T.handle("void")):
        T.evaluate(p)

    @T.prim_func
    def plain(p: T.handle):
        T.evaluate(p)

    assert not minitvm.ir.structural_equal(void_ptr, plain)  # void* is not an untyped handle, as in TVM
    assert 'p: T.handle("void")' in void_ptr.script()
    with pytest.raises(TypeError, match="only a handle has a pointer type"):
        tir.Var("n", "int32", minitvm.ir.PointerType(minitvm.ir.PrimType("int32")))


def test_a_vector_stored_into_one_element_is_refused():
    with pytest.raises(minitvm.script.TVMScriptError, match=r"one element; the value is a vector \(float32x2\)"):
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32")):
            A[0, 0] = A[0:2, 0] + T.float32(1)


def test_constants_spelled_as_their_nodes():
    # TVM's scripts may write T.FloatImm("float32", 0.1) for a constant (its legalization tests do)
    @T.prim_func
    def scale(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        s = T.FloatImm("float32", 0.5)
        for i in range(4):
            B[i] = A[i] * s + T.Cast("float32", T.IntImm("int32", 1))

    a = np.random.default_rng(3).standard_normal(4).astype("float32")
    b = np.zeros(4, "float32")
    minitvm.build(scale, target="llvm")(a, b)
    np.testing.assert_allclose(b, a * 0.5 + 1, rtol=1e-6)
