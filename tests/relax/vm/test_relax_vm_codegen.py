"""The VM code generator on control flow, calls between Relax functions, tuples and constants."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, te, tir
from minitvm.relax.vm import VMCodegenError, codegen, param_info

from .mlp_models import te_relu


def te_neg(X):
    return te.compute(X.shape, lambda i, j: -X[i, j], name="neg")


def _if_module():
    """main(c, x) = (relu(x) if c else helper(x), x); helper(x) = -x."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("helper", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(te_neg, x))
        bb.emit_func_output(gv)
    helper = bb.get().get_global_var("helper")
    c = relax.Var("c", relax.TensorStructInfo((), "bool"))
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [c, x]):
        then = relax.SeqExpr([], bb.call_te(te_relu, x))
        other = relax.SeqExpr([], relax.Call(helper, [x]))
        r = bb.emit(relax.If(c, then, other))
        bb.emit_func_output(bb.emit(relax.Tuple([r, x])))
    return bb.get()


def test_if_becomes_if_and_goto_and_both_branches_run():
    ex = minitvm.compile(_if_module())
    main = ex.as_text().split("@main:")[1]
    assert "if    %0 else" in main and "goto" in main and "call  helper in: %1" in main
    vm = relax.VirtualMachine(ex)
    data = np.random.default_rng(0).standard_normal((2, 3), dtype=np.float32)
    relu, same = vm["main"](np.array(True), data)
    np.testing.assert_array_equal(relu.numpy(), np.maximum(data, 0))
    np.testing.assert_array_equal(same.numpy(), data)
    neg, _ = vm["main"](np.array(False), data)
    np.testing.assert_array_equal(neg.numpy(), -data)


def test_constants_and_tuple_results():
    w = np.arange(12, dtype="float32").reshape(3, 4) - 5
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit_te(lambda a, b: te.compute(a.shape, lambda i, j: a[i, j] + b[i, j]), x, relax.const(w))
            gv = bb.emit_output(relax.Tuple([lv, relax.const(w)]))
        bb.emit_func_output(gv)
    ex = minitvm.compile(bb.get())
    assert "tensor float32 (3, 4)" in ex.as_text()
    data = np.ones((3, 4), "float32")
    total, const = relax.VirtualMachine(ex)["main"](data)
    np.testing.assert_array_equal(total.numpy(), data + w)
    np.testing.assert_array_equal(const.numpy(), w)


def test_tir_vars_are_passed_from_the_shape_heap():
    """A kernel whose output size m is not readable from its inputs gets m as a scalar."""
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n,), "float32"))
    s = relax.Var("s", relax.ShapeStructInfo([m]))

    def repeat_first(a, m_value):
        return te.compute((m_value,), lambda i: a[0] * 2, name="rep")

    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(repeat_first, x, m))
        bb.emit_func_output(gv)
    ex = minitvm.compile(bb.get())
    assert ex.vm_functions["main"].param_info[1].shape == ("m",)
    out = relax.VirtualMachine(ex)["main"](np.array([1.5, 0, 0], "float32"), (5,))
    np.testing.assert_array_equal(out.numpy(), np.full(5, 3.0, "float32"))


def test_match_cast_checks_and_defines_a_dimension():
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    k = tir.Var("k", "int64")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.match_cast(x, relax.TensorStructInfo((k, 3), "float32"))
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(te_relu, y))
        bb.emit_func_output(gv)
    ex = minitvm.compile(bb.get())
    vm = relax.VirtualMachine(ex)
    data = np.random.default_rng(1).standard_normal((4, 3), dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](data).numpy(), np.maximum(data, 0))
    with pytest.raises(ValueError, match=r"main: match_cast of .*: dimension 1 is 5, expected 3"):
        vm["main"](np.ones((4, 5), "float32"))


def test_param_info_names_symbolic_dims_and_keeps_distinct_vars_apart():
    n1, n2 = tir.Var("n", "int64"), tir.Var("n", "int64")
    names = {}
    a = param_info(relax.TensorStructInfo((n1, 4), "float32"), names)
    b = param_info(relax.TensorStructInfo((n2, n1), "float32"), names)
    assert a.shape == ("n", 4) and b.shape == ("n_1", "n")
    assert param_info(relax.TupleStructInfo([relax.ShapeStructInfo(ndim=2)])).kind == "tuple"
    assert param_info(relax.TensorStructInfo(ndim=3, dtype="int8")).ndim == 3


def test_codegen_refuses_unlowered_modules_with_a_reason():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(te_relu, x))
        bb.emit_func_output(gv)
    with pytest.raises(VMCodegenError, match=r"'main': operator relax.call_tir is not lowered"):
        codegen(bb.get())


def test_if_branches_that_are_a_parameter_or_a_constant():
    c = relax.Var("c", relax.TensorStructInfo((), "bool"))
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    k = np.array([7.0, 8.0], "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [c, x]):
        bb.emit_func_output(bb.emit(relax.If(c, relax.SeqExpr([], x), relax.SeqExpr([], relax.const(k)))))
    vm = relax.VirtualMachine(minitvm.compile(bb.get()))
    data = np.array([1.0, 2.0], "float32")
    np.testing.assert_array_equal(vm["main"](np.array(True), data).numpy(), data)
    np.testing.assert_array_equal(vm["main"](np.array(False), data).numpy(), k)
