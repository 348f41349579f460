"""``relax.get_shape_of``, ``relax.extern`` and ``Function.bind_params`` as in TVM."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.script import relax as R


def _add_function():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(x, y))
        bb.emit_func_output(out)
    return bb.get()["main"], n


def test_get_shape_of_returns_the_recorded_symbolic_shape():
    func, n = _add_function()
    shape = relax.get_shape_of(func.params[0])
    assert isinstance(shape, relax.ShapeExpr)
    assert shape.values[0] is n and int(shape.values[1]) == 4


def test_get_shape_of_refuses_non_tensors_and_reads_unknown_shapes_at_run_time():
    with pytest.raises(TypeError, match="expected a tensor"):
        relax.get_shape_of(relax.Var("s", relax.ShapeStructInfo(ndim=2)))
    call = relax.get_shape_of(relax.Var("t", relax.TensorStructInfo(ndim=2, dtype="float32")))
    assert call.op.name == "relax.shape_of" and call.struct_info.ndim == 2


def test_extern_names_a_packed_function():
    f = relax.extern("my.packed")
    assert isinstance(f, relax.ExternFunc) and f.global_symbol == "my.packed"


def test_bind_params_with_a_relax_expression_substitutes_it():
    func, _ = _add_function()
    other = relax.Var("z", func.params[1].struct_info)
    bound = func.bind_params({func.params[1]: other})
    assert [p.name for p in bound.params] == ["x"]
    call = bound.body.blocks[0].bindings[0].value
    assert call.args[1] is other


def test_bind_params_with_an_array_computes_with_the_constant():
    func, _ = _add_function()
    rng = np.random.default_rng(7)
    y_np = rng.standard_normal((3, 4)).astype("float32")
    x_np = rng.standard_normal((3, 4)).astype("float32")
    bound = func.bind_params({"y": y_np})
    assert [p.name for p in bound.params] == ["x"]
    # the constant fixes n = 3 in the remaining parameter's shape too
    assert bound.params[0].struct_info == relax.TensorStructInfo((3, 4), "float32")
    ex = minitvm.compile(minitvm.IRModule({"main": bound}), target="llvm")
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(x_np)).numpy()
    np.testing.assert_allclose(got, x_np + y_np, rtol=1e-6)


def test_tuple_and_shape_index_out_of_range_and_call_of_non_function():
    rx = relax
    n = tir.Var("n", "int64")
    t, s = rx.Tuple([rx.Var("a"), rx.Var("b")]), rx.ShapeExpr([n, 3])
    assert t[-2] is t.fields[0] and s[-1].value == 3
    for seq, kind, i in ((t, "Tuple", 2), (t, "Tuple", -3), (s, "ShapeExpr", 2)):
        with pytest.raises(IndexError, match=f"{kind} index out of range"):
            seq[i]
    with pytest.raises(minitvm.TVMError, match="can only have dtype of int64"):
        rx.ShapeExpr([tir.Var("m", "int32")])
    prim = rx.PrimStructInfo("int32")
    with pytest.raises(ValueError, match="FuncStructInfo"):
        rx.Call(rx.Var("f", prim), [rx.Var("x", prim)])
    assert rx.Call(rx.Var("g", rx.FuncStructInfo([prim], prim)), [rx.Var("x", prim)]).args[0].name_hint == "x"


def test_null_value_op_runs_on_the_vm():
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        n = R.null_value()
        return (x, n)

    assert main.body.blocks[0].bindings[0].value.op.name == "relax.null_value"
    mod = minitvm.IRModule({"main": main})
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), minitvm.cpu())
    data = np.random.default_rng(0).standard_normal(2).astype("float32")
    out, null = vm["main"](minitvm.runtime.tensor(data))
    assert null is None
    np.testing.assert_allclose(out.numpy(), data)
