"""Structural equality of Relax: variables map at their definitions, symbolic shape
variables at their first appearance in a signature or a match_cast."""

from __future__ import annotations

from minitvm import relax, tir
from minitvm.ir import assert_structural_equal, structural_equal, structural_hash

from .models import build_linear_relu


def _dense_relu(batch_name="n", x_name="x"):
    n = tir.Var(batch_name, "int64")
    x = relax.Var(x_name, relax.TensorStructInfo((n, 4), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv = bb.emit(relax.op.matmul(x, w))
            gv = bb.emit_output(relax.op.nn.relu(lv))
        bb.emit_func_output(gv)
    return bb.get()["main"]


def test_independently_built_functions_are_equal():
    a, b = _dense_relu(), _dense_relu(batch_name="batch", x_name="data")
    assert a is not b
    assert_structural_equal(a, b)  # names of variables never matter
    assert structural_hash(a) == structural_hash(b)


def test_independently_built_modules_with_primfuncs_are_equal():
    n1, n2 = tir.Var("n", "int64"), tir.Var("n", "int64")
    assert_structural_equal(build_linear_relu(batch=n1), build_linear_relu(batch=n2))
    assert structural_hash(build_linear_relu()) == structural_hash(build_linear_relu())


def test_different_functions_differ():
    a = _dense_relu()
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv = bb.emit(relax.op.matmul(x, w))
            gv = bb.emit_output(relax.op.exp(lv))  # exp instead of relu
        bb.emit_func_output(gv)
    assert not structural_equal(a, bb.get()["main"])
    assert not structural_equal(build_linear_relu(batch=1), build_linear_relu(batch=2))


def test_symbolic_vars_must_correspond_one_to_one():
    # f(x: (n, m)) vs g(x: (n, n)): m cannot map to n once n is bound
    def func(dims):
        x = relax.Var("x", relax.TensorStructInfo(dims, "float32"))
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            bb.emit_func_output(bb.emit(relax.op.exp(x)))
        return bb.get()["main"]

    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    k = tir.Var("k", "int64")
    assert not structural_equal(func((n, m)), func((k, k)))
    assert structural_equal(func((n, m)), func((m, n)))


def test_free_variables_must_be_identical():
    x, y = (relax.Var(nm, relax.TensorStructInfo((2,), "float32")) for nm in "xy")
    bb = relax.BlockBuilder()
    call_x, call_y = bb.normalize(relax.op.exp(x)), bb.normalize(relax.op.exp(y))
    assert not structural_equal(call_x, call_y)
    assert structural_equal(call_x, call_y, map_free_vars=True)


def test_constants_compare_by_value():
    assert structural_equal(relax.const([1.0, 2.0]), relax.const([1.0, 2.0]))
    assert not structural_equal(relax.const([1.0, 2.0]), relax.const([1.0, 3.0]))
    assert not structural_equal(relax.const([1, 2], "int32"), relax.const([1, 2], "int64"))
    assert structural_hash(relax.const([1.0])) == structural_hash(relax.const([1.0]))


def test_match_cast_defines_symbolic_vars():
    def func(name):
        x = relax.Var("x", relax.TensorStructInfo(ndim=1, dtype="float32"))
        n = tir.Var(name, "int64")
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            y = bb.match_cast(x, relax.TensorStructInfo((n,), "float32"))
            bb.emit_func_output(bb.emit(relax.op.exp(y)))
        return bb.get()["main"]

    assert_structural_equal(func("n"), func("m"))
