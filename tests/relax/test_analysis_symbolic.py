"""Symbolic variables a function defines and leaves free, expressions its struct info proves
non-negative, use-def chains, and the reshape-kernel test (``relax.analysis``)."""

from __future__ import annotations

from minitvm import relax, tir
from minitvm.ir import structural_equal
from minitvm.relax.analysis import (
    collect_non_negative_expressions,
    defined_symbolic_vars,
    free_symbolic_vars,
    has_reshape_pattern,
    name_to_binding,
    udchain,
    used_vars,
)
from minitvm.script import tir as T


def _ids(vs):
    return {id(v) for v in vs}


def test_defined_and_free_symbolic_vars():
    n, m, k, p = (tir.Var(s, "int64") for s in "nmkp")
    x = relax.Var("x", relax.TensorStructInfo([m, m + n], "float32"))
    s = relax.Var("s", relax.ShapeStructInfo([k]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        bb.match_cast(x, relax.TensorStructInfo([m, p], "float32"))
        bb.emit_func_output(relax.const(1))
    func = bb.get()["main"]
    # m is a bare dimension of a parameter, k of a shape parameter, p of a match_cast pattern;
    # n appears only inside m + n, which nothing can solve for
    assert _ids(defined_symbolic_vars(func)) == _ids([m, k, p])
    assert _ids(free_symbolic_vars(func)) == _ids([n])


def test_non_negative_expressions_come_from_shapes_not_prim_values():
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    sinfo = relax.FuncStructInfo(
        [relax.TensorStructInfo([1024, m, n - 2], "float32"), relax.ShapeStructInfo([m, n]),
         relax.PrimStructInfo(value=n + 5)], relax.TupleStructInfo([]))
    got = collect_non_negative_expressions(sinfo)
    assert len(got) == 3 and all(structural_equal(a, b) for a, b in zip(got, [m, n - 2, n]))


def test_use_def_chains_and_bindings_by_name():
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.add(x, x))
            lv1 = bb.emit(relax.op.multiply(lv0, x))
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    chains = udchain(func.body.blocks[0])
    assert chains[x] == [lv0, lv1] and chains[lv0] == [lv1] and chains[gv] == []
    assert used_vars(relax.op.multiply(lv0, x)) == [lv0, x]
    assert [b.var for b in name_to_binding(func)["lv"]] == [lv0]


@T.prim_func
def _reshape_topi_order(a: T.Buffer((1, 2, 3, 4), "float32"), b: T.Buffer((8, 3), "float32")):
    for i0, i1 in T.grid(8, 3):
        with T.block("T_reshape"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            b[v0, v1] = a[(v0 * 3 + v1) // 24, (v0 * 3 + v1) % 24 // 12, (v0 * 3 + v1) % 12 // 4, (v0 * 3 + v1) % 4]


@T.prim_func
def _transpose(a: T.Buffer((4, 6), "float32"), b: T.Buffer((6, 4), "float32")):
    for i0, i1 in T.grid(6, 4):
        with T.block("T"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            b[v0, v1] = a[v1, v0]


def test_has_reshape_pattern_accepts_topi_index_order_in_int32():
    assert has_reshape_pattern(_reshape_topi_order)
    assert not has_reshape_pattern(_transpose)
