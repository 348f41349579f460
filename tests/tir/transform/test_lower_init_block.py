"""LowerInitBlock: T.init() becomes `if <first reduction step>: init` before the body."""

from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.testing import tir_builders as tb
from minitvm.tir import post_order_visit
from minitvm.tir.transform import LowerInitBlock


def blocks(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.Block) else None)
    return {b.name_hint: b for b in found}


def run(func):
    return LowerInitBlock()(IRModule({"main": func}))["main"]


def test_init_becomes_a_guarded_statement_before_the_update():
    func = tb.mm_relu()
    before, after = blocks(func)["Y"], blocks(run(func))["Y"]
    assert after.init is None
    guard, update = after.body.seq
    vk = before.iter_vars[2].var
    assert isinstance(guard, tir.IfThenElse) and guard.else_case is None
    assert_structural_equal(guard.condition, tir.EQ(vk, tir.const(0)))
    # the init statement and the update are kept as they were
    assert guard.then_case is before.init
    assert update is before.body


def test_every_reduction_variable_takes_part_in_the_condition():
    conv = blocks(run(tb.conv2d_int64()))["conv"]
    condition = conv.body.seq[0].condition
    ci, rh, rw = (iv.var for iv in conv.iter_vars[4:])
    expected = tir.And(tir.And(tir.EQ(ci, tir.const(0)), tir.EQ(rh, tir.const(0))),
                       tir.EQ(rw, tir.const(0)))
    assert_structural_equal(condition, expected)


def test_init_without_reduction_variables_runs_unconditionally():
    A = tb.buffer("A", (4,))
    func = tb.prim_func("f", [A], tb.grid((4,), lambda i: tb.block(
        "B", [("S", 4, i)], init=lambda vi: tb.store(A, (vi,), 0.0),
        body=lambda vi: tb.store(A, (vi,), A[vi] + tir.const(1.0)))))
    block = blocks(run(func))["B"]
    assert isinstance(block.body, tir.SeqStmt)
    assert isinstance(block.body.seq[0], tir.BufferStore)


def test_functions_without_init_are_left_alone():
    func = tb.broadcast_add()
    assert run(func) is func
    assert LowerInitBlock().info.name == "tir.LowerInitBlock"
