"""The Simplify pass over whole functions."""

from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.testing import tir_builders as tb
from minitvm.tir import post_order_visit
from minitvm.tir.transform import Simplify


def test_unit_loops_vanish_and_guards_that_always_hold_too():
    A = tb.buffer("A", (4, 1))
    body = tb.grid((4, 1), lambda i, j: tir.IfThenElse(
        i < 4, tb.store(A, (i, j), tir.const(1.0))))
    func = tb.prim_func("f", [A], body)
    simple = Simplify()(IRModule({"main": func}))["main"]
    loops, ifs = [], []
    post_order_visit(simple.body, lambda n: loops.append(n) if isinstance(n, tir.For) else
                     ifs.append(n) if isinstance(n, tir.IfThenElse) else None)
    assert len(loops) == 1 and not ifs
    (i_loop,) = loops
    # the block-free body of the root block: A[i, 0] = 1.0
    store = i_loop.body
    assert_structural_equal(store.indices[1], tir.const(0))
    assert store.indices[0] is i_loop.loop_var


def test_block_iteration_domains_bound_simplification():
    A = tb.buffer("A", (16,))
    body = tb.grid((4, 4), lambda io, ii: tb.block(
        "A", [("S", 4, io), ("S", 4, ii)],
        body=lambda vo, vi: tb.store(A, (tir.floordiv(vo * 4 + vi, 4) * 4 + tir.floormod(vo * 4 + vi, 4),),
                                     tir.const(1.0))))
    simple = Simplify()(IRModule({"main": tb.prim_func("f", [A], body)}))["main"]
    stores = []
    post_order_visit(simple.body, lambda n: stores.append(n) if isinstance(n, tir.BufferStore) else None)
    block = []
    post_order_visit(simple.body, lambda n: block.append(n) if isinstance(n, tir.Block)
                     and n.name_hint == "A" else None)
    vo, vi = (iv.var for iv in block[0].iter_vars)
    assert_structural_equal(stores[0].indices[0], vo * 4 + vi)


def test_simplify_keeps_unchanged_functions_identical():
    func = tb.broadcast_add()
    assert Simplify()(IRModule({"main": func}))["main"] is func
