"""The dataflow pattern language (TVM's ``relax.dpl``): describe the expressions a rewrite
looks for as a pattern, and let :func:`rewrite_call` find and replace them::

    from minitvm.relax.dpl import is_op, wildcard, rewrite_call

    a, b, c = wildcard(), wildcard(), wildcard()
    mul_add = is_op("relax.add")(is_op("relax.multiply")(a, b), c)
    new_main = rewrite_call(mul_add, lambda expr, m: relax.op.ewise_fma(m[a], m[b], m[c]), mod["main"])

minitvm has the expression patterns, ``match`` / ``extract_matched_expr`` and ``rewrite_call``;
TVM's ``PatternContext`` / ``rewrite_bindings`` (patterns over several bindings at once) and
``PatternMatchingRewriter`` are not here.
"""

from .pattern import *  # noqa: F403
from .pattern import __all__ as _pattern_all
from .rewrite import get_var2val, rewrite_call

__all__ = [*_pattern_all, "rewrite_call", "get_var2val"]
