"""PatternMatchingRewriter (``@R.rewriter``): rewrite rules from a pattern function and a
replacement function, composed with ``|``, applied to functions, modules and as a pass."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import structural_equal
from minitvm.relax.dpl import PatternMatchingRewriter, is_op, wildcard
from minitvm.script import ir as I
from minitvm.script import relax as R


@R.rewriter
class DoubleAsMultiply:
    @R.function
    def pattern(A: R.Tensor([4], "float32")):
        return A + A

    @R.function
    def replacement(A: R.Tensor([4], "float32")):
        return DoubleAsMultiply.times_two(A)

    @R.function(private=True)
    def times_two(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
        return A * R.const(2.0, "float32")


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor([4], "float32"), y: R.Tensor([8], "float32")):
        a = x + x      # matches
        b = y + y      # a (8,) tensor: the parameter's struct info refuses it
        c = R.sum(b) + a
        return c


def _run(mod, *args):
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    return vm["main"](*[minitvm.runtime.tensor(a) for a in args]).numpy()


def test_rewrite_adds_the_subroutine_and_computes_the_same():
    after = DoubleAsMultiply(Before)
    assert "times_two" in after and "times_two" not in Before
    called = [b.value.op for b in after["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    assert called[0] is after.get_global_var("times_two")
    assert sum(isinstance(op, minitvm.ir.GlobalVar) for op in called) == 1  # b = y + y kept
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(4).astype("float32"), rng.standard_normal(8).astype("float32")
    np.testing.assert_allclose(_run(after, x, y), (y + y).sum() + x * 2, rtol=1e-5)
    # as a pass too, and a second application finds nothing more
    again = minitvm.transform.Sequential([DoubleAsMultiply])(Before)
    assert structural_equal(again, after)
    assert DoubleAsMultiply(after) is after


def test_from_pattern_and_composition():
    x = wildcard()
    to_exp = PatternMatchingRewriter.from_pattern(is_op("relax.negative")(x), lambda e, m: relax.op.exp(m[x]))
    both = DoubleAsMultiply | to_exp

    @R.function
    def f(a: R.Tensor([4], "float32")):
        b = R.negative(a)
        c = b + b
        return c

    out = both(f)
    ops = [b.value.op for b in out.body.blocks[0].bindings]
    assert ops[0].name == "relax.exp" and isinstance(ops[1], minitvm.ir.GlobalVar)


def test_refusals():
    with pytest.raises(KeyError, match="replacement"):
        @R.rewriter
        class NoReplacement:
            @R.function
            def pattern(A: R.Tensor([4], "float32")):
                return A

    with pytest.raises(ValueError, match="same signature"):
        @R.rewriter
        class Mismatch:
            @R.function
            def pattern(A: R.Tensor([4], "float32")):
                return A

            @R.function
            def replacement(A: R.Tensor([8], "float32")):
                return A

    with pytest.raises(TypeError, match="relax.Function or an IRModule"):
        DoubleAsMultiply(3)
