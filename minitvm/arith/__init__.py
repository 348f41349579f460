"""Integer arithmetic analysis: bounds, proofs and the simplifier (TVM's ``tvm.arith``)."""

from .analyzer import Analyzer
from .int_bound import ConstIntBound
from .linear import LinearSum
from .modular_set import ModularSet
from .stmt_simplify import StmtSimplifier, is_no_op, no_op, simplify

__all__ = ["Analyzer", "ConstIntBound", "LinearSum", "ModularSet", "StmtSimplifier", "simplify", "is_no_op",
           "no_op"]
