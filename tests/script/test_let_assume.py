"""TVMScript forms of TVM v0.23's tests: ``T.Let(expr, where={x: v})``, ``T.assume``, ``T.boolean``."""

import numpy as np
import pytest

import minitvm
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T

LET = '''
@T.prim_func
def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    x = T.int32()
    for i in range(4):
        B[i] = T.Let(x * x + A[i], where={x: A[i] + 1})
'''


def test_let_expression_round_trips_and_computes():
    f = from_source(LET)
    text = f.script()
    assert "x = T.int32()" in text and "T.Let(x * x + A[i], where={x: A[i] + 1})" in text
    assert_structural_equal(from_source(text), f)
    lib = minitvm.build(f, target="llvm")
    a = np.random.default_rng(2).integers(-50, 50, 4).astype("int32")
    b = minitvm.nd.empty((4,), "int32")
    lib["f"](minitvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), (a + 1) ** 2 + a)


def test_let_refuses_what_it_cannot_bind():
    x = minitvm.tir.Var("x", "int32")
    with pytest.raises(TypeError, match="at least one binding"):
        T.Let(x + 1, where={})
    with pytest.raises(TypeError, match="x is int32 but its value is float32"):
        T.Let(x + 1, where={x: T.float32(1)})


def test_assume_and_boolean_parse_print_and_build_refuses_assume():
    text = '''
@T.prim_func
def h(A: T.Buffer((1,), "int32"), flag: T.boolean):
    T.evaluate(T.assume(A[0] == 5))
    A[0] = 10
'''
    h = from_source(text)
    printed = h.script()
    assert "    T.assume(A[0] == 5)\n" in printed and "flag: T.bool" in printed
    assert_structural_equal(from_source(printed), h)
    with pytest.raises(NotImplementedError, match="T.assume"):
        minitvm.build(h, target="llvm")
