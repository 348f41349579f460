"""TIR passes: the lowering pipeline from scheduled TensorIR to code generators' input."""

from .function_pass import PrimFuncPass, prim_func_pass

__all__ = ["PrimFuncPass", "prim_func_pass"]
