"""index_bounds / range_bounds and their Python-int twins (the stage-pipeline check's fast path)."""

import minitvm
from minitvm import tir
from minitvm.tir.expr import Cast, FloorDiv, IntImm, Range
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


def test_widening_integer_casts_keep_the_bounds_of_their_value():
    """``int64(p // 28) + r`` (a flat-pixel convolution's input row) over a group of pixels is
    bounded by the group's rows, as without the cast; a narrowing cast (which may wrap) or a cast
    to float bounds nothing."""
    g, p, r = tir.Var("g", "int64"), tir.Var("p", "int64"), tir.Var("r", "int64")
    c = lambda v: tir.const(v, "int64")  # noqa: E731
    ana = minitvm.arith.Analyzer()
    ranges = {id(p): (c(0), c(55)), id(r): (c(0), c(2))}
    row = Cast("int64", FloorDiv(g * 56 + p, c(28))) + r
    lo, hi = index_bounds(row, ranges)
    assert ana.can_prove_equal(lo, g * 2) and ana.can_prove_equal(hi, g * 2 + 3), (lo, hi)
    i = tir.Var("i", "int32")
    wide = {id(i): (tir.const(0, "int32"), tir.const(9, "int32"))}
    assert _ints(index_bounds(Cast("int64", i), wide)) == (0, 9)
    assert index_bounds(Cast("int8", i), wide) is None
    assert index_bounds(Cast("float32", i), wide) is None
