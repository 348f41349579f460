"""Constants compare by their bytes: same-shaped weights that differ in their first elements are
told apart without a digest of all their bytes (EliminateCommonSubexpr compares every pair of
same-shaped weights of a model), and the digest and the bytes still decide the rest."""

from __future__ import annotations

import numpy as np

from minitvm import relax
from minitvm.ir.structural import structural_equal
from minitvm.relax.expr import ConstantData


def _weights(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((64, 64, 3, 3)).astype("float32")


def test_weights_differing_at_the_start_are_unequal_without_a_digest():
    a, b = ConstantData(_weights(0)), ConstantData(_weights(1))
    assert a != b
    assert not hasattr(a, "_digest") and not hasattr(b, "_digest")  # no pass over all the bytes


def test_weights_differing_only_at_the_end_are_unequal():
    w = _weights(2)
    other = w.copy()
    other[-1, -1, -1, -1] += 1.0
    a, b = ConstantData(w), ConstantData(other)
    assert a != b
    assert hasattr(a, "_digest")  # the heads agree: the digest told them apart


def test_equal_weights_are_equal_and_so_are_their_constants():
    w = _weights(3)
    w[0, 0, 0, 0] = np.nan  # compared as bytes: the same NaN is the same constant
    a, b = ConstantData(w), ConstantData(w.copy())
    assert a == b and hash(a) == hash(b)
    assert structural_equal(relax.const(w), relax.const(w.copy()))
    assert not structural_equal(relax.const(w), relax.const(_weights(4)))
    assert not structural_equal(relax.const(w), relax.const(w.astype("float64")))
