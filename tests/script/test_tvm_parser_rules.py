"""Parser rules TVM's own tests pin down: what is refused, what is refined, Python-style loop
targets, explicit ``T.LetStmt``, printing of variables nothing defines."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def test_return_annotation_is_refined_by_a_more_precise_body():
    @R.function
    def f(x: R.Tensor((8, 4), "float32")) -> R.Tensor(None, "float32", ndim=2):
        y = R.add(x, x)
        return y

    assert_structural_equal(f.ret_struct_info, relax.TensorStructInfo((8, 4), "float32"))

    # TVM checks no annotation against the body: one the body does not refine stays as written
    @R.function
    def g(x: R.Tensor((8, 4), "float32")) -> R.Tensor(None, "float32", ndim=3):
        return x

    assert_structural_equal(g.ret_struct_info, relax.TensorStructInfo(None, "float32", ndim=3))


def test_unused_non_void_value_is_refused():
    with pytest.raises(TVMScriptError, match=r"R.add\(x, x\) .* is not used: bind it to a name"):
        @R.function(pure=False)
        def f(x: R.Tensor((), "int32")):
            R.add(x, x)
            return x


def test_private_function_with_global_symbol_is_refused():
    with pytest.raises(TVMScriptError, match="private .* cannot also have a global_symbol"):
        @R.function(private=True)
        def f(x: R.Tensor((), "int32")):
            R.func_attr({"global_symbol": "main"})
            return x
    with pytest.raises(TVMScriptError, match="private .* cannot also have a global_symbol"):
        @I.ir_module
        class Mod:
            @T.prim_func(private=True)
            def g(A: T.Buffer((4,), "float32")):
                T.func_attr({"global_symbol": "g"})
                A[0] = T.float32(1)


def test_loop_targets_unpack_as_python_does():
    @T.prim_func
    def starred(A: T.Buffer((4, 3, 5), "int32"), B: T.Buffer((4, 3), "int32")):
        for *spatial, k in T.grid(*A.shape):
            with T.block("reduce"):
                B[spatial] = B[spatial] + A[(*spatial, k)]

    @T.prim_func
    def one_name(A: T.Buffer((4, 3, 5), "int32"), B: T.Buffer((4, 3), "int32")):
        for ijk in T.grid(4, 3, 5):
            with T.block("reduce"):
                B[ijk[0], ijk[1]] = B[ijk[0], ijk[1]] + A[ijk]

    @T.prim_func
    def plain(A: T.Buffer((4, 3, 5), "int32"), B: T.Buffer((4, 3), "int32")):
        for i, j, k in T.grid(4, 3, 5):
            with T.block("reduce"):
                B[i, j] = B[i, j] + A[i, j, k]

    expected = plain.with_attr("global_symbol", "starred")
    assert_structural_equal(starred, expected)
    assert_structural_equal(one_name, plain.with_attr("global_symbol", "one_name"))
    a = np.random.default_rng(6).integers(-9, 9, (4, 3, 5)).astype("int32")
    b = minitvm.nd.array(np.zeros((4, 3), "int32"))  # accumulated into (no T.init: no reduce axis)
    minitvm.build(starred, target="llvm")["starred"](minitvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a.sum(axis=2))
    with pytest.raises(TVMScriptError, match="3 loops .* but at least 4 loop variables"):
        @T.prim_func
        def bad(A: T.Buffer((4, 3, 5), "int32")):
            for a, b, c, *d, e in T.grid(4, 3, 5):  # noqa: B007
                A[a, b, e] = 0


def test_explicit_let_stmt_keeps_the_binding():
    @T.prim_func
    def f(i: T.int32, A: T.Buffer((1,), "int32")):
        j = T.int32()
        T.LetStmt(i + 1, var=j)
        A[0] = j

    assert isinstance(f.body, tir.stmt.LetStmt) and f.body.var.name == "j"
    assert_structural_equal(from_source(f.script()), f)
    with pytest.raises(TVMScriptError, match="the variable is float32 but the value is int32"):
        @T.prim_func
        def g(i: T.int32):
            x = T.float32()
            T.LetStmt(i, var=x)


def test_variables_nothing_defines_are_declared_in_the_printed_text():
    # a use of a variable nothing defines is not well formed (TVM's check): only
    # check_well_formed=False lets such a function through, on the way in and back
    @T.prim_func(check_well_formed=False)
    def f(A: T.Buffer((4,), "int32")):
        n = T.int32()
        for i in range(4):
            A[i] = i * n

    text = f.script()
    assert "    n = T.int32()\n" in text
    assert_structural_equal(from_source(text, check_well_formed=False), f, map_free_vars=True)
    with pytest.raises(TVMScriptError, match="not well formed: n used but defined by no parameter"):
        from_source(text)


def test_lowercase_buffer_alias():
    @T.prim_func
    def f(A: T.buffer((4,), "float32")):
        A[0] = T.float32(1)

    assert f.buffer_map[f.params[0]].shape[0].value == 4
