"""cuBLAS's BYOC pattern table and ``partition_for_cublas`` (TVM's ``relax.backend.cuda.cublas``).

The patterns are matrix products, with a bias, a ReLU or GELU after it, the right operand
transposed, or a dequantize / scale multiply after it; :func:`_check_matmul` refuses what
cuBLAS cannot run (a symbolic reduction axis, unsupported dtypes, a bias that is not a vector,
batch counts that differ).
"""

from __future__ import annotations

import operator
from functools import reduce
from typing import Any

from ....arith import Analyzer
from ....ir.module import IRModule
from ....tir.expr import IntImm, Var
from ...transform.fuse_ops_by_pattern import FuseOpsByPattern, PatternCheckContext
from ..pattern_registry import get_patterns_with_prefix, register_patterns
from ..patterns import make_matmul_dequantize_pattern, make_matmul_multiply_pattern, make_matmul_pattern
from ..utils import has_leaking_intermediate_variables

__all__ = ["partition_for_cublas"]

_SAME_DTYPE_OK = {"float16", "float32", "int8", "bfloat16"}


def _dtype_ok(lhs: str, rhs: str, out: str) -> bool:
    if lhs == rhs == "float8_e4m3fn":
        return out != "float8_e5m2"
    return lhs == rhs and lhs in _SAME_DTYPE_OK


def _const_int(x: Any) -> bool:
    return isinstance(x, (int, IntImm))


def _check_matmul(context: PatternCheckContext) -> bool:
    """Whether cuBLAS can run the matched product (mirrors TVM's checks)."""
    if has_leaking_intermediate_variables(context):
        return False
    ann = context.annotated_expr
    lhs, rhs, root = ann["lhs"], ann["rhs"], ann["root"]
    if "scale" in ann and "zp" in ann:
        if ann["scale"].struct_info.ndim != 0 or ann["zp"].struct_info.ndim != 0:
            return False
        if ann["zp"].data.numpy()[()].item() != 0.0:
            return False
    ldt, rdt, odt = lhs.struct_info.dtype, rhs.struct_info.dtype, root.struct_info.dtype
    if not _dtype_ok(ldt, rdt, odt):
        return False
    lshape, rshape = list(lhs.struct_info.shape.values), list(rhs.struct_info.shape.values)
    if not _const_int(lshape[-1]):
        return False  # the reduction axis must be known
    if ldt == "int8":
        if int(lshape[-1]) % 4 or not _const_int(rshape[-1]) or int(rshape[-1]) % 4:
            return False  # IGEMM wants multiples of 4
    lb = reduce(operator.mul, lshape[:-2], 1)
    rb = reduce(operator.mul, rshape[:-2], 1)
    if "bias" in ann:
        if ldt == "int8":
            return False
        bb = reduce(operator.mul, list(ann["bias"].struct_info.shape.values)[:-1], 1)
        if not _const_int(bb) or int(bb) > 1:
            return False  # a bias vector only
    analyzer = Analyzer()
    return (isinstance(lb, Var) or isinstance(rb, Var) or analyzer.can_prove_equal(lb, rb)
            or (analyzer.can_prove(lb >= 1) and analyzer.can_prove(rb == 1)))


def _register() -> None:
    table = []
    for transposed in (False, True):
        prefix = "cublas.matmul_transposed" if transposed else "cublas.matmul"
        table.append((prefix, *make_matmul_pattern(transposed_rhs=transposed), _check_matmul))
        table.append((prefix + "_bias", *make_matmul_pattern(with_bias=True, transposed_rhs=transposed),
                      _check_matmul))
        for act in ("relu", "gelu"):
            table.append((f"{prefix}_bias_{act}", *make_matmul_pattern(
                with_bias=True, activation=f"relax.nn.{act}", transposed_rhs=transposed), _check_matmul))
    table.append(("cublas.matmul_transposed_dequantize", *make_matmul_dequantize_pattern(transposed_rhs=True),
                  _check_matmul))
    table.append(("cublas.matmul_transposed_multiply", *make_matmul_multiply_pattern(transposed_rhs=True),
                  _check_matmul))
    register_patterns(table)  # TVM's order: the later registered is tried first


_register()


def partition_for_cublas(mod: IRModule, bind_constants: bool = False) -> IRModule:
    """``mod`` with what cuBLAS runs grouped into functions annotated ``Codegen="cublas"``."""
    return FuseOpsByPattern(get_patterns_with_prefix("cublas"), bind_constants=bind_constants,
                            annotate_codegen=True)(mod)
