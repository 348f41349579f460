"""tir.stmt_functor: the statement walkers every floor above tir uses (schedules, passes,
codegen checks, the tuner, the schedule lab), and TVM's names for the visitors."""

from minitvm import te, tir
from minitvm.tir.stmt import Evaluate, For, SeqStmt
from minitvm.tir.stmt_functor import block_realizes, child_stmts, path_to, replace_stmt, walk_stmts


def _two_blocks() -> tir.PrimFunc:
    a = te.placeholder((4, 8), "float32", name="A")
    b = te.compute((4, 8), lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute((4, 8), lambda i, j: b[i, j] + 1.0, name="C")
    return te.create_prim_func([a, c])


def test_block_realizes_come_outer_first_with_their_loops():
    body = _two_blocks().body
    found = block_realizes(body)
    assert [r.block.name_hint for r, _ in found] == ["root", "B", "C"]
    for realize, path in found[1:]:
        loops = [s for s in path if isinstance(s, For)]
        assert [lp.loop_var.name for lp in loops] == ["i", "j"]
        assert path[0] is body and realize in child_stmts(path[-1])


def test_walk_and_path_to_agree():
    body = _two_blocks().body
    walked = [(s, p) for s, p in walk_stmts(body) if isinstance(s, For)]
    searched = path_to(body, lambda s: isinstance(s, For))
    assert len(walked) == 4
    assert [(s, p) for s, p in walked] == searched


def test_replace_stmt_by_identity_and_removal_from_a_sequence():
    body = _two_blocks().body
    (b_realize, b_path), _ = block_realizes(body)[1:]
    marker = Evaluate(tir.const(7, "int32"))
    new = replace_stmt(body, b_realize, marker)
    assert any(s is marker for s, _ in walk_stmts(new))
    assert not any(s is b_realize for s, _ in walk_stmts(new))
    assert any(s is b_realize for s, _ in walk_stmts(body))  # the old tree is unchanged
    outer_b = next(s for s in b_path if isinstance(s, For))
    seq = next(s for s, _ in walk_stmts(body) if isinstance(s, SeqStmt))
    removed = replace_stmt(body, outer_b, None)
    assert [r.block.name_hint for r, _ in block_realizes(removed)] == ["root", "C"]
    assert not any(isinstance(s, SeqStmt) for s, _ in walk_stmts(removed)) and len(seq.seq) == 2


def test_tvm_names_and_one_walker_for_schedules():
    assert tir.stmt_functor.post_order_visit is tir.post_order_visit
    assert tir.stmt_functor.substitute is tir.substitute
    assert tir.schedule.tree.block_realizes is block_realizes
    assert tir.schedule.tree.replace_stmt is replace_stmt
