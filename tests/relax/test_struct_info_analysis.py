"""TVM's graded base check, least common ancestors, erasure with values, call-result
derivation and the symbolic-variable analyses (relax.analysis), on small struct infos."""

from __future__ import annotations

import pytest

from minitvm import relax, tir
from minitvm.ir import VDevice, structural_equal
from minitvm.relax.analysis import (
    BaseCheckResult,
    collect_non_negative_expressions,
    defined_symbolic_vars,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    free_symbolic_vars,
    struct_info_base_check,
    struct_info_lca,
)

T = relax.TensorStructInfo
BR = BaseCheckResult


def test_base_check_grades():
    n = tir.Var("n", "int64")
    obj = relax.ObjectStructInfo()
    # the static kind already refutes a narrower annotation on an object: L1; kinds apart: L0
    assert struct_info_base_check(T(ndim=2, dtype="int32"), obj) == BR.FAIL_L1
    assert struct_info_base_check(T(ndim=2, dtype="int32"), relax.ShapeStructInfo(ndim=2)) == BR.FAIL_L0
    assert struct_info_base_check(T(ndim=2, dtype="int32"), T(ndim=2, dtype="float32")) == BR.FAIL_L0
    # a symbolic dimension that cannot be proven equal: L2 only
    assert struct_info_base_check(T((1, 2, 3), "int32"), T((1, n, 3), "int32")) == BR.FAIL_L2
    assert struct_info_base_check(T((1, n, 2), "int32"), T((1, n, 3), "int32")) == BR.FAIL_L0
    # a vdevice on the base must be matched
    llvm, cuda = VDevice("llvm"), VDevice("cuda", 0)
    assert struct_info_base_check(T(ndim=2, vdevice=llvm), T(ndim=2, vdevice=cuda)) == BR.FAIL_L0
    assert struct_info_base_check(T(ndim=2, vdevice=llvm), T(ndim=2)) == BR.FAIL_L1
    assert struct_info_base_check(T(ndim=2), T(ndim=2, vdevice=cuda)) == BR.PASS


def test_function_signatures_compare_params_covariantly_up_to_renaming():
    def sig(c):
        n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
        return relax.FuncStructInfo([T((c, n, m), "float32")], T((c, n), "float32"))

    erased = relax.FuncStructInfo([T(ndim=3, dtype="float32")], T(ndim=2, dtype="float32"))
    assert struct_info_base_check(sig(1), sig(1)) == BR.PASS  # other variables, same signature
    assert struct_info_base_check(erased, sig(1)) == BR.PASS
    assert struct_info_base_check(sig(1), erased) == BR.FAIL_L2
    assert structural_equal(struct_info_lca(sig(1), sig(2)), erased)


def test_lca_of_prim_values_and_dtypes():
    zero32, one32 = tir.const(0, "float32"), tir.const(1, "float32")
    a, b = relax.PrimStructInfo(value=zero32), relax.PrimStructInfo(value=tir.const(0, "float32"))
    assert struct_info_lca(a, b) is a  # the same value: kept
    assert structural_equal(struct_info_lca(a, relax.PrimStructInfo(value=one32)),
                            relax.PrimStructInfo("float32"))
    assert isinstance(struct_info_lca(relax.PrimStructInfo("int8"), relax.PrimStructInfo("int16")),
                      relax.ObjectStructInfo)


def test_erase_substitutes_known_values_and_forgets_the_rest():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    s = T([m + 1, n], "float32")
    assert structural_equal(erase_to_well_defined(s, {n: 2, m: 3}), T([4, 2], "float32"))
    assert structural_equal(erase_to_well_defined(s, {m: m}), T(ndim=2, dtype="float32"))
    shape = relax.Var("shape", relax.ShapeStructInfo(ndim=2))
    t = T(shape, "int32")
    assert structural_equal(erase_to_well_defined(t, None, {shape: relax.ShapeExpr([5, 7])}),
                            T([5, 7], "int32"))
    assert structural_equal(erase_to_well_defined(t), T(ndim=2, dtype="int32"))


def test_derive_binds_through_tuples_and_refuses_static_mismatch():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    k = tir.Var("k", "int64")
    fsig = relax.FuncStructInfo([relax.TupleStructInfo([T((n, 2), "float32"), T((n + 2, m), "float32")])],
                                relax.TupleStructInfo([T((m, n), "float32")]))
    arg = relax.Var("a", relax.TupleStructInfo([T((k, 2), "float32"), T((k + 2, 10), "float32")]))
    ret = derive_call_ret_struct_info(fsig, relax.Call(relax.GlobalVar("f"), [arg]))
    assert structural_equal(ret, relax.TupleStructInfo([T((10, k), "float32")]))
    with pytest.raises(relax.StructInfoError, match="argument 0 type mismatch"):
        derive_call_ret_struct_info(fsig, relax.Call(relax.GlobalVar("f"),
                                                     [relax.Var("o", relax.ObjectStructInfo())]))


def test_defined_and_free_symbolic_vars():
    n, m, k, p = (tir.Var(c, "int64") for c in "nmkp")
    bb = relax.BlockBuilder()
    x = relax.Var("x", T([m, m + n], "float32"))
    with bb.function("main", [x]):
        bb.match_cast(x, T([m, k], "float32"))
        bb.emit(relax.call_dps_packed("ext", x, T([p, 4], "float32")))
        bb.emit_func_output(relax.const(1))
    func = bb.get()["main"]
    assert [v.name for v in defined_symbolic_vars(func)] == ["m", "k"]
    assert [v.name for v in free_symbolic_vars(func)] == ["n", "p"]


def test_non_negative_expressions_leave_out_prim_values():
    n = tir.Var("n", "int64")
    sinfo = relax.FuncStructInfo([T((1024, n - 2), "float32"), relax.PrimStructInfo(value=n - 7)],
                                 relax.ShapeStructInfo([n - 2, n]))
    found = collect_non_negative_expressions(sinfo)
    assert len(found) == 2 and structural_equal(found[0], n - 2) and found[1] is n
