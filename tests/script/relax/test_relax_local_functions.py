"""Relax parser forms TVM accepts: local functions, ``nonlocal``, branch results that are
match_casts or bare calls, ``return`` inside a dataflow block."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

RNG = np.random.default_rng(7)


def roundtrip(obj):
    again = from_source(obj.script())
    assert_structural_equal(again, obj)


def _make_module(dtype: str):
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3), dtype)):
            nonlocal dtype  # keeps `dtype` in main's closure, where the parser reads it
            y = R.add(x, x)
            return y

    return Mod


def test_nonlocal_reads_the_enclosing_function():
    for dtype in ("float32", "int32"):
        mod = _make_module(dtype)
        assert mod["main"].params[0].struct_info.dtype == dtype


def test_local_function_is_a_private_function_bound_to_its_name():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
            @R.function
            def scale(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
                b = R.multiply(a, y)  # reads the enclosing function's parameter
                return b

            z = scale(x)
            w = scale(z)
            return w

    first = Mod["main"].body.blocks[0].bindings[0]
    assert first.var.name == "scale" and isinstance(first.value, relax.Function)
    assert "global_symbol" not in (first.value.attrs or {})
    assert isinstance(first.var.struct_info, relax.FuncStructInfo)
    roundtrip(Mod)
    assert relax.analysis.well_formed(Mod)


def test_recursive_local_function_calls_itself_through_its_variable():
    @R.function
    def f(x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        @R.function
        def loop(k: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
            r = loop(k)
            return r

        out = loop(x)
        return out

    binding = f.body.blocks[0].bindings[0]
    inner_call = binding.value.body.blocks[0].bindings[0].value
    assert inner_call.op is binding.var
    roundtrip(f)


def test_local_prim_func_is_refused():
    with pytest.raises(TVMScriptError, match="PrimFunc cannot be defined inside a Relax function"):
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            @T.prim_func
            def k(a: T.Buffer((2,), "float32")):
                T.evaluate(0)

            return x


def test_branch_ending_in_match_cast_keeps_it():
    @R.function
    def f(a: R.Tensor((4,)), flag: R.Prim("bool")):
        if flag:
            b = R.match_cast(a, R.Tensor((4,), "float32"))
        else:
            b = R.match_cast(a, R.Tensor((4,), "float32"))
        return b

    (binding,) = f.body.blocks[0].bindings
    for branch in (binding.value.true_branch, binding.value.false_branch):
        (cast,) = branch.blocks[0].bindings
        assert isinstance(cast, relax.MatchCast) and branch.body is cast.var
    assert_structural_equal(f.ret_struct_info, relax.TensorStructInfo((4,), "float32"))


def test_branch_ending_in_a_bare_call_equals_the_bound_form():
    @R.function(pure=False, private=True)
    def bare(x: R.Tensor((), "int32"), c: R.Tensor((), "bool")) -> R.Tensor((), "int32"):
        if c:
            R.print(x, format="yes {}")
        else:
            R.print(x, format="no {}")
        return x

    @R.function(pure=False, private=True)
    def bound(x: R.Tensor((), "int32"), c: R.Tensor((), "bool")) -> R.Tensor((), "int32"):
        if c:
            y = R.print(x, format="yes {}")
        else:
            y = R.print(x, format="no {}")  # noqa: F841
        return x

    assert_structural_equal(bare, bound)


def test_return_inside_a_dataflow_block_outputs_what_it_returns():
    @R.function(private=True)
    def inside(a: R.Tensor((5,), "float32")):
        with R.dataflow():
            b = R.add(a, a)
            c = R.exp(b)
            return c

    @R.function(private=True)
    def after(a: R.Tensor((5,), "float32")):
        with R.dataflow():
            b = R.add(a, a)
            c = R.exp(b)
            R.output(c)
        return c

    assert_structural_equal(inside, after)
    x = RNG.uniform(-1, 1, 5).astype("float32")
    mod = minitvm.IRModule({"main": inside.with_attr("global_symbol", "main")})
    vm = relax.VirtualMachine(minitvm.compile(mod, relax_pipeline="zero"))
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), np.exp(x + x), rtol=1e-5)


def test_annotation_of_a_call_is_its_struct_info_and_of_a_variable_only_a_check():
    @R.function
    def f(x: R.Tensor((3, 4), "float32")):
        y: R.Tensor(ndim=2) = R.add(x, x)  # noqa: F841  (the call takes the annotation)
        z: R.Object = x  # an existing value keeps its own struct info
        return z

    y_binding, z_binding = f.body.blocks[0].bindings
    want = relax.TensorStructInfo(None, "", ndim=2)
    assert_structural_equal(y_binding.var.struct_info, want)
    assert_structural_equal(y_binding.value.struct_info, want)
    assert_structural_equal(z_binding.var.struct_info, relax.TensorStructInfo((3, 4), "float32"))
    with pytest.raises(TVMScriptError, match="does not match the annotation"):
        @R.function
        def g(x: R.Tensor((3, 4), "float32")):
            s: R.Shape = x
            return s


def test_relax_macro_pastes_its_bindings_and_returns_its_value():
    scale = R.const(2.0, "float32")

    @R.macro
    def double_then_exp(v):
        d = R.multiply(v, scale)  # `scale` as it was where the macro was defined
        e = R.exp(d)
        return e

    scale = R.const(100.0, "float32")  # noqa: F841  (a hygienic macro does not see this)

    @R.function(private=True)
    def with_macro(x: R.Tensor((4,), "float32")):
        y = double_then_exp(x)
        return y

    @R.function(private=True)
    def by_hand(x: R.Tensor((4,), "float32")):
        d = R.multiply(x, R.const(2.0, "float32"))
        e = R.exp(d)
        y = e
        return y

    assert_structural_equal(with_macro, by_hand)
    x = RNG.uniform(-1, 1, 4).astype("float32")
    mod = minitvm.IRModule({"main": with_macro.with_attr("global_symbol", "main")})
    vm = relax.VirtualMachine(minitvm.compile(mod, relax_pipeline="zero"))
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), np.exp(2 * x), rtol=1e-5)


def test_relax_macro_names_stay_inside_it():
    @R.macro
    def add_one(v):
        inner = R.add(v, R.const(1, "int32"))
        return inner

    with pytest.raises(TVMScriptError, match="inner"):
        @R.function
        def f(t: R.Tensor((), "int32")):
            u = add_one(t)  # noqa: F841
            return inner  # noqa: F821


def test_extern_func_in_a_module_class_round_trips():
    @I.ir_module
    class Mod:
        ext = R.ExternFunc("my_ext")

        @R.function
        def main(a: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return a

    assert isinstance(Mod["ext"], relax.ExternFunc) and Mod["ext"].global_symbol == "my_ext"
    assert 'ext = R.ExternFunc("my_ext")' in Mod.script()
    roundtrip(Mod)


def test_call_tir_inplace_needs_an_inline_tuple():
    with pytest.raises(TVMScriptError, match="in-line tuple"):
        @I.ir_module
        class Mod:  # noqa: F841
            @R.function
            def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")):
                cls = Mod
                args = (x, y)
                res = R.call_tir_inplace(cls.copy, args, inplace_indices=[0],
                                         out_sinfo=R.Tensor((2,), "float32"))
                return res

            @T.prim_func
            def copy(A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")):
                for i in range(2):
                    with T.block("c"):
                        vi = T.axis.remap("S", [i])
                        A[vi] = B[vi]


def test_annotation_of_a_call_is_refused_only_when_provably_wrong():
    @R.function
    def f(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        # (n,) might be (2 * n - n,): not provably wrong, so the annotation is taken
        y: R.Tensor((2 * n - n,), "float32") = R.exp(x)
        return y

    (binding,) = f.body.blocks[0].bindings
    assert len(binding.var.struct_info.shape.values) == 1
    with pytest.raises(TVMScriptError, match="does not match the annotation"):
        @R.function
        def g(x: R.Tensor((4,), "float32")):
            y: R.Tensor((5,), "float32") = R.exp(x)
            return y
    with pytest.raises(TVMScriptError, match="does not match the annotation"):
        @R.function
        def h(x: R.Tensor((4,), "float32")):
            y: R.Tensor((4,), "int32") = R.exp(x)
            return y


def test_local_function_listed_in_r_output_of_its_dataflow_block():
    # `def f` inside a dataflow block binds f; R.output(f) makes it a Var usable after the block
    from minitvm.relax import DataflowVar
    from minitvm.script import relax as R

    @R.function(pure=False)
    def main(x: R.Tensor((2,), "float32")):
        with R.dataflow():
            @R.function
            def double(a: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
                b = R.add(a, a)
                return b
            y = R.add(x, x)
            R.output(double, y)
        q = double(y)
        return q

    bound = main.body.blocks[0].bindings[0].var
    assert bound.name_hint == "double" and not isinstance(bound, DataflowVar)
