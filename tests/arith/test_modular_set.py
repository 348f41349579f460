"""Analyzer.modular_set (TVM's modular set analysis): every value of the expression is
coeff * k + base.  Checked by evaluating the expressions on many seeded variable values, and
on TVM's own documented cases."""

import numpy as np

from minitvm import tir
from minitvm.arith import Analyzer, ConstIntBound, ModularSet
from minitvm.tir.functor import substitute

x, y, z = tir.Var("x", "int32"), tir.Var("y", "int32"), tir.Var("z", "int32")


def _values(expr, n=200, nonneg=False):
    rng = np.random.default_rng(3)
    lo = 0 if nonneg else -50
    out = []
    for a, b in rng.integers(lo, 50, size=(n, 2)):
        v = Analyzer().simplify(substitute(expr, {x: tir.IntImm("int32", int(a)), y: tir.IntImm("int32", int(b))}))
        out.append(v.value)
    return np.array(out)


def test_claims_hold_on_random_values():
    cases = [x * 6 + y * 4 + 3, (x * 4 + 2) * (y * 6 + 1), tir.floormod(x * 128 + y * 4, 256),
             tir.floordiv(x * 4 + 2, 2), tir.min(x * 3, y * 9), tir.max(x * 3 + 1, y * 9 + 4),
             (x * 12 + 1) - (y * 21 + 2), tir.floormod(x * 4 + 3, 8), tir.Let(z, x * 10, z + 1)]
    for expr in cases:
        m = Analyzer().modular_set(expr)
        assert m.coeff > 1, expr  # each case says something
        assert np.all((_values(expr) - m.base) % m.coeff == 0), (expr, m)


def test_tvm_documented_values():
    ana = Analyzer()
    assert ana.modular_set(x * 6 + y * 4) == ModularSet(2, 0)
    assert ana.modular_set((x * 4 + 2) * (y * 6 + 1)) == ModularSet(4, 2)
    assert ana.modular_set(tir.Select(x > 0, x * 3 + 1, y * 9 + 2)) == ModularSet(1, 0)
    assert ana.modular_set((x * 16 + y * 4) & 31) == ModularSet(4, 0)
    assert ana.modular_set(tir.IntImm("int32", 7)) == ModularSet(0, 7)
    # truncating division keeps the residue only when the dividend is known non-negative
    assert ana.modular_set(tir.truncdiv(x * 4 + 2, 2)) == ModularSet(1, 0)
    ana.update(x, ConstIntBound(0, 100))
    assert ana.modular_set(tir.truncdiv(x * 4 + 2, 2)) == ModularSet(2, 1)


def test_bindings_and_constraints():
    ana = Analyzer()
    ana.bind(y, x * 4 + 1)
    assert ana.modular_set(1 - y) == ModularSet(4, 0)
    a, b = tir.Var("a", "int32"), tir.Var("b", "int32")
    with ana.constraint_scope(tir.truncmod(b, 4) == 2):
        assert ana.modular_set(b + 1) == ModularSet(4, 3)
        with ana.constraint_scope(tir.truncmod(a, 2) == 1):
            assert ana.modular_set(b + a * 2) == ModularSet(4, 0)
        assert ana.modular_set(b + a * 2) == ModularSet(2, 0)
    assert ana.modular_set(b + 1) == ModularSet(1, 0)
    with ana.constraint_scope(tir.truncmod(a, 3) == 2):
        with ana.constraint_scope(tir.truncmod(a, 5) == 3):
            with ana.constraint_scope(tir.truncmod(a, 7) == 2):
                m = ana.modular_set(a)
    assert m == ModularSet(105, 23) and 23 % 3 == 2 and 23 % 5 == 3 and 23 % 7 == 2
