"""A PrimFunc's signature: ``-> T.int32`` (TVM's ``ret_type``), IR types, and the struct info
Relax reads from it (TVM's ``PrimFunc.struct_info``)."""

import numpy as np
import pytest

import minitvm
from minitvm import ir, relax
from minitvm.ir import assert_structural_equal, structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import tir as T

SCALED_SUM = '''
@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), k: T.float32) -> T.float32:
    for i in range(16):
        B[i] = A[i] * k
    T.ret(k)
'''


def test_return_type_is_recorded_printed_and_read_back():
    f = from_source(SCALED_SUM)
    assert isinstance(f.ret_type, ir.PrimType) and f.ret_type.dtype == "float32"
    text = f.script()
    assert "def f(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\"), k: T.float32) -> T.float32:" in text
    assert_structural_equal(from_source(text), f)
    assert not structural_equal(from_source(SCALED_SUM.replace(" -> T.float32", "").replace("T.ret(k)", "")), f)
    with pytest.raises(TVMScriptError, match="returns a scalar"):
        from_source(SCALED_SUM.replace("-> T.float32", "-> T.Buffer((4,))"))


def test_struct_info_of_a_prim_func():
    f = from_source(SCALED_SUM)
    want = relax.FuncStructInfo([relax.TensorStructInfo([16], "float32"), relax.TensorStructInfo([16], "float32"),
                                 relax.PrimStructInfo("float32")], relax.PrimStructInfo("float32"), purity=False)
    assert_structural_equal(f.struct_info, want)

    @T.prim_func
    def reads_only(A: T.Buffer((8,), "float32")):
        tmp = T.decl_buffer((1,), "float32")
        tmp[0] = A[0]

    sinfo = reads_only.struct_info
    assert sinfo.purity and isinstance(sinfo.ret, relax.TupleStructInfo) and not sinfo.ret.fields


def test_the_function_computes_as_written():
    lib = minitvm.build(from_source(SCALED_SUM.replace(" -> T.float32", "").replace("    T.ret(k)\n", "")),
                        target="llvm")
    a = np.random.default_rng(11).standard_normal(16).astype("float32")
    b = minitvm.nd.empty((16,), "float32")
    lib["f"](minitvm.nd.array(a), b, 1.5)
    np.testing.assert_allclose(b.numpy(), a * 1.5, rtol=1e-6)


@pytest.mark.parametrize("typ, text", [
    (ir.PrimType("float32"), "T.float32"),
    (ir.PointerType(ir.PrimType("int32"), "global"), 'T.handle("int32", "global")'),
    (ir.TupleType([ir.PrimType("float32"), ir.PrimType("int32")]), "T.Tuple(T.float32, T.int32)"),
])
def test_ir_types_print_as_tvmscript(typ, text):
    assert typ.script() == text


def test_return_is_t_ret_and_prints_as_return():
    f = from_source(SCALED_SUM.replace("T.ret(k)", "return k * T.float32(2)"))
    g = from_source(SCALED_SUM.replace("T.ret(k)", "T.ret(k * T.float32(2))"))
    assert_structural_equal(f, g)
    assert "    return k * T.float32(2.0)" in f.script()
    assert_structural_equal(from_source(f.script()), f)
    with pytest.raises(TVMScriptError, match="return needs a value"):
        from_source(SCALED_SUM.replace("T.ret(k)", "return"))


def test_consecutive_loop_axes_print_as_one_remap_each_run():
    text = '''
@T.prim_func
def f(A: T.Buffer((8, 8, 8, 8), "float32")):
    for i0, i1, i2, i3 in T.grid(8, 8, 8, 8):
        with T.block("b"):
            v0 = T.axis.spatial(8, (i0 + 1) % 8)
            v1, v2 = T.axis.remap("SS", [i1, i2])
            v3 = T.axis.spatial(8, (i3 + 3) % 8)
            A[v0, v1, v2, v3] = T.float32(1)
'''
    f = from_source(text)
    printed = f.script()
    assert 'v1, v2 = T.axis.remap("SS", [i1, i2])' in printed and "v0 = T.axis.spatial(8, (i0 + 1) % 8)" in printed
    assert_structural_equal(from_source(printed), f)
    a = minitvm.nd.array(np.zeros((8, 8, 8, 8), "float32"))
    minitvm.build(f, target="llvm")["f"](a)
    np.testing.assert_array_equal(a.numpy(), np.ones((8, 8, 8, 8), "float32"))


def test_decorated_results_keep_their_python_names():
    from minitvm.script import ir as I

    @T.prim_func
    def kernel(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(1)

    @I.ir_module
    class Blank:
        pass

    assert kernel.__name__ == "kernel" and kernel.attrs["global_symbol"] == "kernel"
    assert Blank.__name__ == "Blank" and not Blank.functions
    # the name is no part of the IR: a function parsed from text is equal to it
    assert_structural_equal(from_source(kernel.script()), kernel)
