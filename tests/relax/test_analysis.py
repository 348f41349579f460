"""Variables, unused bindings and struct-info reasoning."""

from __future__ import annotations

import pytest

from minitvm import relax, tir
from minitvm.ir import structural_equal
from minitvm.relax.analysis import (
    all_global_vars,
    bound_vars,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    free_vars,
    get_static_type,
    is_base_of,
    remove_all_unused,
    struct_info_lca,
)

from .models import build_linear_relu

T = relax.TensorStructInfo


def test_vars_and_global_vars():
    mod = build_linear_relu()
    main = mod["main"]
    assert [v.name_hint for v in bound_vars(main)] == ["x", "w", "lv", "lv1", "gv"]
    assert free_vars(main) == []
    assert [gv.name_hint for gv in all_global_vars(main)] == ["te_matmul", "te_relu"]
    body_call = main.body.blocks[0].bindings[1].value
    assert free_vars(body_call) == [main.body.blocks[0].bindings[0].var]


def _describe(value):
    if isinstance(value, relax.Var):
        return "var"
    return value.op.name if isinstance(value.op, relax.Op) else value.op.global_symbol


def test_remove_all_unused_inside_and_outside_dataflow():
    x = relax.Var("x", T((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], pure=False):  # it calls the impure extern print
        with bb.dataflow():
            dead = bb.emit(relax.op.exp(x))
            bb.emit(relax.op.add(dead, x))           # dead, and makes `dead` dead after it goes
            live = bb.emit(relax.op.nn.relu(x))
            gv = bb.emit_output(live)
        bb.emit(relax.op.exp(gv))                     # pure and unused outside dataflow
        kept = bb.emit(relax.call_pure_packed("f", gv, sinfo_args=T((2, 3), "float32")))
        bb.emit(relax.Call(relax.ExternFunc("print"), [gv], sinfo_args=[relax.ObjectStructInfo()]))
        bb.emit_func_output(kept)
    main = bb.get()["main"]
    cleaned = remove_all_unused(main)
    names = [[_describe(b.value) for b in block.bindings] for block in cleaned.body.blocks]
    # the impure extern call stays; pure unused computations go
    assert names == [["relax.nn.relu", "var"], ["relax.call_pure_packed", "print"]]
    assert relax.analysis.well_formed(cleaned)
    assert remove_all_unused(cleaned) is cleaned
    mod = remove_all_unused(bb.get())
    assert structural_equal(mod["main"], cleaned)


def test_is_base_of_and_lca(n):
    exact, rank, anything = T((n, 4), "float32"), T(ndim=2, dtype="float32"), relax.ObjectStructInfo()
    assert is_base_of(rank, exact) and not is_base_of(exact, rank)
    assert is_base_of(anything, exact) and exact.is_base_of(exact)
    assert not is_base_of(T(ndim=2, dtype="int32"), exact)
    assert is_base_of(T(dtype=None, ndim=-1), exact)
    lca = struct_info_lca(T((2, 4), "float32"), T((3, 4), "float32"))
    assert lca.shape is None and lca.ndim == 2 and lca.dtype == "float32"
    assert isinstance(struct_info_lca(exact, relax.ShapeStructInfo([1])), relax.ObjectStructInfo)
    tup = relax.TupleStructInfo([exact, relax.PrimStructInfo("int64")])
    assert is_base_of(relax.TupleStructInfo([rank, relax.PrimStructInfo("int64")]), tup)


def test_static_type_and_erasure(n):
    s = relax.TupleStructInfo([T((n, 4), "float32"), relax.ShapeStructInfo([n]), relax.PrimStructInfo(value=n)])
    static = get_static_type(s)
    assert structural_equal(static, relax.TupleStructInfo(
        [T(ndim=2, dtype="float32"), relax.ShapeStructInfo(ndim=1), relax.PrimStructInfo("int64")]))
    assert erase_to_well_defined(s, {n: n}) is s
    assert structural_equal(erase_to_well_defined(s), static)


def test_derive_call_ret_struct_info_substitutes_symbolic_vars(n):
    m = tir.Var("m", "int64")
    fsig = relax.FuncStructInfo([T((n, m), "float32")], T((m, n * 2), "float32"))
    a = relax.Var("a", T((3, 5), "float32"))
    ret = derive_call_ret_struct_info(fsig, relax.Call(relax.Var("f", fsig), [a]))
    assert [v.value for v in ret.shape.values] == [5, 6]
    # an argument of unknown shape leaves the result's rank only
    b = relax.Var("b", T(ndim=2, dtype="float32"))
    ret = derive_call_ret_struct_info(fsig, relax.Call(relax.Var("f", fsig), [b]))
    assert ret.shape is None and ret.ndim == 2


def test_tensor_type_alias_and_struct_info_text(n):
    assert structural_equal(relax.TensorType((n, 4), "float32"), T((n, 4), "float32"))
    assert relax.TensorType(2, "float16").ndim == 2
    assert repr(T((n, 4), "float32")) == 'R.Tensor((n, 4), "float32")'
    assert repr(T(ndim=3, dtype="int8")) == 'R.Tensor(ndim=3, dtype="int8")'
    assert all(v.dtype == "int64" for v in T((2, 3)).shape.values)


def test_shapes_must_be_int64():
    with pytest.raises(TypeError, match=r"dimension k has dtype int32, but Relax shapes are int64; "
                                        r"declare it as tir.Var\('k', \"int64\"\)"):
        T((tir.Var("k", "int32"), 4), "float32")
