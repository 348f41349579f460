"""Relax TVMScript: parsing (``@R.function`` / ``@I.ir_module``), printing, round trips, errors."""
# TVMScript bodies are parsed, never run: `cls`, names declared by shape annotations and
# bindings used by nothing but the printed text look undefined/unused to ruff.
# ruff: noqa: F821, F841

from __future__ import annotations

import numpy as np
import pytest

from minitvm import ir, relax, tir
from minitvm.script import TVMScriptError, from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T
from tests.relax.models import build_linear_relu


def assert_roundtrip(node):
    """parse(print(node)) equals node; returns the printed text.

    Modules are compared function by function: a BlockBuilder module may share one
    symbolic ``n`` between ``main`` and the PrimFuncs emit_te made, while the printed text
    declares ``n`` in each function (as TVM prints it), so each function of the parsed
    module has its own ``n``.
    """
    text = node.script()
    parsed = from_source(text)
    assert relax.analysis.well_formed_errors(parsed) == []
    if isinstance(node, ir.IRModule):
        assert [gv.name_hint for gv in parsed.functions] == [gv.name_hint for gv in node.functions]
        for gv, func in node.functions.items():
            ir.assert_structural_equal(func, parsed[gv.name_hint], map_free_vars=True)
        assert parsed.script() == text
    else:
        ir.assert_structural_equal(node, parsed)
    return text


# -- the MLC course's end-to-end module ------------------------------------------------------------


@I.ir_module
class MLPModule:
    @T.prim_func
    def relu0(x: T.Buffer((1, 128), "float32"), y: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "relu0", "tir.noalias": True})
        for i, j in T.grid(1, 128):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                y[vi, vj] = T.max(x[vi, vj], T.float32(0))

    @T.prim_func
    def linear0(X: T.Buffer((1, 784), "float32"), W: T.Buffer((128, 784), "float32"),
                B: T.Buffer((128,), "float32"), Z: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "linear0", "tir.noalias": True})
        Y = T.alloc_buffer((1, 128), "float32")
        for i, j, k in T.grid(1, 128, 784):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 128):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((128, 784), "float32"),
             b0: R.Tensor((128,), "float32")):
        with R.dataflow():
            lv0 = R.call_tir(cls.linear0, (x, w0, b0), out_sinfo=R.Tensor((1, 128), dtype="float32"))
            lv1 = R.call_tir(cls.relu0, (lv0,), out_sinfo=R.Tensor((1, 128), dtype="float32"))
            gv = lv1
            R.output(gv)
        return gv


def test_mlc_module_structure():
    main = MLPModule["main"]
    assert isinstance(main, relax.Function)
    assert [p.name for p in main.params] == ["x", "w0", "b0"]
    assert main.attrs["global_symbol"] == "main"
    (block,) = main.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    lv0, lv1, gv = block.bindings
    assert isinstance(lv0.var, relax.DataflowVar) and isinstance(lv1.var, relax.DataflowVar)
    assert type(gv.var) is relax.Var and main.body.body is gv.var
    call = lv0.value
    assert call.op.name == "relax.call_tir"
    assert call.args[0] is MLPModule.get_global_var("linear0")
    assert [a.name for a in call.args[1].fields] == ["x", "w0", "b0"]
    ir.assert_structural_equal(lv1.var.struct_info, relax.TensorStructInfo((1, 128), "float32"))
    ir.assert_structural_equal(main.ret_struct_info, relax.TensorStructInfo((1, 128), "float32"))


def test_mlc_module_prints_like_tvm():
    text = assert_roundtrip(MLPModule)
    ir.assert_structural_equal(MLPModule, from_source(text))  # no shared variables: whole module
    assert "# from minitvm.script import relax as R" in text
    assert "@R.function\n    def main(x: R.Tensor((1, 784), dtype=\"float32\")" in text
    assert "        cls = Module\n        with R.dataflow():" in text
    assert ("lv0 = R.call_tir(cls.linear0, (x, w0, b0), "
            "out_sinfo=R.Tensor((1, 128), dtype=\"float32\"))") in text
    assert "lv1 = R.call_tir(cls.relu0, (lv0,)," in text
    assert "            R.output(gv)\n        return gv" in text


def test_equal_to_block_builder_module():
    x = relax.Var("x", relax.TensorStructInfo((1, 784), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((128, 784), "float32"))
    b0 = relax.Var("b0", relax.TensorStructInfo((128,), "float32"))
    linear0, relu0 = MLPModule.get_global_var("linear0"), MLPModule.get_global_var("relu0")
    bb = relax.BlockBuilder(ir.IRModule({linear0: MLPModule[linear0], relu0: MLPModule[relu0]}))
    with bb.function("main", [x, w0, b0]):
        with bb.dataflow():
            out = relax.TensorStructInfo((1, 128), "float32")
            lv0 = bb.emit(relax.call_tir(linear0, (x, w0, b0), out))
            lv1 = bb.emit(relax.call_tir(relu0, (lv0,), out))
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    ir.assert_structural_equal(bb.get(), MLPModule)


def test_call_dps_packed_variant():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((128, 784), "float32"),
                 b0: R.Tensor((128,), "float32")):
            with R.dataflow():
                lv0 = R.call_dps_packed("env.linear", (x, w0, b0), out_sinfo=R.Tensor((1, 128), dtype="float32"))
                lv1 = R.call_dps_packed("env.relu", (lv0,), out_sinfo=R.Tensor((1, 128), dtype="float32"))
                gv = lv1
                R.output(gv)
            return gv

    call = Mod["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_dps_packed"
    assert call.args[0].global_symbol == "env.linear"
    text = assert_roundtrip(Mod)
    assert 'R.call_dps_packed("env.linear", (x, w0, b0), out_sinfo=R.Tensor((1, 128), dtype="float32"))' in text


def test_out_ty_alias_and_several_outputs():
    @I.ir_module
    class Mod:
        @T.prim_func
        def split(a: T.Buffer((4,), "float32"), b: T.Buffer((2,), "float32"), c: T.Buffer((2,), "float32")):
            for i in range(2):
                with T.block("b"):
                    vi = T.axis.spatial(2, i)
                    b[vi] = a[vi]
                    c[vi] = a[vi + 2]

        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32")):
            t = R.call_tir(cls.split, (x,), out_ty=[R.Tensor((2,), "float32"), R.Tensor((2,), "float32")])
            return t

    text = assert_roundtrip(Mod)
    assert "out_sinfo=[R.Tensor((2,), dtype=\"float32\"), R.Tensor((2,), dtype=\"float32\")]" in text


# -- symbolic shapes, match_cast, tuples, ops ---------------------------------------------------------


@R.function
def dynamic_mlp(x: R.Tensor(("n", 784), "float32"), w: R.Tensor((784, 128), "float32"),
                b: R.Tensor((128,), "float32")) -> R.Tensor(("n", 128), "float32"):
    n = T.int64()
    with R.dataflow():
        lv0 = R.matmul(x, w)
        lv1 = R.add(lv0, b)
        gv: R.Tensor((n, 128), "float32") = R.nn.relu(lv1)
        R.output(gv)
    return gv


def test_symbolic_batch_dimension():
    f = dynamic_mlp
    (n,) = [d for d in f.params[0].struct_info.shape_values if isinstance(d, tir.Var)]
    assert n.name == "n" and n.dtype == "int64"
    lv1 = f.body.blocks[0].bindings[1].var
    assert lv1.struct_info.shape_values[0] is n  # one `n` everywhere in the function
    assert f.ret_struct_info.shape_values[0] is n
    text = assert_roundtrip(f)
    assert 'def main(x: R.Tensor(("n", 784), dtype="float32")' in text or \
        'def dynamic_mlp(x: R.Tensor(("n", 784), dtype="float32")' in text
    assert "    n = T.int64()\n" in text
    assert 'lv1: R.Tensor((n, 128), dtype="float32") = R.add(lv0, b)' in text


def test_symbolic_dimension_from_string_expression_and_new_name():
    @R.function
    def f(x: R.Tensor(("n", "n * 2"), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        y = R.match_cast(x, R.Tensor((m, k), "float32"))  # m, k: declared by the parser
        return y

    n, two_n = f.params[0].struct_info.shape_values
    assert isinstance(n, tir.Var)
    assert isinstance(two_n, tir.Mul) and two_n.a is n
    mc = f.body.blocks[0].bindings[0]
    assert isinstance(mc, relax.MatchCast)
    assert [d.name for d in mc.struct_info.shape_values] == ["m", "k"]
    text = assert_roundtrip(f)
    assert 'R.Tensor(("n", "n * 2"), dtype="float32")' in text


def test_match_cast_defines_dimensions():
    @R.function
    def f(x: R.Tensor(ndim=2, dtype="float32")):
        m = T.int64()
        y = R.match_cast(x, R.Tensor((m, 4), "float32"))
        z = R.add(y, y)
        return z

    mc, add = f.body.blocks[0].bindings
    m = mc.struct_info.shape_values[0]
    assert mc.var.struct_info.shape_values[0] is m
    assert add.var.struct_info.shape_values[0] is m
    ir.assert_structural_equal(f.ret_struct_info, relax.TensorStructInfo(None, "float32", ndim=2))
    text = assert_roundtrip(f)
    assert 'y: R.Tensor((m, 4), dtype="float32") = R.match_cast(x, R.Tensor((m, 4), dtype="float32"))' in text


def test_tuples_and_get_item():
    @R.function
    def f(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3,), "float32")):
        t = (x, y)
        a = t[0]
        b = t[1]
        c = R.add(a, b)
        return (c, t)

    t, a, b, c = f.body.blocks[0].bindings
    assert isinstance(t.value, relax.Tuple) and isinstance(a.value, relax.TupleGetItem)
    assert a.value.index == 0 and b.value.index == 1
    assert isinstance(f.ret_struct_info, relax.TupleStructInfo)
    text = assert_roundtrip(f)
    assert "a: R.Tensor((2, 3), dtype=\"float32\") = t[0]" in text
    assert "return (c, t)" in text


def test_nested_calls_are_bound_and_operators():
    @R.function
    def f(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            y = R.exp(R.multiply(x, x))
            z = x + y
            R.output(z)
        return z

    b0, b1, b2 = f.body.blocks[0].bindings
    assert b0.value.op.name == "relax.multiply" and b1.value.op.name == "relax.exp"
    assert b1.value.args[0] is b0.var and b2.value.op.name == "relax.add"
    assert_roundtrip(f)


def test_ops_resolve_generically():
    assert R.add is relax.op.add and R.matmul is relax.op.matmul
    assert R.nn.relu is relax.op.nn.relu and R.ewise_fma is relax.op.ewise_fma


def test_constants_and_values():
    @R.function
    def f(x: R.Tensor((2, 2), "float32")) -> R.Tensor((2, 2), "float32"):
        with R.dataflow():
            c = R.const([[1.0, 2.5], [3.0, -4.0]], "float32")
            one = R.const(1, "int32")
            s = R.shape([2, 2])
            p = R.prim_value(3)
            q = R.prim_value(T.float32(0.5))
            gv = R.add(x, c)
            R.output(gv)
        return gv

    c = f.body.blocks[0].bindings[0].value
    np.testing.assert_array_equal(c.data.numpy(), [[1.0, 2.5], [3.0, -4.0]])
    text = assert_roundtrip(f)
    assert 'c = R.const([[1.0, 2.5], [3.0, -4.0]], "float32")' in text
    assert "s = R.shape([2, 2])" in text and "p = R.prim_value(3)" in text


def test_large_constant_printed_as_metadata_or_inline():
    x = relax.Var("x", relax.TensorStructInfo((128,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        gv = bb.emit(relax.op.add(x, relax.const(np.arange(128, dtype="float32"))))
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    assert 'metadata["relax.expr.Constant"][0]' in func.script()
    parsed = from_source(func.script(show_meta=True))
    ir.assert_structural_equal(func, parsed)
    # the placeholder text parses when the constants are given back as `metadata`
    metadata = {"relax.expr.Constant": [func.body.blocks[0].bindings[0].value.args[1]]}
    ir.assert_structural_equal(func, from_source(func.script(), extra_vars={"metadata": metadata}))


def test_function_options_attrs_and_packed_calls():
    @R.function(pure=False, private=True)
    def f(x: R.Tensor((2,), "float32"), s: R.Shape(["m"]), o: R.Object) -> R.Object:
        R.func_attr({"num_input": 1})
        _ = R.call_packed("vm.builtin.print", x, sinfo_args=R.Object)
        y = R.call_pure_packed("my.identity", x, sinfo_args=R.Tensor((2,), "float32"))
        return o

    assert not f.is_pure and "global_symbol" not in f.attrs and f.attrs["num_input"] == 1
    text = assert_roundtrip(f)
    assert "@R.function(pure=False, private=True)" in text
    assert 'R.func_attr({"num_input": 1})' in text
    assert 's: R.Shape(["m"])' in text


def test_if_else():
    @R.function
    def f(c: R.Prim("bool"), x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        if c:
            y = R.add(x, x)
        else:
            z = R.multiply(x, x)
            y = R.exp(z)
        return y

    (block,) = f.body.blocks
    (binding,) = block.bindings
    assert isinstance(binding.value, relax.If)
    # as TVM's normalizer, the branch's value (a call) is bound to a variable the branch returns
    (z_binding, exp_binding) = binding.value.false_branch.blocks[0].bindings
    assert binding.value.false_branch.body is exp_binding.var
    text = assert_roundtrip(f)
    assert "    if c:\n" in text and "    else:\n" in text


def test_module_functions_call_each_other():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
            y = cls.double(x)
            return y

        @R.function(private=True)
        def double(x: R.Tensor(("n", 3), "float32")) -> R.Tensor(("n", 3), "float32"):
            y = R.add(x, x)
            return y

    (binding,) = Mod["main"].body.blocks[0].bindings
    assert binding.value.op is Mod.get_global_var("double")
    ir.assert_structural_equal(binding.var.struct_info, relax.TensorStructInfo((2, 3), "float32"))
    assert_roundtrip(Mod)


# -- BlockBuilder modules round-trip ---------------------------------------------------------------------


@pytest.mark.parametrize("batch", [1, "n"])
def test_block_builder_models_round_trip(batch):
    mod = build_linear_relu(batch=tir.Var("n", "int64") if batch == "n" else batch)
    assert_roundtrip(mod)


def test_printing_entry_points():
    f = dynamic_mlp
    assert f.script() == str(f)
    assert "<pre" in f._repr_html_() and "dynamic_mlp" in f._repr_html_()
    assert R.Tensor(("n", 4), "float32").script().startswith("R.Tensor((n, 4)")
    var = f.params[0]
    assert var.script() == "x" and str(var) == "x"
    block = f.body.blocks[0]
    assert block.script().startswith("with R.dataflow():")


def test_struct_info_annotations():
    ir.assert_structural_equal(R.Tensor((1, 784), "float32"), relax.TensorStructInfo((1, 784), "float32"))
    ir.assert_structural_equal(R.Tensor(dtype="float32", ndim=2),
                               relax.TensorStructInfo(None, "float32", ndim=2))
    assert isinstance(R.Object(), relax.ObjectStructInfo)
    assert R.Shape([1, 2]).ndim == 2 and R.Prim("int64").dtype == "int64"
    assert len(R.Tuple(R.Tensor((1,), "float32"), R.Object).fields) == 2


# -- errors ---------------------------------------------------------------------------------------------


def _error_of(text: str) -> TVMScriptError:
    with pytest.raises(TVMScriptError) as info:
        from_source(text)
    return info.value


def test_error_shape_mismatch_in_add_points_at_the_call():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2, 3), \"float32\"), y: R.Tensor((4, 3), \"float32\")):\n"
        "    with R.dataflow():\n"
        "        z = R.add(x, y)\n"
        "        R.output(z)\n"
        "    return z\n")
    assert err.lineno == 4
    assert "relax.add" in err.reason and "(2, 3)" in err.reason and "(4, 3)" in err.reason
    lines = str(err).splitlines()
    code = next(ln for ln in lines if "R.add(x, y)" in ln)
    caret = lines[lines.index(code) + 1]
    start = code.index("R.add(x, y)")
    assert caret.index("^") == start and caret.count("^") == len("R.add(x, y)")


def test_error_shape_mismatch_in_decorated_function():
    with pytest.raises(TVMScriptError) as info:
        @R.function
        def f(x: R.Tensor((2, 3), "float32"), y: R.Tensor((4, 3), "float32")):
            z = R.add(x, y)
            return z
    assert info.value.filename.endswith("test_relax_script.py")
    assert "cannot broadcast shapes (2, 3) and (4, 3)" in info.value.reason


def test_error_unknown_op():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2, 3), \"float32\")):\n"
        "    y = R.no_such_op(x)\n"
        "    return y\n")
    assert err.lineno == 3 and "R.no_such_op" in err.reason
    assert "^" * len("R.no_such_op") in str(err)


def test_error_undefined_name():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2, 3), \"float32\")):\n"
        "    y = R.add(x, zz)\n"
        "    return y\n")
    assert err.lineno == 3 and "unknown name 'zz'" in err.reason


def test_error_unknown_module_function():
    err = _error_of(
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2,), \"float32\")):\n"
        "        y = R.call_tir(cls.nope, (x,), out_sinfo=R.Tensor((2,), \"float32\"))\n"
        "        return y\n")
    assert err.lineno == 5 and "no function 'nope'" in err.reason and "main" in err.reason


def test_error_dataflow_var_used_after_block():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2,), \"float32\")):\n"
        "    with R.dataflow():\n"
        "        y = R.add(x, x)\n"
        "        z = R.add(y, x)\n"
        "        R.output(z)\n"
        "    return y\n")
    assert err.lineno == 7 and "'y' is a DataflowVar" in err.reason and "R.output" in err.reason


def test_error_output_not_bound_in_block():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2,), \"float32\")):\n"
        "    with R.dataflow():\n"
        "        y = R.add(x, x)\n"
        "        R.output(x)\n"
        "    return x\n")
    assert err.lineno == 5 and "'x' is not bound in this dataflow block" in err.reason


def test_error_bad_symbolic_dimension_points_at_annotation():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((\"n +\", 2), \"float32\")):\n"
        "    return x\n")
    assert err.lineno == 2 and "symbolic dimension 'n +'" in err.reason


def test_return_annotation_is_not_checked_against_the_body():
    # as TVM's parser: the annotation is taken as written
    f = from_source(
        "@R.function\n"
        "def f(x: R.Tensor((2,), \"float32\")) -> R.Tensor((3,), \"float32\"):\n"
        "    return x\n")
    ir.assert_structural_equal(f.ret_struct_info, relax.TensorStructInfo((3,), "float32"))


def test_error_impure_call_in_pure_function():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2,), \"float32\")):\n"
        "    y = R.call_packed(\"vm.builtin.print\", x, sinfo_args=R.Object)\n"
        "    return x\n")
    assert err.lineno == 3 and "pure=False" in err.reason


def test_error_missing_return():
    err = _error_of(
        "@R.function\n"
        "def f(x: R.Tensor((2,), \"float32\")):\n"
        "    y = R.add(x, x)\n")
    assert "no return statement" in err.reason


def test_call_tir_with_tir_vars_and_empty_output():
    @I.ir_module
    class Mod:
        @T.prim_func
        def fill(a: T.handle, m: T.int64):
            A = T.match_buffer(a, (m,), "float32")
            for i in range(m):
                with T.block("A"):
                    vi = T.axis.spatial(m, i)
                    A[vi] = T.float32(1)

        @R.function
        def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
            n = T.int64()
            with R.dataflow():
                y = R.call_tir(cls.fill, (), out_sinfo=R.Tensor((n,), "float32"), tir_vars=R.shape([n]))
                R.output(y)
            with R.dataflow():
                z = R.add(y, y)
                R.output()
            return y

    call = Mod["main"].body.blocks[0].bindings[0].value
    assert len(call.args) == 3 and isinstance(call.args[2], relax.ShapeExpr)
    text = assert_roundtrip(Mod)
    # as TVM's normalizer, the two neighbouring dataflow blocks are one
    assert "tir_vars=R.shape([n])" in text and text.count("with R.dataflow():") == 1


def test_names_are_made_unique_when_printed():
    x = relax.Var("cls", relax.TensorStructInfo((2,), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((2,), "float32"))
    y2 = relax.Var("y", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y, y2]):
        a = bb.emit(relax.op.add(x, y), "a")
        b = bb.emit(relax.op.add(a, y2), "b")
        bb.emit_func_output(b)
    func = bb.get()["main"]
    text = func.script()
    assert "def main(cls_1: R.Tensor((2,), dtype=\"float32\"), y: " in text and ", y_1: R.Tensor" in text
    assert "R.add(a, y_1)" in text
    ir.assert_structural_equal(func, from_source(text))


def test_an_output_rebound_in_the_block_is_a_var_only_at_its_last_binding():
    """As TVM parses it: `relu = ...; relu = f(relu); R.output(relu)` makes the first binding a
    DataflowVar and only the last one the block's output Var (it printed and ran as two outputs)."""
    @I.ir_module
    class Rebound:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                relu = R.nn.relu(x)
                relu = R.add(relu, relu)
                R.output(relu)
            return relu

    kinds = [type(b.var).__name__ for b in Rebound["main"].body.blocks[0].bindings]
    assert kinds == ["DataflowVar", "Var"]
    x = np.random.default_rng(0).standard_normal(4).astype("float32")
    import minitvm
    vm = relax.VirtualMachine(minitvm.compile(Rebound, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](x).numpy(), 2 * np.maximum(x, 0), rtol=1e-6)
    reparsed = from_source(Rebound.script())
    ir.assert_structural_equal(reparsed, Rebound)
