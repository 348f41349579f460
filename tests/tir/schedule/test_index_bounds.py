"""index_bounds / range_bounds and their Python-int twins (the stage-pipeline check's fast path)."""

from minitvm import tir
from minitvm.tir.expr import IntImm, Range
from minitvm.tir.schedule.shared_analyses import index_bounds, int_index_bounds, int_range_bounds, range_bounds


def _ints(bounds):
    return None if bounds is None else tuple(b.value if isinstance(b, IntImm) else b for b in bounds)


def test_int_bounds_match_the_expression_bounds_when_all_are_numbers():
    i, j, k = tir.Var("i"), tir.Var("j"), tir.Var("k")
    c = tir.const
    ranges = {id(i): (c(0), c(7)), id(j): (c(2), c(5)), id(k): (c(3), c(3))}
    exprs = [i * 4 + j, i - j, j * -3 + 1, (i * 4 + j) // 3, (i + j) % 4, k % 4, tir.Min(i, j) + tir.Max(i, j),
             i * 16 - (j // 2) * 2]
    for e in exprs:
        want = index_bounds(e, ranges)
        got = int_index_bounds(e, ranges)
        assert got is not None, e
        if isinstance(want[0], IntImm) and isinstance(want[1], IntImm):
            assert got == _ints(want), e
        # (k % 4 with k at one point: the expression bounds keep ``k % 4``, the ints know it is 3)
    assert int_index_bounds(k % 4, ranges) == (3, 3)


def test_int_bounds_give_up_where_a_bound_is_not_a_number():
    i, n = tir.Var("i"), tir.Var("n")
    c = tir.const
    assert int_index_bounds(i + n, {id(i): (c(0), c(7))}) is None  # n ranges over nothing known
    assert int_index_bounds(i * n, {id(i): (c(0), c(7)), id(n): (c(1), c(2))}) is None  # not linear
    assert int_index_bounds(i, {id(i): (c(0), n)}) is None


def test_int_range_bounds_substitute_the_bindings():
    v, i, j = tir.Var("v"), tir.Var("i"), tir.Var("j")
    c = tir.const
    ranges = {id(i): (c(0), c(3)), id(j): (c(0), c(15))}
    rng = Range(v * 2, c(2))
    bind_expr = {v: i * 16 + j}
    want = range_bounds(rng, ranges, bind_expr)
    assert int_range_bounds(rng, ranges, {id(v): i * 16 + j}) == _ints(want) == (0, 127)
