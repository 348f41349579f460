"""The dataflow pattern language (TVM's ``relax.dpl``): describe the expressions a rewrite
looks for as a pattern, and let :func:`rewrite_call` find and replace them::

    from minitvm.relax.dpl import is_op, wildcard, rewrite_call

    a, b, c = wildcard(), wildcard(), wildcard()
    mul_add = is_op("relax.add")(is_op("relax.multiply")(a, b), c)
    new_main = rewrite_call(mul_add, lambda expr, m: relax.op.ewise_fma(m[a], m[b], m[c]), mod["main"])

Patterns over several bindings at once, with use constraints, are a ``PatternContext`` and
``rewrite_bindings``::

    with PatternContext() as ctx:
        mm = is_op("relax.matmul")(x, w)
        out = is_op("relax.add")(mm, b)
        mm.only_used_by(out)
    new_main = rewrite_bindings(ctx, lambda matchings, bindings: {...}, mod["main"])

A piece of a block of any length -- the bindings on the paths from one match to another,
each matching ``path`` -- is ``is_region`` (a minitvm addition; Relay had ``dominates``)::

    with PatternContext() as ctx:
        first, last = is_op("relax.matmul")(x, w), is_op("relax.matmul")(wildcard(), v)
        between = is_region(first, last, path=is_op("relax.exp")(wildcard()) | is_op("relax.negative")(wildcard()))
        between.only_used_by(last)    # nothing else reads first or what lies between

minitvm has the expression patterns, ``match`` / ``extract_matched_expr``, ``rewrite_call``,
``PatternContext``, ``rewrite_bindings`` and TVM's ``PatternMatchingRewriter`` (``@R.rewriter``:
a rule from a ``pattern`` and a ``replacement`` function; a rule whose pattern returns a tuple of
independent values matches only an explicit tuple).
"""

from .graph import is_convex
from .pattern import *  # noqa: F403
from .pattern import __all__ as _pattern_all
from .pattern_rewriter import ExprPatternRewriter, OrRewriter, PatternMatchingRewriter
from .rewrite import get_var2val, rewrite_bindings, rewrite_call

__all__ = [*_pattern_all, "rewrite_call", "rewrite_bindings", "get_var2val", "is_convex", "PatternMatchingRewriter",
           "ExprPatternRewriter", "OrRewriter"]
