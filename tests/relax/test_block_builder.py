"""BlockBuilder: functions, dataflow blocks, normalization, emit_te."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax, te, tir
from minitvm.ir import GlobalVar, IRModule, structural_equal
from minitvm.tir import PrimFunc

from .models import build_linear_relu, te_matmul, te_relu


def _bindings(func):
    return [b for block in func.body.blocks for b in block.bindings]


def _dims(values):
    return [v.value if isinstance(v, tir.IntImm) else v for v in values]


def test_linear_relu_module_contents():
    mod = build_linear_relu()
    assert sorted(mod.keys()) == ["main", "te_matmul", "te_relu"]
    main = mod["main"]
    assert isinstance(main, relax.Function)
    assert main.attrs["global_symbol"] == "main"
    assert [p.name_hint for p in main.params] == ["x", "w"]
    (block,) = main.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    lv0, lv1, gv = block.bindings
    assert isinstance(lv0.var, relax.DataflowVar) and isinstance(lv1.var, relax.DataflowVar)
    assert type(gv.var) is relax.Var and main.body.body is gv.var

    call_tir = relax.Op.get("relax.call_tir")
    for binding, name in ((lv0, "te_matmul"), (lv1, "te_relu")):
        assert binding.value.op is call_tir
        gvar = binding.value.args[0]
        assert isinstance(gvar, GlobalVar) and gvar is mod.get_global_var(name)
        assert isinstance(mod[gvar], PrimFunc)
    assert [a for a in lv0.value.args[1].fields] == list(main.params)
    assert lv1.value.args[1].fields == (lv0.var,)

    assert _dims(lv0.var.struct_info.shape.values) == [1, 128]
    assert lv0.var.struct_info.dtype == "float32"
    assert structural_equal(main.ret_struct_info, relax.TensorStructInfo((1, 128), "float32"))

    # the PrimFuncs: int64 shapes, one buffer per tensor, private (no global_symbol)
    mm = mod["te_matmul"]
    assert [_dims(b.shape) for b in mm.buffers] == [[1, 784], [784, 128], [1, 128]]
    assert all(v.dtype == "int64" for b in mm.buffers for v in b.shape)
    assert "global_symbol" not in mm.attrs
    assert [_dims(b.shape) for b in mod["te_relu"].buffers] == [[1, 128], [1, 128]]
    assert relax.analysis.well_formed(mod)


def test_symbolic_batch_shares_the_tir_var(n):
    mod = build_linear_relu(batch=n)
    main = mod["main"]
    x = main.params[0]
    assert x.struct_info.shape.values[0] is n
    lv0 = _bindings(main)[0]
    assert lv0.var.struct_info.shape.values[0] is n
    # the PrimFunc reads n off its first buffer: no extra tir_vars argument
    assert len(lv0.value.args) == 2
    assert mod["te_matmul"].buffers[0].shape[0] is n
    assert main.ret_struct_info.shape.values[0] is n
    assert relax.analysis.well_formed(mod)


def test_emit_te_passes_underivable_symbolic_vars_as_tir_vars():
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    s = relax.Var("s", relax.ShapeStructInfo([m]))

    def broadcast_first(A, length):
        # a whole output dimension would be read off the output buffer; length * 2 cannot be
        return te.compute((length * 2,), lambda i: A[0], name="bcast")

    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        out = bb.emit_te(broadcast_first, x, m, primfunc_name_hint="bcast_first")
        bb.emit_func_output(out)
    mod = bb.get()
    call = _bindings(mod["main"])[0].value
    assert call.args[0].name_hint == "bcast_first"
    assert len(call.args) == 3 and isinstance(call.args[2], relax.ShapeExpr)
    assert call.args[2].values == (m,)
    prim = mod["bcast_first"]
    assert prim.params[-1] is m  # the scalar parameter comes last, as in TVM
    assert relax.analysis.well_formed(mod)


def test_emit_te_reuses_identical_primfuncs_and_uniquifies_names():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((5, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        a = bb.emit_te(te_relu, x)
        b = bb.emit_te(te_relu, x)   # same PrimFunc: reused
        c = bb.emit_te(te_relu, y)   # other shape: a second PrimFunc, fresh name
        bb.emit_func_output(relax.Tuple([a, b, c]))
    mod = bb.get()
    assert sorted(mod.keys()) == ["main", "te_relu", "te_relu1"]
    calls = [b.value for b in _bindings(mod["main"])]
    assert calls[0].args[0] is calls[1].args[0] is not calls[2].args[0]
    assert bb.get_unique_name("te_relu") == "te_relu2"


def test_call_te_returns_an_unemitted_call():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((3, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        call = bb.call_te(te_matmul, x, w)
        assert isinstance(call, relax.Call) and call.op is relax.Op.get("relax.call_tir")
        out = bb.emit(call, name_hint="y")
        assert out.name_hint == "y"
        bb.emit_func_output(out)
    assert structural_equal(bb.get()["main"].ret_struct_info, relax.TensorStructInfo((2, 4), "float32"))


def test_emit_te_rejects_unknown_shapes():
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(ValueError, match="x has no known shape"):
        with bb.function("main", [x]):
            bb.emit_te(te_relu, x)


def test_nested_calls_are_bound_to_their_own_variables():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(relax.op.exp(relax.op.add(x, x)))
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    (add, exp, out) = _bindings(bb.get()["main"])
    assert add.value.op.name == "relax.add" and exp.value.op.name == "relax.exp"
    assert exp.value.args == (add.var,)
    assert [add.var.name_hint, exp.var.name_hint, out.var.name_hint] == ["lv", "lv1", "gv"]


def test_bindings_outside_dataflow_and_match_cast(n):
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], private=True):
        y = bb.match_cast(x, relax.TensorStructInfo((n, 4), "float32"))
        z = bb.emit(relax.op.add(y, y))
        bb.emit_func_output(z)
    main = bb.get()["main"]
    assert "global_symbol" not in main.attrs
    (block,) = main.body.blocks
    assert type(block) is relax.BindingBlock
    assert isinstance(block.bindings[0], relax.MatchCast)
    assert type(y) is relax.Var and z.struct_info.shape.values[0] is n
    # n is defined inside the body only: the return struct info forgets it
    assert main.ret_struct_info.shape is None and main.ret_struct_info.ndim == 2
    assert relax.analysis.well_formed(main)


def test_builder_misuse_is_reported():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(RuntimeError, match="emit_output is only allowed"):
        with bb.function("f", [x]):
            bb.emit_output(x)
    with pytest.raises(RuntimeError, match="needs an open block"):
        bb.emit(relax.op.exp(x))
    with pytest.raises(RuntimeError, match="without bb.emit_func_output"):
        with bb.function("g", [x]):
            pass
    with pytest.raises(RuntimeError, match="DataflowVar"):
        with bb.function("h", [x]):
            with bb.dataflow():
                lv = bb.emit(relax.op.exp(x))
            bb.emit_func_output(lv)
    # a failed function leaves the builder usable
    with bb.function("ok", [x]):
        bb.emit_func_output(bb.emit(relax.op.exp(x)))
    assert "ok" in bb.get()


def test_add_and_update_func_and_calls_between_functions(n):
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("double", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, x)))
    double = bb.get().get_global_var("double")

    y = relax.Var("y", relax.TensorStructInfo((8, 4), "float32"))
    with bb.function("main", [y]):
        out = bb.emit(relax.Call(double, [y]))
        bb.emit_func_output(out)
    # the callee's n is matched to 8 in the caller
    assert [v.value for v in out.struct_info.shape.values] == [8, 4]

    mod = bb.get()
    gv = bb.add_func(mod["double"], "double")
    assert gv is double  # identical function: the existing GlobalVar
    bb.update_func(double, mod["double"].with_attr("Primitive", 1))
    assert bb.get()["double"].attrs["Primitive"] == 1
    first = bb.get()
    assert isinstance(first, IRModule) and first is not bb.get()  # get returns a copy


def test_const_and_leaves():
    c = relax.const([[1.0, 2.0]], "float32")
    assert c.struct_info.dtype == "float32"
    assert [v.value for v in c.struct_info.shape.values] == [1, 2]
    assert relax.const(3).struct_info.dtype == "int32"
    assert c.data.numpy().tolist() == [[1.0, 2.0]]
    shape = relax.ShapeExpr([2, 3])
    assert isinstance(shape.struct_info, relax.ShapeStructInfo) and shape.struct_info.ndim == 2
    tup = relax.Tuple([c, shape])
    assert isinstance(tup.struct_info, relax.TupleStructInfo)
    assert tup[1] is shape
    item = relax.TupleGetItem(tup, 0)
    assert item.struct_info is c.struct_info
    with pytest.raises(ValueError, match="no struct_info yet"):
        _ = relax.op.exp(c).struct_info


def test_emitted_primfuncs_compute_the_model(n):
    """Run the PrimFuncs emit_te made (symbolic batch) on the TIR reference interpreter."""
    from minitvm.target.interpreter import run_prim_func

    mod = build_linear_relu(batch=n, in_features=6, out_features=5)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6)).astype("float32")
    w = rng.standard_normal((6, 5)).astype("float32")
    mm = np.empty((3, 5), "float32")
    out = np.empty((3, 5), "float32")
    run_prim_func(mod["te_matmul"], [x, w, mm])
    run_prim_func(mod["te_relu"], [mm, out])
    np.testing.assert_allclose(out, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_emit_te_with_constants_kwargs_and_repeated_args():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bias = relax.const(np.ones((3,), "float32"))

    def add_bias(A, B, scale=1.0):
        return te.compute(A.shape, lambda i, j: A[i, j] * scale + B[j], name="add_bias")

    def square(A, B):
        return te.compute(A.shape, lambda i, j: A[i, j] * B[i, j], name="square")

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit_te(add_bias, x, bias, scale=2.0)
        z = bb.emit_te(square, y, y)     # a placeholder per occurrence, as TVM's emit_te
        bb.emit_func_output(z)
    mod = bb.get()
    first, second = (b.value for b in _bindings(mod["main"]))
    assert first.args[1].fields == (x, bias)
    assert second.args[1].fields == (y, y)
    assert len(mod["square"].params) == 3
    assert bb.lookup_binding(y) is first and bb.lookup_binding(x) is None
    assert relax.analysis.well_formed(mod)


def test_params_given_at_emit_func_output_as_in_the_mlc_course():
    A = relax.Var("A", relax.TensorStructInfo((128, 128), "float32"))
    B = relax.Var("B", relax.TensorStructInfo((128, 128), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            C = bb.emit_te(te_matmul, A, B)
            D = bb.emit_te(te_relu, C)
            R = bb.emit_output(D)
        bb.emit_func_output(R, params=[A, B])
    mod = bb.get()
    assert list(mod["main"].params) == [A, B]
    assert sorted(mod.keys()) == ["main", "te_matmul", "te_relu"]
    assert relax.analysis.well_formed(mod)


def test_func_output_may_name_the_dataflow_var_that_emit_output_emitted():
    """The MLC course's from_fx keeps the DataflowVar and returns it after bb.emit_output(it):
    the function returns the emitted output, as TVM's builder lets it."""
    import minitvm

    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            lv = bb.emit(relax.op.exp(x))
            lv2 = bb.emit(relax.op.add(lv, x))
            out = bb.emit_output(lv2)
        bb.emit_func_output(lv2, [x])
    main = bb.get()["main"]
    assert main.body.body is out and type(out) is relax.Var
    assert relax.analysis.well_formed(bb.get())
    data = np.random.default_rng(2).standard_normal((2, 3)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](data).numpy(), np.exp(data) + data, rtol=1e-6)

    # in a tuple, too; a DataflowVar that was never emitted is still refused
    bb = relax.BlockBuilder()
    with bb.function("pair", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.exp(x))
            b = bb.emit(relax.op.negative(x))
            ga, gb = bb.emit_output(a), bb.emit_output(b)
        bb.emit_func_output([a, b])
    assert list(bb.get()["pair"].body.body.fields) == [ga, gb]
    with pytest.raises(RuntimeError, match="DataflowVar that bb.emit_output did not emit"):
        with bb.function("h", [x]):
            with bb.dataflow():
                c = bb.emit(relax.op.exp(x))
                bb.emit_output(bb.emit(relax.op.negative(c)))
            bb.emit_func_output(c)


def test_current_builder_is_set_inside_a_function_scope_and_recovered_after_an_error():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    assert relax.BlockBuilder.current() is None
    with pytest.raises(RuntimeError, match="without bb.emit_func_output"):
        with bb.function("f", [x]):
            assert relax.BlockBuilder.current() is bb
            bb.emit(relax.op.exp(x))
    assert relax.BlockBuilder.current() is None
    with bb:
        assert relax.BlockBuilder.current() is bb
    assert relax.BlockBuilder.current() is None


def test_names_are_unique_across_the_functions_of_one_builder():
    """As TVM's builder: one name table for its lifetime (the second function's first binding is lv1)."""
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    names = []
    for fname in ("f", "g"):
        with bb.function(fname, [x]):
            with bb.dataflow():
                lv = bb.emit(relax.op.exp(x))
                gv = bb.emit_output(lv)
            bb.emit_func_output(gv)
        names.append((lv.name_hint, gv.name_hint))
    assert names == [("lv", "gv"), ("lv1", "gv1")]


def test_python_tuples_become_relax_tuples_even_nested():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    a = relax.Var("a", relax.PrimStructInfo(value=n))
    b = relax.Var("b", relax.PrimStructInfo(value=m))
    x = relax.Var("x", relax.TensorStructInfo((n, m), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [a, b, x]):
        pair = bb.emit((a, b))
        bb.emit_func_output((pair, (a, x)))
    out = bb.get()["f"].body.body
    assert isinstance(out, relax.Tuple) and out.fields[0] is pair
    assert isinstance(out.fields[1], relax.Tuple) and list(out.fields[1].fields) == [a, x]
    assert isinstance(pair.struct_info, relax.TupleStructInfo)


def _seq_one_plus_two():
    """The body of `c = 1 + 2` built on its own: a SeqExpr with one binding block."""
    bb = relax.BlockBuilder()
    with bb.function("seq", []):
        one = bb.emit(relax.const(1, "int64"), "a")
        two = bb.emit(relax.const(2, "int64"), "b")
        bb.emit_func_output(bb.emit(relax.op.add(one, two), "c"))
    return bb.get()["seq"].body


def test_emitting_a_seq_expr_inlines_its_bindings():
    seq = _seq_one_plus_two()
    bb = relax.BlockBuilder()
    with bb.function("f", []):
        d = bb.emit(relax.const(3, "int64"), "d")
        e = bb.emit(seq, "e")
        bb.emit_func_output(bb.emit(relax.op.add(d, e), "f"))
    (block,) = bb.get()["f"].body.blocks
    assert [b.var.name_hint for b in block.bindings] == ["d", "a", "b", "c", "e", "f"]
    assert block.bindings[4].value is seq.body  # e = c

    # inside a dataflow block the seq's plain bindings split it: dataflow, plain, dataflow
    bb = relax.BlockBuilder()
    with bb.function("g", []):
        with bb.dataflow():
            bb.emit(relax.const(3, "int64"), "d")
            e = bb.emit(seq, "e")
            out = bb.emit_output(e, "f")
        bb.emit_func_output(out)
    mod = bb.get()
    blocks = mod["g"].body.blocks
    assert [type(b).__name__ for b in blocks] == ["DataflowBlock", "BindingBlock", "DataflowBlock"]
    assert [[b.var.name_hint for b in blk.bindings] for blk in blocks] == [["d"], ["a", "b", "c"], ["e", "f"]]
    assert relax.analysis.well_formed(mod)


def test_emit_te_of_a_kernel_without_tensor_arguments():
    """TVM's emit_te takes a TE function of no tensors (a kernel that fills a constant)."""
    import minitvm
    from minitvm import topi

    bb = relax.BlockBuilder()
    with bb.function("main", []):
        out = bb.emit_te(lambda: topi.full((2, 3), "float32", tir.FloatImm("float32", 1.5)),
                         primfunc_name_hint="fill")
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())
    np.testing.assert_array_equal(vm["main"]().numpy(), np.full((2, 3), 1.5, "float32"))
