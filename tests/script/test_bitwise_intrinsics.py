"""``T.shift_left``, ``T.shift_right`` and ``T.bitwise_*`` (TVM's TVMScript names): they parse,
print as TVM prints them and read back equal, fold constants as the semantics table says, and
compute numpy's ``left_shift`` & co. in LLVM code and in the interpreter."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T


@T.prim_func
def shifts(A: T.Buffer((64,), "int32"), N: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"),
           C: T.Buffer((64,), "int32"), D: T.Buffer((64,), "int32")):
    for i in range(64):
        with T.block("shift"):
            vi = T.axis.spatial(64, i)
            B[vi] = T.shift_left(A[vi], N[vi])
            C[vi] = T.shift_right(A[vi], N[vi])
            D[vi] = T.bitwise_xor(T.bitwise_and(A[vi], N[vi]), T.bitwise_or(T.bitwise_not(A[vi]), 3))


def test_shift_and_bitwise_calls_print_as_tvm_and_round_trip():
    text = shifts.script()
    for spelled in ("T.shift_left(A[vi], N[vi])", "T.shift_right(A[vi], N[vi])",
                    "T.bitwise_xor(T.bitwise_and(A[vi], N[vi]), T.bitwise_or(T.bitwise_not(A[vi]), 3))"):
        assert spelled in text, text
    again = from_source(text)
    assert_structural_equal(again, shifts)
    assert again.script() == text


def test_shift_calls_are_the_operators_and_fold_constants():
    x = tir.Var("x", "int64")
    assert T.shift_left(x, 3).op == "tir.shift_left" and T.shift_left(x, 3).dtype == "int64"
    assert_structural_equal(T.shift_left(x, 3), x << 3)
    assert_structural_equal(T.shift_right(x, 2), x >> 2)
    assert T.shift_left(tir.const(3, "int8"), 6).value == -64  # wraps in int8, as the table says
    assert T.shift_left(1, 31).value == -(2**31)
    with pytest.raises(ValueError, match="less than 32"):
        T.shift_left(tir.Var("y", "int32"), 32)
    with pytest.raises(TypeError, match="shift_left does not take float32"):
        T.shift_left(tir.Var("f", "float32"), 1)
    with pytest.raises(TypeError, match="the result is int64"):
        T.shift_left(x, 1, dtype="int32")


def test_a_shift_of_constants_built_unfolded_round_trips():
    call = tir.Call("int32", "tir.shift_left", (tir.const(3), tir.const(4)))
    func = tir.PrimFunc((), {}, tir.Evaluate(call))
    assert_structural_equal(from_source(func.script()), func)


@pytest.mark.parametrize("target", ["llvm", "python"])
def test_shifts_and_bitwise_match_numpy_on_random_ints(target):
    rng = np.random.default_rng(35)
    a = rng.integers(-(2**31), 2**31, 64, dtype=np.int64).astype(np.int32)
    n = rng.integers(0, 32, 64).astype(np.int32)
    b, c, d = (np.zeros(64, np.int32) for _ in range(3))
    minitvm.build(shifts, target=target)["shifts"](a, n, b, c, d)
    np.testing.assert_array_equal(b, np.left_shift(a, n))
    np.testing.assert_array_equal(c, np.right_shift(a, n))
    np.testing.assert_array_equal(d, np.bitwise_xor(a & n, np.bitwise_not(a) | 3))


def test_shift_left_in_cuda_source_is_the_c_operator():
    from minitvm.target.cuda import codegen_cuda

    @T.prim_func
    def k(A: T.Buffer((32,), "int32"), B: T.Buffer((32,), "int32")):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("b"):
                vi = T.axis.spatial(32, tx)
                B[vi] = T.bitwise_not(T.shift_left(A[vi], 2) | 1)

    src = minitvm.build(k, target="cuda").imported_modules[0].get_source()
    assert "(~((A[" in src and "<< 2) | 1))" in src, src
    assert codegen_cuda._BITWISE["shift_left"] == "<<"
