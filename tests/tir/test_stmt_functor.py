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



def _reference_walk(n, before, after):
    """The plain walks spelled simply: every field (a dict field's values, no buffer_map), a
    sequence's items; nodes but no buffers."""
    from minitvm.ir.node import Node
    from minitvm.tir.functor import walked_fields

    if isinstance(n, (tuple, list)):
        for x in n:
            _reference_walk(x, before, after)
        return
    if not isinstance(n, Node) or isinstance(n, tir.Buffer):
        return
    if before is not None and before(n) is False:
        return
    for name in walked_fields(type(n)):
        value = getattr(n, name)
        if isinstance(value, dict):
            if name == "buffer_map":
                continue
            value = tuple(value.values())
        _reference_walk(value, before, after)
    if after is not None:
        after(n)


def test_plain_walks_meet_every_node_in_the_reference_order():
    # post_order_visit / pre_order_visit make no call per leaf value (a dtype, None); they must
    # meet the same nodes in the same order as the plain recursion
    from minitvm.tir.functor import post_order_visit, pre_order_visit

    func = _two_blocks().with_attr("marker", tir.const(3, "int32"))
    for walk, slot in ((pre_order_visit, 0), (post_order_visit, 1)):
        got, want = [], []
        walk([func, (func.body,)], got.append)
        _reference_walk([func, (func.body,)], *((want.append, None) if slot == 0 else (None, want.append)))
        assert len(got) == len(want) > 50 and all(a is b for a, b in zip(got, want))
    assert any(isinstance(n, tir.IntImm) and n.value == 3 for n in got)  # the attrs dict's value
    assert not any(isinstance(n, tir.Buffer) for n in got)
    skipped, want = [], []
    pre_order_visit(func, lambda n: skipped.append(n) or not isinstance(n, tir.BlockRealize))
    _reference_walk(func, lambda n: want.append(n) or not isinstance(n, tir.BlockRealize), None)
    assert all(a is b for a, b in zip(skipped, want)) and len(skipped) == len(want)
    assert not any(isinstance(n, tir.Block) for n in skipped)


def test_vars_used_remembered_per_node_and_a_new_set_each_time():
    # vars_used remembers its answer per (immutable) node: asked again, the same answer; a node
    # built from it answers its own variables; the caller's set is its own to change
    from minitvm.tir.analysis import uses_var, vars_used
    from minitvm.tir.functor import substitute

    i, j, k = tir.Var("i", "int32"), tir.Var("j", "int32"), tir.Var("k", "int32")
    e = i * 4 + j
    first = vars_used(e)
    assert first == {id(i), id(j)}
    first.add(id(k))  # (split_host_device adds buffer data variables to its set)
    assert vars_used(e) == {id(i), id(j)} and not uses_var(e, k)
    swapped = substitute(e, {j: k})
    assert vars_used(swapped) == {id(i), id(k)} and uses_var(swapped, k) and not uses_var(swapped, j)
    assert vars_used(e) == {id(i), id(j)}
    assert vars_used(i) == {id(i)} and vars_used(tir.const(3, "int32")) == set()
    assert vars_used((e, k)) == {id(i), id(j), id(k)}
    body = _two_blocks().body
    loops = [s for s, _ in walk_stmts(body) if isinstance(s, For)]
    assert all(uses_var(body, lp.loop_var) for lp in loops) and uses_var(loops[0], loops[0].loop_var)
    assert not uses_var(loops[0].body, loops[2].loop_var)  # (B's i loop does not hold C's)


def test_vars_used_walks_a_node_once(monkeypatch):
    from minitvm.tir import analysis

    walks = []
    real = analysis.post_order_visit
    monkeypatch.setattr(analysis, "post_order_visit", lambda n, f: walks.append(n) or real(n, f))
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    e = i * 4 + j
    assert analysis.vars_used(e) == analysis.vars_used(e) == {id(i), id(j)}
    assert analysis.uses_var(e, j) and analysis.vars_used(i) == {id(i)}
    assert walks == [e]  # one walk of e; a variable needs none
