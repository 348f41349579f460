"""The arithmetic simplifier: index expressions from schedules come out readable."""

import random

import pytest

from minitvm import tir
from minitvm.arith import Analyzer, ConstIntBound, simplify
from minitvm.ir import assert_structural_equal
from minitvm.tir import Add, Mul, Range, Sub, Var, floordiv, floormod

C = tir.const


def ranged(**extents):
    """Variables named by the keywords, and an analyzer knowing ``0 <= v < extent``."""
    ana = Analyzer()
    variables = []
    for name, extent in extents.items():
        var = Var(name, "int32")
        ana.bind(var, Range.from_min_extent(0, extent))
        variables.append(var)
    return ana, variables


def check(ana, expr, expected):
    assert_structural_equal(ana.simplify(expr), tir.convert(expected))


# -- linear combinations ---------------------------------------------------------------------


def test_flattened_index_loses_unit_factor_and_zero():
    ana, (i, j) = ranged(i=64, j=128)
    # raw nodes, so nothing is folded while building: (i * 128 + j) * 1 + 0
    flat = Add(Mul(Add(Mul(i, C(128)), j), C(1)), C(0))
    check(ana, flat, Add(Mul(i, C(128)), j))


def test_like_terms_collect_and_constants_fold():
    ana, (i, j) = ranged(i=8, j=8)
    check(ana, Sub(Add(Add(Add(i, j), i), C(3)), C(3)), Add(Mul(i, C(2)), j))
    check(ana, Sub(Add(i, j), i), j)
    check(ana, Mul(Add(i, C(2)), C(4)), Add(Mul(i, C(4)), C(8)))


def test_terms_keep_first_appearance_order():
    ana, (i, j, k) = ranged(i=4, j=4, k=4)
    check(ana, Add(Add(j, Mul(i, C(4))), k), Add(Add(j, Mul(i, C(4))), k))
    # nested sums flatten in reading order: (i * 4 + j) * 4 + k
    check(ana, Add(Mul(Add(Mul(i, C(4)), j), C(4)), k), Add(Add(Mul(i, C(16)), Mul(j, C(4))), k))


def test_negative_terms_become_subtractions():
    ana, (i, j) = ranged(i=4, j=4)
    check(ana, Add(Mul(j, C(-1)), i), Sub(i, j))
    check(ana, Sub(C(16), Add(i, C(1))), Sub(C(15), i))
    check(ana, Sub(Add(i, C(1)), C(3)), Sub(i, C(2)))


def test_float_math_is_not_reassociated():
    x = Var("x", "float32")
    expr = tir.Add(tir.Add(x, tir.const(1.0)), tir.const(2.0))
    assert_structural_equal(simplify(expr), expr)
    assert_structural_equal(simplify(x * tir.const(1.0)), x)


# -- division ----------------------------------------------------------------------------------


def test_split_index_divides_back_to_its_parts():
    ana, (i0, i1) = ranged(i0=32, i1=4)
    check(ana, floordiv(i0 * 4 + i1, 4), i0)
    check(ana, floormod(i0 * 4 + i1, 4), i1)
    check(ana, floordiv(i0 * 4 + i1 + 4, 4), i0 + 1)


def test_unbounded_remainder_keeps_the_division():
    ana = Analyzer()
    i0, i1 = Var("i0"), Var("i1")
    ana.bind(i0, Range.from_min_extent(0, 32))
    # nothing is known about i1: floordiv(i0*4 + i1, 4) == i0 + floordiv(i1, 4)
    check(ana, floordiv(i0 * 4 + i1, 4), i0 + tir.FloorDiv(i1, tir.const(4)))
    check(ana, floormod(i0 * 4 + i1, 4), tir.FloorMod(i1, tir.const(4)))


def test_fused_loop_divides_into_original_indices():
    ana, (f,) = ranged(f=128)
    check(ana, floordiv(f, 16), tir.FloorDiv(f, tir.const(16)))
    check(ana, floormod(f, 16), tir.FloorMod(f, tir.const(16)))
    ana, (i, j) = ranged(i=8, j=16)
    check(ana, floordiv(i * 16 + j, 16), i)
    check(ana, floormod(i * 16 + j, 16), j)


def test_split_of_fused_loop():
    # f = fo * 4 + fi, fused from (i: 8, j: 16): i = f // 16, j = f % 16
    ana, (fo, fi) = ranged(fo=32, fi=4)
    check(ana, floordiv(fo * 4 + fi, 16), tir.FloorDiv(fo, tir.const(4)))
    check(ana, floormod(fo * 4 + fi, 16), tir.FloorMod(fo, tir.const(4)) * 4 + fi)


def test_division_by_one_and_whole_range_in_one_quotient():
    ana, (i,) = ranged(i=4)
    x = Var("x")
    check(ana, tir.FloorDiv(x, tir.const(1)), x)
    check(ana, tir.FloorMod(x, tir.const(1)), 0)
    check(ana, tir.FloorDiv(i, tir.const(4)), 0)
    check(ana, tir.FloorMod(i + 8, tir.const(4)), i)


def test_truncating_division_of_nonnegative_values_simplifies_like_floor():
    ana, (i0, i1) = ranged(i0=32, i1=4)
    check(ana, tir.truncdiv(i0 * 4 + i1, 4), i0)
    check(ana, tir.truncmod(i0 * 4 + i1, 4), i1)
    x = Var("x")  # may be negative: truncation differs from floor, keep it
    assert isinstance(Analyzer().simplify(tir.Div(x, tir.const(4))), tir.Div)


# -- min, max, comparisons, choices ----------------------------------------------------------


def test_min_max_with_provable_order():
    ana, (i,) = ranged(i=4)
    check(ana, tir.Min(i, tir.const(4)), i)
    check(ana, tir.Max(i, tir.const(4)), 4)
    check(ana, tir.Min(i * 4 + 3, tir.const(100)), i * 4 + 3)
    x = Var("x")
    check(ana, tir.Min(x, x), x)
    assert isinstance(ana.simplify(tir.Min(i, tir.const(2))), tir.Min)


def test_comparisons_decided_by_bounds():
    ana, (i, j) = ranged(i=128, j=4)
    check(ana, i < 128, True)
    check(ana, i >= 0, True)
    check(ana, i * 4 + j < 512, True)
    check(ana, i > 200, False)
    check(ana, tir.EQ(i * 4 + j - i * 4 - j, tir.const(0)), True)
    undecided = ana.simplify(i < 127)
    assert isinstance(undecided, tir.LT)


def test_logic_and_choices_with_constant_conditions():
    ana, (i,) = ranged(i=4)
    x = Var("x", "float32")
    check(ana, tir.Select(i < 4, x, tir.const(0.0)), x)
    check(ana, tir.Call("float32", "tir.if_then_else", (i >= 4, x, tir.const(0.0))), tir.const(0.0))
    check(ana, tir.And(i < 4, i < 5), True)
    check(ana, tir.Not(tir.LT(i, tir.const(2))), tir.GE(i, tir.const(2)))


# -- bounds and proofs -----------------------------------------------------------------------------


def test_const_int_bound_uses_bindings_and_updates():
    ana, (i, j) = ranged(i=32, j=4)
    bound = ana.const_int_bound(i * 4 + j)
    assert (bound.min_value, bound.max_value) == (0, 127)
    x = Var("x")
    ana.update(x, ConstIntBound(-3, 5))
    assert ana.const_int_bound(x * 2 - 1) == ConstIntBound(-7, 9)
    assert ana.const_int_bound(floormod(x, 4)) == ConstIntBound(0, 3)
    assert ana.const_int_bound(Var("free", "int64")).max_value == ConstIntBound.POS_INF


def test_can_prove():
    ana, (i,) = ranged(i=16)
    assert ana.can_prove(i < 16)
    assert not ana.can_prove(i < 15)
    assert ana.can_prove_equal(floordiv(i * 4 + 3, 4), i)
    assert not ana.can_prove_equal(i, i + 1)
    assert ana.can_prove_greater_equal(i, 0) and ana.can_prove_less(i, 16)


def test_bind_to_an_expression_substitutes_it():
    ana = Analyzer()
    i, v = Var("i"), Var("v")
    ana.bind(i, Range.from_min_extent(0, 8))
    ana.bind(v, i * 2)
    check(ana, floordiv(v, 2), i)


# -- statements ------------------------------------------------------------------------------------


def test_statement_simplify_removes_trivial_control_flow():
    A = tir.decl_buffer((8,), "float32", "A")
    i, j = Var("i"), Var("j")
    store = tir.BufferStore(A, tir.const(1.0), (i,))
    stmt = tir.For(i, tir.const(0), tir.const(8), body=tir.seq(
        tir.IfThenElse(i < 8, store),
        tir.For(j, tir.const(0), tir.const(0), body=tir.BufferStore(A, tir.const(2.0), (j,))),
        tir.For(j, tir.const(3), tir.const(1), body=tir.BufferStore(A, tir.const(3.0), (j,)))))
    expected = tir.For(i, tir.const(0), tir.const(8), body=tir.seq(
        store, tir.BufferStore(A, tir.const(3.0), (tir.const(3),))))
    assert_structural_equal(simplify(stmt), expected)


# -- random differential check: simplification never changes a value ------------------------------


def _evaluate(e, env):
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    a, b = _evaluate(e.a, env), _evaluate(e.b, env)
    return {tir.Add: lambda: a + b, tir.Sub: lambda: a - b, tir.Mul: lambda: a * b,
            tir.FloorDiv: lambda: a // b, tir.FloorMod: lambda: a % b,
            tir.Min: lambda: min(a, b), tir.Max: lambda: max(a, b)}[type(e)]()


def _random_expr(rng, variables, depth):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(variables) if rng.random() < 0.7 else tir.const(rng.randint(-5, 9))
    kind = rng.choice(["add", "sub", "mul", "div", "mod", "min", "max"])
    a = _random_expr(rng, variables, depth - 1)
    if kind in ("mul", "div", "mod"):
        c = tir.const(rng.choice([1, 2, 3, 4, 8, 16]))
        return {"mul": tir.Mul, "div": tir.FloorDiv, "mod": tir.FloorMod}[kind](a, c)
    b = _random_expr(rng, variables, depth - 1)
    return {"add": tir.Add, "sub": tir.Sub, "min": tir.Min, "max": tir.Max}[kind](a, b)


@pytest.mark.parametrize("seed", range(6))
def test_simplify_preserves_values(seed):
    rng = random.Random(seed)
    ranges = {"i": (0, 5), "j": (0, 4), "k": (0, 16), "n": (-6, 12)}  # n may be negative
    ana = Analyzer()
    variables = []
    for name, (lo, extent) in ranges.items():
        variables.append(Var(name))
        ana.bind(variables[-1], Range.from_min_extent(lo, extent))
    for _ in range(60):
        expr = _random_expr(rng, variables, 4)
        simple = ana.simplify(expr)
        for _ in range(8):
            env = {name: rng.randrange(lo, lo + extent) for name, (lo, extent) in ranges.items()}
            assert _evaluate(simple, env) == _evaluate(expr, env), (expr, simple, env)


def test_constraint_scope_teaches_variable_bounds():
    ana = Analyzer()
    i, n = Var("i"), Var("n")
    ana.bind(i, Range.from_min_extent(0, 64))
    ana.bind(n, Range.from_min_extent(1, 16))
    with ana.constraint_scope(tir.And(i < n, 4 <= i)):
        assert ana.const_int_bound(i) == ConstIntBound(4, 15)
        assert ana.can_prove(i < 16)
    assert ana.const_int_bound(i) == ConstIntBound(0, 63)
    with ana.constraint_scope(i * 2 < 8):  # not about a lone variable: nothing learned
        assert ana.const_int_bound(i) == ConstIntBound(0, 63)


def test_fused_then_flattened_index_returns_to_the_fused_variable():
    ana, (f, a, b) = ranged(f=32, a=2, b=2)
    # (f // 4) * 16 + (f % 4) * 4 + a * 2 + b, as flattening a fused-and-split loop gives
    index = Add(Add(Add(Mul(tir.FloorDiv(f, C(4)), C(16)), Mul(tir.FloorMod(f, C(4)), C(4))),
                    Mul(a, C(2))), b)
    check(ana, index, Add(Add(Mul(f, C(4)), Mul(a, C(2))), b))
    x = Var("x")
    check(ana, Add(Mul(tir.FloorDiv(x, C(8)), C(8)), tir.FloorMod(x, C(8))), x)


def test_flattened_reshape_index_returns_to_the_copy_index():
    # [8, 32, 13, 13] -> [8, 5408] over a loop fused and split by 16: flattening writes each
    # source index from its own simplified form, so the remainders by 13 and by 169 are taken
    # of different (congruent) expressions; the sum is still the contiguous index f * 16 + v
    ana, (f, v) = ranged(f=2704, v=16)
    x = Add(Mul(f, C(16)), v)
    within = Add(Mul(floormod(f, C(338)), C(16)), v)  # x % 5408, as the simplifier writes it
    index = Add(Add(Add(Mul(floordiv(f, C(338)), C(5408)), Mul(floordiv(within, C(169)), C(169))),
                    Mul(floordiv(floormod(x, C(169)), C(13)), C(13))), floormod(within, C(13)))
    check(ana, index, x)


def test_division_pairs_with_a_remainder_only_when_congruent():
    ana, (i, j) = ranged(i=40, j=40)
    # (i % 12) // 4 * 4 + (i + 8) % 4: i + 8 and i % 12 agree modulo 4, so this is i % 12
    check(ana, Add(Mul(floordiv(floormod(i, C(12)), C(4)), C(4)), floormod(Add(i, C(8)), C(4))),
          floormod(i, C(12)))
    rng = random.Random(0)
    for shift in (1, 2, 6):  # not congruent modulo 4: values must survive
        expr = Add(Mul(floordiv(floormod(i, C(12)), C(4)), C(4)), floormod(Add(i, C(shift)), C(4)))
        simple = ana.simplify(expr)
        for _ in range(30):
            env = {"i": rng.randrange(40), "j": rng.randrange(40)}
            assert _evaluate(simple, env) == _evaluate(expr, env), (expr, simple)
